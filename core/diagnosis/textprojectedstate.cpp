#include "core/diagnosis/textrules.h"

#include "core/diagnosis/catalogue.h"
#include "core/optimizerknowledge.h"
#include "core/units.h"

#include <algorithm>

namespace oomlens::textrules {

namespace {

// Bytes per trainable parameter that training keeps whatever the batch (seed 000), from what the log
// says of the recipe. Where it does not say, the smallest plausible figure is taken, so that a claim
// that the state cannot fit never rests on an assumption:
//   weights and gradients: 4 B each in fp32, 2 B in bf16/fp16 (unknown: 2);
//   Adam/AdamW: two moments shaped like the weights (torch allocates them zeros_like(p)): 8 B for fp32
//     weights, 4 B for pure 16-bit ones, 8 B (fp32) when an fp32 master copy is kept; 8-bit Adam 2 B;
//     Lion one moment; SGD's momentum and Adafactor's factored moments are counted as nothing;
//   master weights: 4 B when 16-bit weights are updated through an fp32 copy.
// No optimizer named: AdamW is assumed (most fine-tuning recipes), and the claim is weaker for it.
struct StatePerParameter
{
    double weights = 0;
    double gradients = 0;
    double optimizer = 0;
    double master = 0;
    bool optimizerAssumed = false;
    bool precisionAssumed = false; // the width is the narrowest, not said
    bool fp32FromAutocast = false; // mixed precision said, the weights' width not: they are fp32
    double total() const { return weights + gradients + optimizer + master; }
};

StatePerParameter statePerParameter(const TrainingRecipe& recipe)
{
    StatePerParameter bytes;
    // Mixed precision (autocast, AMP, Lightning's "16-mixed", the HF Trainer's fp16/bf16 flags) computes
    // in 16 bits over fp32 weights unless the weights were loaded narrower, which the log would say.
    bytes.fp32FromAutocast = recipe.weightPrecision.empty() && recipe.autocast && !recipe.masterWeights;
    bytes.precisionAssumed = recipe.weightPrecision.empty() && !bytes.fp32FromAutocast;
    const bool master = recipe.masterWeights && recipe.weightPrecision != "fp32";
    const double width = recipe.weightPrecision == "fp32" || bytes.fp32FromAutocast ? 4.0 : 2.0;
    bytes.weights = width;
    bytes.gradients = width;
    bytes.master = master ? masterWeightBytes : 0.0;
    const OptimizerFacts* optimizer = optimizerNamed(recipe.optimizer.empty() ? "adamw" : recipe.optimizer);
    bytes.optimizerAssumed = recipe.optimizer.empty();
    const double moment = master ? masterWeightBytes : width;
    const OptimizerVariantFacts* variant = optimizerVariantNamed(recipe.optimizerVariant);
    // SGD's momentum is off by default and a factored moment is too small to matter without the
    // shapes: both count as nothing, so that the claim stays sound.
    if (optimizer && !(variant && variant->stateOnHost) && !optimizer->momentumOnly
        && optimizer->width != MomentWidth::Factored)
        bytes.optimizer = stateBytesPerParameter(*optimizer, optimizer->moments, moment, 0);
    return bytes;
}

std::string optimizerName(const TrainingRecipe& recipe)
{
    if (recipe.optimizer.empty())
        return "AdamW (assumed: the log names no optimizer)";
    const OptimizerFacts* facts = optimizerNamed(recipe.optimizer);
    std::string name = facts ? std::string(facts->label) : recipe.optimizer;
    if (!recipe.optimizerVariant.empty())
        name = recipe.optimizerVariant + " " + name;
    return name;
}

std::string perParameter(double bytes)
{
    const auto whole = static_cast<int64_t>(bytes);
    return static_cast<double>(whole) == bytes ? std::to_string(whole) : std::to_string(bytes).substr(0, 3);
}

uint64_t times(uint64_t parameters, double bytes)
{
    return static_cast<uint64_t>(static_cast<double>(parameters) * bytes);
}

} // namespace

// The log printed how many parameters train. Training keeps every trainable weight, its gradient and
// the optimizer's state for it, whatever the batch: when that exceeds what the process may hold the
// run can never train here, and activation fixes cannot help. 0.9 when weights and gradients alone do
// not fit; 0.85 when the whole state does not, with the optimizer named by the log or its frames; 0.75
// when the optimizer is assumed or the weights' width read from mixed precision. Sharded state (ZeRO,
// FSDP) is split across GPUs: a count is not per GPU.
void diagnoseProjectedState(const OomFacts& f, const FixContext& fixes, Candidates& out)
{
    if (!f.trainableParameters || !f.limit || *f.limit == 0 || !f.recipe.sharding.empty())
        return;
    const uint64_t parameters = *f.trainableParameters;
    if (parameters > (uint64_t(1) << 50) / 16)
        return;
    const StatePerParameter bytes = statePerParameter(f.recipe);
    const uint64_t floor = times(parameters, bytes.weights + bytes.gradients);
    const uint64_t state = times(parameters, bytes.total());
    if (state <= *f.limit)
        return;
    const bool never = floor > *f.limit;
    const double confidence = never && !bytes.fp32FromAutocast ? 0.9
        : bytes.optimizerAssumed || bytes.fp32FromAutocast     ? 0.75
                                                               : 0.85;
    Diagnosis d = makeDiagnosis(DiagnosisId::Capacity, confidence, {});
    const std::string width = bytes.precisionAssumed ? "16-bit (the narrowest: the log does not say)"
        : bytes.fp32FromAutocast                     ? "fp32 (mixed precision keeps the weights in fp32)"
                                                     : f.recipe.weightPrecision;
    std::string parts = formatBytes(times(parameters, bytes.weights)) + " of " + width + " weights + "
        + formatBytes(times(parameters, bytes.gradients)) + " of gradients";
    if (bytes.optimizer > 0)
        parts += " + " + formatBytes(times(parameters, bytes.optimizer)) + " of " + optimizerName(f.recipe) + " state";
    if (bytes.master > 0)
        parts += " + " + formatBytes(times(parameters, bytes.master)) + " of fp32 master weights";
    addEvidence(d,
        "the log reports " + std::to_string(parameters) + " trainable parameters: training keeps "
            + perParameter(bytes.total()) + " bytes for each, " + parts + " = " + formatBytes(state) + ", against the "
            + formatBytes(*f.limit) + (f.allowed ? " this process may use" : " card"));
    if (!f.recipe.evidence.empty()) {
        std::string said;
        for (const std::string& line : f.recipe.evidence)
            said += (said.empty() ? "" : "; ") + line;
        addEvidence(d, "what the log says of the recipe: " + said);
    }
    if (f.totalParameters && *f.totalParameters > parameters)
        addEvidence(d,
            std::to_string(*f.totalParameters - parameters)
                + " frozen parameters add their weights on top (not counted: their width is not certain)");
    if (f.phase == Phase::Backward || f.phase == Phase::Forward || f.phase == Phase::Optimizer)
        addEvidence(d,
            "it failed before that state was complete, but the first optimizer step needs all of it: activation "
            "fixes cannot make this run fit");
    d.summary = never ? "Training " + formatBytes(floor) + " of weights and gradients cannot fit on a "
            + formatBytes(*f.limit) + " card at all: shard them or train adapters."
                      : "Weights, gradients and optimizer state (" + formatBytes(state) + ") exceed the "
            + formatBytes(*f.limit) + " card: shrink the optimizer state or shard it.";
    if (!never)
        appendFixes(d.fixes, { FixKind::Optimizer8bit }, fixes);
    appendFixes(d.fixes, { FixKind::Zero, FixKind::Offload, FixKind::Lora, FixKind::Optimizer8bit }, fixes);
    out.strongestFullExplanation = std::max(out.strongestFullExplanation, d.confidence);
    out.add(std::move(d));
}

} // namespace oomlens::textrules
