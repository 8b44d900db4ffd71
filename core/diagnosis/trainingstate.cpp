#include "core/diagnosis/trainingstate.h"

#include "core/optimizerknowledge.h"
#include "core/strings.h"
#include "core/units.h"

#include <algorithm>
#include <cctype>
#include <optional>
#include <string_view>
#include <unordered_map>
#include <unordered_set>

namespace oomlens {

namespace {

// Module.half()/.bfloat16(), Tensor.half(), and helpers named for a 16-bit conversion.
bool namesHalf(std::string_view name)
{
    const std::string text = lowercase(name);
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
            if (!weights && autocast.empty() && lowercase(name).find("autocast") != std::string::npos)
                autocast = std::string(name);
        }
    }
    if (!autocast.empty()) {
        result.precision = WeightPrecision::Full;
        result.evidence = "the forward pass runs under autocast (" + autocast + "), which casts fp32 weights";
    }
    return result;
}

namespace {

// torch.optim's classes by the name PyTorch gives their step annotation or by their module file,
// with the tensors each keeps per parameter (optimizerknowledge.h). SGD's momentum buffer counts only
// once seen: momentum is off by default.
std::optional<OptimizerKind> known(std::string_view name, std::string evidence)
{
    const OptimizerFacts* facts = torchOptimizer(name);
    if (!facts)
        return std::nullopt;
    OptimizerKind kind;
    kind.name = std::string(facts->label);
    kind.stateTensors = facts->moments;
    kind.evidence = std::move(evidence);
    kind.momentumOnlyIfSeen = facts->momentumOnly;
    return kind;
}

// "Optimizer.step#SGD.step" -> "SGD"
std::string_view annotatedOptimizer(std::string_view label)
{
    constexpr std::string_view prefix = "Optimizer.step#";
    if (label.substr(0, prefix.size()) != prefix)
        return {};
    label.remove_prefix(prefix.size());
    return label.substr(0, label.find('.'));
}

// ".../torch/optim/sgd.py" -> "sgd"
std::string_view optimModule(std::string_view file)
{
    for (std::string_view marker : { std::string_view("torch/optim/"), std::string_view("torch\\optim\\") }) {
        const size_t at = file.rfind(marker);
        if (at == std::string_view::npos)
            continue;
        std::string_view rest = file.substr(at + marker.size());
        if (rest.size() > 3 && rest.substr(rest.size() - 3) == ".py"
            && rest.find_first_of("/\\") == std::string_view::npos)
            return rest.substr(0, rest.size() - 3);
    }
    return {};
}

} // namespace

OptimizerKind optimizerKind(const Snapshot& snapshot, const DeviceAnalysis& device)
{
    for (const Annotation& annotation : snapshot.annotations) {
        for (const auto& [key, value] : annotation.fields) {
            if (key != "name")
                continue;
            if (auto kind = known(annotatedOptimizer(value), "the " + value + " annotation"))
                return *kind;
        }
    }
    if (!snapshot.frames || !snapshot.strings)
        return {};
    std::unordered_set<uint32_t> seen;
    for (const Allocation& allocation : device.allocations) {
        if (allocation.phase != Phase::Optimizer || !allocation.stack.isValid()
            || allocation.stack.value >= snapshot.frames->stackCount())
            continue;
        if (seen.size() >= maxStacksScanned)
            break;
        if (!seen.insert(allocation.stack.value).second)
            continue;
        for (const FrameId id : snapshot.frames->stack(allocation.stack)) {
            const std::string_view file = snapshot.strings->get(snapshot.frames->frame(id).filename);
            const std::string_view module = optimModule(file);
            if (module.empty() || module == "optimizer")
                continue;
            if (auto kind = known(module, "frames in torch/optim/" + std::string(module) + ".py"))
                return *kind;
        }
    }
    return {};
}

bool noteMomentumBeingCreated(OptimizerKind& kind, const TracebackFrame& failingFrame)
{
    if (!kind.momentumOnlyIfSeen)
        return false;
    const std::string_view file = failingFrame.filename;
    const std::string_view code = failingFrame.code;
    const bool inSgd = optimModule(file) == "sgd";
    const bool makesBuffer = code.find("clone(") != std::string_view::npos
        || code.find("empty_like(") != std::string_view::npos || code.find("momentum_buffer") != std::string_view::npos;
    if (!inSgd || !makesBuffer)
        return false;
    kind.momentumOnlyIfSeen = false;
    kind.evidence += "; the traceback fails making its momentum buffers (" + failingFrame.function + ": "
        + std::string(code) + ")";
    return true;
}

bool updateReadsExistingState(const TracebackFrame& failingFrame)
{
    const std::string_view module = optimModule(failingFrame.filename);
    if (module.empty() || module == "optimizer" || failingFrame.code.empty())
        return false;
    const std::string_view function = failingFrame.function;
    const bool updateMath = function.starts_with("_multi_tensor_") || function.starts_with("_single_tensor_")
        || function.starts_with("_fused_");
    const std::string_view code = failingFrame.code;
    const bool makesState = code.find("zeros_like(") != std::string_view::npos
        || code.find("empty_like(") != std::string_view::npos || code.find("clone(") != std::string_view::npos
        || code.find("momentum_buffer") != std::string_view::npos;
    return updateMath && !makesState;
}

PrecisionEvidence precisionFromStateSizes(const DeviceAnalysis& device, int64_t untilEvent)
{
    std::unordered_set<uint64_t> weightSizes;
    for (const Allocation& allocation : device.allocations) {
        if (allocation.category == Category::Parameters && allocation.liveAfter(untilEvent))
            weightSizes.insert(allocation.requestedSize);
    }
    std::unordered_map<uint64_t, int> stateSizes;
    for (const Allocation& allocation : device.allocations) {
        if (allocation.category == Category::OptimizerState && allocation.liveAfter(untilEvent))
            ++stateSizes[allocation.requestedSize];
    }
    // One buffer twice a weight's size may as well hold two same-width tensors (a flat or fused
    // buffer of both moments): only a size met at least twice (the moments of one parameter, or
    // of parameters alike) reads as a widened copy of that weight.
    uint64_t sameSize = 0;
    uint64_t twiceOnly = 0;
    for (const auto& [size, count] : stateSizes) {
        if (weightSizes.count(size))
            sameSize += size * static_cast<uint64_t>(count);
        else if (count >= 2 && size % 2 == 0 && weightSizes.count(size / 2))
            twiceOnly += size * static_cast<uint64_t>(count);
    }
    PrecisionEvidence result;
    if (twiceOnly > sameSize) {
        result.precision = WeightPrecision::Half;
        result.evidence = "the optimizer's state tensors are twice the size of the weights they belong to (fp32 state "
                          "beside 16-bit weights: the optimizer steps an fp32 master copy)";
    }
    return result;
}

TrainingState projectTrainingState(
    const TrainingStateInputs& inputs, const PrecisionEvidence& precision, const OptimizerKind& optimizer)
{
    const auto band
        = [](const CategoryBytes& bands, Category category) { return bands[static_cast<size_t>(category)]; };
    TrainingState state;
    state.precision = precision;
    state.optimizer = optimizer;
    const uint64_t weights = band(inputs.live, Category::Parameters);
    state.parameters = weights;
    const uint64_t gradients
        = std::max(band(inputs.live, Category::Gradients), band(inputs.peakSeen, Category::Gradients));
    // Gradients have their parameter's dtype; until a backward has finished, assume every parameter trains.
    state.gradientsProjected = !inputs.backwardCompleted && gradients < weights;
    state.gradients = state.gradientsProjected ? weights : gradients;
    const uint64_t moments
        = std::max(band(inputs.live, Category::OptimizerState), band(inputs.peakSeen, Category::OptimizerState));
    state.measuredOptimizerState = moments;
    if (inputs.optimizerStateBuilt) {
        state.optimizerState = moments;
        return state;
    }
    // Each state tensor has its parameter's size: fp32 beside fp32 weights, and fp32 beside the
    // fp32 master copy of 16-bit weights (4 B per 2 B weight), the master itself 2x the 16-bit
    // weights. Adam keeps two; SGD keeps its momentum buffer only when momentum was set, which
    // shows as state already created, else none (the smaller projection keeps a claim sound).
    const bool half = precision.precision == WeightPrecision::Half;
    const uint64_t tensors = optimizer.momentumOnlyIfSeen && moments == 0 ? 0 : optimizer.stateTensors;
    const uint64_t projected = tensors * (half ? 2 * weights : weights);
    state.projectedStateTensors = static_cast<int>(tensors);
    state.optimizerProjected = moments < projected;
    state.optimizerState = std::max(moments, projected);
    state.masterWeights = half ? 2 * weights : 0;
    if (precision.precision == WeightPrecision::Unknown)
        state.ifHalfBytes
            = weights + std::max(gradients, weights) + std::max(moments, 2 * tensors * weights) + 2 * weights;
    return state;
}

std::string TrainingState::text() const
{
    std::string result = "parameters " + formatBytes(parameters) + " + gradients " + formatBytes(gradients)
        + (gradientsProjected ? " (projected)" : "") + " + optimizer state " + formatBytes(optimizerState)
        + (optimizerProjected ? " (projected: " + optimizerStateName() + ")" : "");
    if (masterWeights > 0)
        result += " + fp32 master weights " + formatBytes(masterWeights) + " (projected)";
    return result + " = " + formatBytes(total());
}

std::string TrainingState::optimizerStateName() const
{
    if (optimizer.name.empty())
        return "Adam's two moments";
    const std::string count = optimizer.stateTensors == 1 ? "one state tensor" : "two state tensors";
    return optimizer.name + "'s " + (optimizer.name == "SGD" ? "momentum buffer" : count) + " per parameter, from "
        + optimizer.evidence;
}

std::string TrainingState::assumption() const
{
    if (!projected())
        return {};
    // 4 B of weights and 4 B of gradients (or 2 + 2 + a 4 B master copy), 4 B per state tensor.
    const std::string perParameter = std::to_string(8 + 4 * projectedStateTensors) + " bytes per parameter";
    const std::string kept = optimizer.name.empty() ? std::string("Adam") : optimizer.name;
    switch (precision.precision) {
    case WeightPrecision::Half:
        return precision.evidence + ": " + kept + " keeps fp32 state and an fp32 master copy, " + perParameter;
    case WeightPrecision::Full:
        return precision.evidence + ": fp32 weights, gradients and " + kept + " state, " + perParameter;
    case WeightPrecision::Unknown:
        break;
    }
    return "the frames do not show the weights' precision; projected as fp32 (" + perParameter + ")"
        + (ifHalfBytes > 0 ? "; with 16-bit weights and fp32 master weights it would be " + formatBytes(ifHalfBytes)
                           : std::string());
}

} // namespace oomlens
