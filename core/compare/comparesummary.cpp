#include "core/compare/compareparts.h"
#include "core/presentation/labels.h"
#include "core/strings.h"
#include "core/units.h"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

namespace oomlens::compare {

namespace {

// "the backward of step 1", "the optimizer step of step 2", "loading"; the step is left out
// when two windows are compared (it differs by construction).
std::string describeMoment(const ComparedMoment& moment, bool withStep)
{
    const std::string phase = lowercase(phaseLabel(moment.phase));
    if (moment.phase == Phase::Load)
        return phase;
    if (moment.phase == Phase::Unknown)
        return moment.step >= 0 && withStep ? "step " + std::to_string(moment.step) : "an unknown phase";
    if (!withStep || moment.step < 0)
        return "the " + phase;
    return "the " + phase + " of step " + std::to_string(moment.step);
}

// The category that changed most at the peak, when the change is worth a sentence: at least
// 1 MiB (allocator rounding and a few stray buffers move less between two runs of one script).
// Small next to the peak is still said: the peak's percentage follows and gives the scale.
std::string categorySentence(const Comparison& comparison)
{
    const auto& delta = comparison.categoriesDeltaAtPeak;
    const auto largest = std::max_element(
        delta.begin(), delta.end(), [](int64_t x, int64_t y) { return std::llabs(x) < std::llabs(y); });
    const uint64_t change = static_cast<uint64_t>(std::llabs(*largest));
    if (change < MiB)
        return comparison.b.label + " holds about the same at the peak in every category";
    const auto category = static_cast<Category>(largest - delta.begin());
    const std::string name = lowercase(categoryLabel(category));
    if (*largest < 0)
        return comparison.b.label + " cut " + name + " at the peak by " + formatBytes(change);
    return comparison.b.label + " added " + formatBytes(change) + " of " + name + " at the peak";
}

std::string peakSentence(const Comparison& comparison)
{
    const bool withStep = !comparison.windows;
    const std::string from = describeMoment(comparison.a.peak, withStep);
    const std::string to = describeMoment(comparison.b.peak, withStep);
    if (from == to)
        return comparison.windows ? "both peak in " + from : "the peak stays in " + from;
    return "the peak moved from " + from + " to " + to;
}

std::string sizeSentence(const Comparison& comparison)
{
    const uint64_t a = comparison.a.peak.allocatedBytes;
    const uint64_t b = comparison.b.peak.allocatedBytes;
    std::string text = "peak " + formatBytes(a) + " \u2192 " + formatBytes(b);
    if (a > 0) {
        const double percent = 100.0 * (static_cast<double>(b) - static_cast<double>(a)) / static_cast<double>(a);
        // Whole percents, one decimal below 10% so a small change does not read "0%".
        char buffer[32];
        std::snprintf(buffer, sizeof buffer, std::abs(percent) < 9.95 ? "%+.1f%%" : "%+.0f%%", percent);
        text += " (" + std::string(buffer) + ")";
    }
    return text;
}

std::string oomSentence(const Comparison& comparison)
{
    const bool withStep = !comparison.windows;
    const auto& a = comparison.a;
    const auto& b = comparison.b;
    if (a.oom && b.oom)
        return "both ran out of memory (" + a.label + " in " + describeMoment(*a.oom, withStep) + ", " + b.label
            + " in " + describeMoment(*b.oom, withStep) + ")";
    if (a.oom)
        return a.label + " ran out of memory in " + describeMoment(*a.oom, withStep) + ", " + b.label + " did not";
    if (b.oom)
        return b.label + " ran out of memory in " + describeMoment(*b.oom, withStep) + ", " + a.label + " did not";
    return {};
}

std::string survivingSentence(const Comparison& comparison)
{
    if (!comparison.windows || comparison.surviving.empty())
        return {};
    uint64_t repeating = 0;
    for (const SurvivingSite& site : comparison.surviving)
        repeating += site.repeats ? site.bytes : 0;
    std::string text = formatBytes(comparison.survivingBytes) + " allocated in " + comparison.a.label
        + " is still alive after " + comparison.b.label;
    if (repeating > 0)
        text += ", " + formatBytes(repeating) + " of it from sites that keep doing so (a leak)";
    return text;
}

} // namespace

std::string summarize(const Comparison& comparison)
{
    std::string sentence;
    for (const std::string& part : { categorySentence(comparison), peakSentence(comparison), sizeSentence(comparison),
             oomSentence(comparison), survivingSentence(comparison) }) {
        if (part.empty())
            continue;
        sentence += sentence.empty() ? part : "; " + part;
    }
    return sentence;
}

} // namespace oomlens::compare
