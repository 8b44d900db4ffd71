#pragma once

#include "core/textinputs.h"

#include <string_view>
#include <vector>

namespace oomlens::text {

class TextLines;

// PYTORCH_CUDA_ALLOC_CONF (and the HIP / generic spellings) as set by `export`, an env prefix on a
// command line, os.environ, or torch.cuda.memory._set_allocator_settings. The OOM message's own
// "try setting PYTORCH_CUDA_ALLOC_CONF=..." hint is advice, not a setting, and is ignored.
std::vector<AllocConfSetting> findAllocConfs(const TextLines& lines);

// "expandable_segments:True, max_split_size_mb:128" -> options; lists like
// roundup_power2_divisions:[256:1,>:4] are kept whole as one value.
void parseAllocConfOptions(std::string_view raw, AllocConfSetting& setting);

} // namespace oomlens::text
