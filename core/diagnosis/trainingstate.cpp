#include "core/diagnosis/trainingstate.h"

#include "core/units.h"

#include <algorithm>
#include <cctype>
#include <string_view>
#include <unordered_set>

namespace oomlens {

namespace {

std::string lower(std::string_view text)
{
    std::string result(text);
    std::transform(result.begin(), result.end(), result.begin(), [](unsigned char c) { return std::tolower(c); });
    return result;
}

// Module.half()/.bfloat16(), Tensor.half(), and helpers named for a 16-bit conversion.
bool namesHalf(std::string_view name)
{
    const std::string text = lower(name);
    if (text == "half" || text == "bfloat16")
        return true;
    for (const char* needle : { "bf16", "fp16", "float16" }) {
        if (text.find(needle) != std::string::npos)
            return true;
    }
    return false;
}

// Stacks are shared by many allocations; a few thousand distinct ones are plenty to find a marker.
constexpr size_t maxStacksScanned = 4096;

} // namespace

PrecisionEvidence weightPrecision(const Snapshot& snapshot, const DeviceAnalysis& device)
{
    PrecisionEvidence result;
    if (!snapshot.frames || !snapshot.strings)
        return result;
    std::unordered_set<uint32_t> seen;
    std::string autocast;
    for (const Allocation& allocation : device.allocations) {
        const bool weights = allocation.category == Category::Parameters;
        const bool forward = allocation.phase == Phase::Forward;
        if ((!weights && !(forward && autocast.empty())) || !allocation.stack.isValid()
            || allocation.stack.value >= snapshot.frames->stackCount())
            continue;
        if (seen.size() >= maxStacksScanned)
            break;
        if (!seen.insert(allocation.stack.value * 2 + (weights ? 1 : 0)).second)
            continue;
        for (const FrameId id : snapshot.frames->stack(allocation.stack)) {
            const std::string_view name = snapshot.strings->get(snapshot.frames->frame(id).name);
            if (weights && namesHalf(name)) {
                result.precision = WeightPrecision::Half;
                result.evidence = "the weights were made by " + std::string(name) + "() (16-bit)";
                return result;
            }
            if (!weights && autocast.empty() && lower(name).find("autocast") != std::string::npos)
                autocast = std::string(name);
        }
    }
    if (!autocast.empty()) {
        result.precision = WeightPrecision::Full;
        result.evidence = "the forward pass runs under autocast (" + autocast + "), which casts fp32 weights";
    }
    return result;
}

TrainingState projectTrainingState(const TrainingStateInputs& inputs, const PrecisionEvidence& precision)
{
    const auto band
        = [](const CategoryBytes& bands, Category category) { return bands[static_cast<size_t>(category)]; };
    TrainingState state;
    state.precision = precision;
    const uint64_t weights = band(inputs.live, Category::Parameters);
    state.parameters = weights;
    const uint64_t gradients
        = std::max(band(inputs.live, Category::Gradients), band(inputs.peakSeen, Category::Gradients));
    // Gradients have their parameter's dtype; until a backward has finished, assume every parameter trains.
    state.gradientsProjected = !inputs.backwardCompleted && gradients < weights;
    state.gradients = state.gradientsProjected ? weights : gradients;
    const uint64_t moments
        = std::max(band(inputs.live, Category::OptimizerState), band(inputs.peakSeen, Category::OptimizerState));
    if (inputs.optimizerStateBuilt) {
        state.optimizerState = moments;
        return state;
    }
    // Adam's moments are fp32 beside fp32 weights (2 x 4 B) and beside the fp32 master copy of
    // 16-bit weights (2 x 4 B per 2 B weight), which is itself 2x the 16-bit weights.
    const bool half = precision.precision == WeightPrecision::Half;
    const uint64_t projected = half ? 4 * weights : 2 * weights;
    state.optimizerProjected = moments < projected;
    state.optimizerState = std::max(moments, projected);
    state.masterWeights = half ? 2 * weights : 0;
    if (precision.precision == WeightPrecision::Unknown)
        state.ifHalfBytes = weights + std::max(gradients, weights) + std::max(moments, 4 * weights) + 2 * weights;
    return state;
}

std::string TrainingState::text() const
{
    std::string result = "parameters " + formatBytes(parameters) + " + gradients " + formatBytes(gradients)
        + (gradientsProjected ? " (projected)" : "") + " + optimizer state " + formatBytes(optimizerState)
        + (optimizerProjected ? " (projected: Adam's two moments)" : "");
    if (masterWeights > 0)
        result += " + fp32 master weights " + formatBytes(masterWeights) + " (projected)";
    return result + " = " + formatBytes(total());
}

std::string TrainingState::assumption() const
{
    if (!projected())
        return {};
    switch (precision.precision) {
    case WeightPrecision::Half:
        return precision.evidence + ": Adam keeps fp32 moments and an fp32 master copy, 16 bytes per parameter";
    case WeightPrecision::Full:
        return precision.evidence + ": fp32 weights, gradients and Adam moments, 16 bytes per parameter";
    case WeightPrecision::Unknown:
        break;
    }
    return "the frames do not show the weights' precision; projected as fp32 (16 bytes per parameter)"
        + (ifHalfBytes > 0 ? "; with 16-bit weights and fp32 master weights it would be " + formatBytes(ifHalfBytes)
                           : std::string());
}

} // namespace oomlens
