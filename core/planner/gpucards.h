#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oomlens::planner {

// A common accelerator and the memory PyTorch reports for it (total_memory, what an OOM
// message calls "total capacity"). The CUDA context comes out of it; the planner counts the
// context in its overhead band.
struct GpuCard
{
    std::string name; // "40GB": the class the table is sorted by
    std::string models; // "A100 40GB"
    uint64_t capacityBytes = 0;
};

// 16, 24, 40, 48, 80, 94 and 141 GB cards, smallest first.
const std::vector<GpuCard>& commonCards();

// A card by class ("40GB", "80gb"), by model ("a100-40gb", "h100", "4090", "l40s"), or a size:
// plain bytes, or a number with GiB/GB/MiB/MB. Empty when the text is none of these.
std::optional<GpuCard> cardFromText(std::string_view text);

} // namespace oomlens::planner
