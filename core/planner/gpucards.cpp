#include "core/planner/gpucards.h"

#include "core/units.h"

#include <algorithm>
#include <cctype>
#include <charconv>
#include <utility>

namespace oomlens::planner {

namespace {

// nvidia-smi's "Total" in MiB for one card of each class (PyTorch's total_memory is the same
// number of bytes): V100 16GB, RTX 4090, A100 40GB (the "39.59 GiB total capacity" of the
// classic OOM message), RTX A6000, H100 SXM, H100 NVL, H200.
constexpr uint64_t mib(uint64_t value)
{
    return value * MiB;
}

std::string lower(std::string_view text)
{
    std::string out;
    for (const char c : text) {
        if (c != ' ' && c != '_')
            out.push_back(static_cast<char>(std::tolower(static_cast<unsigned char>(c))));
    }
    return out;
}

// Other spellings users type for the same classes.
const std::vector<std::pair<std::string, std::string>>& aliases()
{
    static const std::vector<std::pair<std::string, std::string>> table {
        { "v100", "16GB" },
        { "v100-16gb", "16GB" },
        { "t4", "16GB" },
        { "a4000", "16GB" },
        { "4090", "24GB" },
        { "rtx4090", "24GB" },
        { "3090", "24GB" },
        { "rtx3090", "24GB" },
        { "a10", "24GB" },
        { "a10g", "24GB" },
        { "l4", "24GB" },
        { "a100-40gb", "40GB" },
        { "a100-40", "40GB" },
        { "a100", "40GB" },
        { "a6000", "48GB" },
        { "rtxa6000", "48GB" },
        { "a40", "48GB" },
        { "l40s", "48GB" },
        { "l40", "48GB" },
        { "6000ada", "48GB" },
        { "a100-80gb", "80GB" },
        { "a100-80", "80GB" },
        { "h100", "80GB" },
        { "h100-80gb", "80GB" },
        { "h800", "80GB" },
        { "h100-nvl", "94GB" },
        { "h100nvl", "94GB" },
        { "gh200", "94GB" },
        { "h200", "141GB" },
    };
    return table;
}

std::optional<uint64_t> parseSize(std::string_view text)
{
    double value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || value <= 0)
        return std::nullopt;
    const std::string unit = lower(std::string_view(end, static_cast<size_t>(text.data() + text.size() - end)));
    double scale = 0;
    if (unit.empty() || unit == "b")
        scale = 1;
    else if (unit == "gib" || unit == "g")
        scale = static_cast<double>(GiB);
    else if (unit == "gb")
        scale = 1e9;
    else if (unit == "mib" || unit == "m")
        scale = static_cast<double>(MiB);
    else if (unit == "mb")
        scale = 1e6;
    // A size beyond any card (1 PB) is a typo, and beyond 2^64 the conversion is undefined (the fuzz
    // target `plan` found "--card 24e192").
    const double bytes = value * scale;
    if (scale == 0 || !(bytes >= 1) || bytes > 1e15)
        return std::nullopt;
    return static_cast<uint64_t>(bytes);
}

} // namespace

const std::vector<GpuCard>& commonCards()
{
    static const std::vector<GpuCard> cards {
        { "16GB", "V100 16GB, T4, RTX A4000", mib(16160) },
        { "24GB", "RTX 4090, RTX 3090, A10, L4", mib(24564) },
        { "40GB", "A100 40GB", mib(40536) },
        { "48GB", "RTX A6000, A40, L40S", mib(49140) },
        { "80GB", "A100 80GB, H100 80GB", mib(81559) },
        { "94GB", "H100 NVL", mib(95830) },
        { "141GB", "H200", mib(143771) },
    };
    return cards;
}

std::optional<GpuCard> cardFromText(std::string_view text)
{
    std::string wanted = lower(text);
    for (const auto& [alias, name] : aliases()) {
        if (alias == wanted)
            wanted = lower(name);
    }
    for (const GpuCard& card : commonCards()) {
        if (lower(card.name) == wanted)
            return card;
    }
    if (const auto bytes = parseSize(text))
        return GpuCard { formatBytes(*bytes), "a card of " + formatBytes(*bytes), *bytes };
    return std::nullopt;
}

} // namespace oomlens::planner
