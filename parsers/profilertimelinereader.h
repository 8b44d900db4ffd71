#pragma once

#include "core/profilertimeline.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oomlens {

// What torch.profiler (profile_memory=True) writes about memory, judged by content, gzip around
// any of it too:
//   Raw         export_memory_timeline_raw, or export_memory_timeline("x.raw.json"):
//               [[time_us, action, signed bytes, category index], ...]
//   Coalesced   export_memory_timeline("x.json"): [[time_us, ...], [[0, bytes by category...], ...]]
//   ChromeTrace prof.export_chrome_trace: {"traceEvents": [...]} with "[memory]" instant events
//   Html        export_memory_timeline("x.html"): a PNG picture of the plot, no numbers in it
enum class ProfilerFileKind : uint8_t { None, Raw, Coalesced, ChromeTrace, Html };
ProfilerFileKind sniffProfilerFile(std::string_view bytes);

struct ProfilerReadResult
{
    std::vector<ProfilerTimeline> timelines; // one per device (the chrome trace may hold several)
    std::optional<std::string> error; // one clear line when nothing could be read
};

// Reads a file sniffProfilerFile recognised. Never executes anything from the file.
ProfilerReadResult readProfilerFile(std::string_view bytes, const std::string& path);

} // namespace oomlens
