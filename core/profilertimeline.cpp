#include "core/profilertimeline.h"

#include <numeric>

namespace oomlens {

std::string_view profilerCategoryName(ProfilerCategory category)
{
    static constexpr std::array<std::string_view, profilerCategoryCount> names { "PARAMETER", "OPTIMIZER_STATE",
        "INPUT", "TEMPORARY", "ACTIVATION", "GRADIENT", "AUTOGRAD_DETAIL", "None" };
    return names[static_cast<size_t>(category)];
}

Category oomlensCategory(ProfilerCategory category)
{
    switch (category) {
    case ProfilerCategory::Parameter:
        return Category::Parameters;
    case ProfilerCategory::OptimizerState:
        return Category::OptimizerState;
    case ProfilerCategory::Input:
        return Category::Inputs;
    case ProfilerCategory::Temporary:
    case ProfilerCategory::AutogradDetail:
        return Category::Temporaries;
    case ProfilerCategory::Activation:
        return Category::Activations;
    case ProfilerCategory::Gradient:
        return Category::Gradients;
    case ProfilerCategory::None:
        break;
    }
    return Category::Unknown;
}

std::string_view profilerTimelineFormatName(ProfilerTimelineFormat format)
{
    switch (format) {
    case ProfilerTimelineFormat::Raw:
        return "raw";
    case ProfilerTimelineFormat::Coalesced:
        return "json";
    case ProfilerTimelineFormat::ChromeTrace:
        return "chrome_trace";
    }
    return "raw";
}

int64_t ProfilerTimeline::Point::total() const
{
    return std::accumulate(bytes.begin(), bytes.end(), int64_t(0));
}

const ProfilerTimeline::Point* ProfilerTimeline::peak() const
{
    const Point* best = nullptr;
    for (const Point& point : points) {
        if (!best || point.total() > best->total())
            best = &point;
    }
    return best;
}

int64_t ProfilerTimeline::firstTimeUs() const
{
    return points.empty() ? 0 : points.front().timeUs;
}

int64_t ProfilerTimeline::lastTimeUs() const
{
    return points.empty() ? 0 : points.back().timeUs;
}

std::array<uint64_t, categoryCount> toOomlensCategories(const ProfilerCategoryBytes& bytes)
{
    std::array<int64_t, categoryCount> sums {};
    for (int i = 0; i < profilerCategoryCount; ++i)
        sums[static_cast<size_t>(oomlensCategory(static_cast<ProfilerCategory>(i)))] += bytes[static_cast<size_t>(i)];
    std::array<uint64_t, categoryCount> out {};
    for (size_t i = 0; i < out.size(); ++i)
        out[i] = sums[i] > 0 ? static_cast<uint64_t>(sums[i]) : 0;
    return out;
}

} // namespace oomlens
