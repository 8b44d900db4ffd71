#include "core/planner/modelstates.h"

#include "core/optimizerknowledge.h"
#include "core/planner/zeroestimators.h"

#include <algorithm>

namespace oomlens::planner {

ModelStates& ModelStates::operator+=(const ModelStates& other)
{
    parameters += other.parameters;
    gradients += other.gradients;
    optimizerState += other.optimizerState;
    gatherBuffer = std::max(gatherBuffer, other.gatherBuffer);
    optimizerTemporaries += other.optimizerTemporaries;
    hostBytes += other.hostBytes;
    return *this;
}

uint64_t saturatedBytes(double bytes)
{
    // A config may claim any size (a hidden size of 10^8 squares past 2^64 bytes): saturate at
    // 2^62 bytes, beyond every card and still far from wrapping when a few such figures are added.
    // Converting a double beyond 2^64 to an integer is undefined, and NaN compares false.
    constexpr double ceiling = 4611686018427387904.0; // 2^62
    if (!(bytes < ceiling))
        return bytes != bytes ? 0 : static_cast<uint64_t>(ceiling);
    return static_cast<uint64_t>(std::max(bytes, 0.0));
}

uint64_t scaled(uint64_t count, double bytesPerElement)
{
    return saturatedBytes(static_cast<double>(count) * bytesPerElement);
}

namespace {

// The optimizer and its variant as optimizerknowledge.h spells them.
const OptimizerFacts& optimizerFacts(OptimizerKind optimizer)
{
    switch (optimizer) {
    case OptimizerKind::AdamW8bit:
    case OptimizerKind::AdamW8bitPaged:
        return *optimizerNamed("adamw-8bit");
    case OptimizerKind::Sgd:
        return *optimizerNamed("sgd");
    case OptimizerKind::Adafactor:
        return *optimizerNamed("adafactor");
    case OptimizerKind::AdamW:
    case OptimizerKind::AdamWFused:
        break;
    }
    return *optimizerNamed("adamw");
}

std::string_view variantKey(OptimizerKind optimizer)
{
    switch (optimizer) {
    case OptimizerKind::AdamW:
        return "foreach"; // torch.optim's default
    case OptimizerKind::AdamWFused:
        return "fused";
    case OptimizerKind::AdamW8bitPaged:
        return "paged";
    case OptimizerKind::AdamW8bit:
    case OptimizerKind::Sgd:
    case OptimizerKind::Adafactor:
        break;
    }
    return {};
}

} // namespace

// Optimizer state per trainable parameter. The fp32 moments become bf16 in a pure-bf16 run
// (torch keeps the state in the parameter's dtype). The user chose the optimizer, so SGD's momentum
// buffer counts: a plan for SGD without momentum has nothing to shrink there. Adafactor's factored
// moment is taken on hidden x hidden matrices (4096 when the model gives no hidden size).
double optimizerBytesPerParameter(const ModelSpec& model, const TrainingSetup& setup)
{
    const double element = setup.precision == Precision::Bf16 ? 2.0 : 4.0;
    const OptimizerFacts& facts = optimizerFacts(setup.optimizer);
    return stateBytesPerParameter(facts, facts.moments, element, std::max(model.hidden > 0 ? model.hidden : 4096, 1));
}

namespace {

// The foreach step's parameter-sized intermediate, for the whole group; ZeRO's optimizers step
// their own partitions in place.
uint64_t foreachIntermediate(const TrainingSetup& setup, uint64_t parameterBytes)
{
    const OptimizerVariantFacts* variant = optimizerVariantNamed(variantKey(setup.optimizer));
    return variant && variant->stepIntermediate && setup.zeroStage == 0 ? parameterBytes : 0;
}

// Plain PyTorch, Hugging Face's "model memory anatomy": fp32 weights (the master copy
// under autocast) plus the 16-bit copies autocast casts and autograd keeps for backward,
// fp32 gradients, the optimizer's state. Mixed AdamW: 6 + 4 + 8 = 18 bytes per parameter.
ModelStates unshardedStates(
    const TrainingSetup& setup, uint64_t p, uint64_t n, double moments, std::vector<std::string>& notes)
{
    ModelStates states;
    const double weight = setup.precision == Precision::Bf16 ? 2.0 : 4.0;
    states.parameters = scaled(p, weight) + (setup.mixed() ? 2 * p : 0);
    states.gradients = scaled(p, weight);
    states.optimizerState = scaled(p, moments);
    states.optimizerTemporaries = foreachIntermediate(setup, scaled(p, weight));
    if (n > 1) {
        // DDP reduces through flat buckets that copy every gradient unless
        // gradient_as_bucket_view=True.
        states.gradients *= 2;
        notes.push_back("DDP's gradient buckets double the gradients (pass gradient_as_bucket_view=True to "
                        "share them); ZeRO-1 or more shards them instead.");
    }
    states.hostBytes = scaled(p, weight) * static_cast<uint64_t>(setup.gpusPerNode); // each rank loads the model
    return states;
}

// Host memory per node under ZeRO: DeepSpeed's own estimators, n shards over nodes of
// gpusPerNode GPUs.
uint64_t zeroHostBytes(const TrainingSetup& setup, uint64_t p, uint64_t n, uint64_t largestLayer)
{
    const bool offloadOptimizer = setup.offload != Offload::None;
    const auto perNode = static_cast<int>(std::min<uint64_t>(n, static_cast<uint64_t>(setup.gpusPerNode)));
    const auto nodes = static_cast<int>(std::max<uint64_t>(n / static_cast<uint64_t>(setup.gpusPerNode), 1));
    if (setup.zeroStage >= 3)
        return deepSpeedZero3Estimate(p, largestLayer, perNode, nodes, offloadOptimizer, setup.offload == Offload::All)
            .cpuBytes;
    return deepSpeedZero2Estimate(p, perNode, nodes, offloadOptimizer).cpuBytes;
}

} // namespace

ModelStates dataParallelStates(const ModelSpec& model, const TrainingSetup& setup, uint64_t parameters, uint64_t shards,
    uint64_t largestLayer, std::vector<std::string>& notes)
{
    const uint64_t p = parameters;
    const uint64_t n = std::max<uint64_t>(shards, 1);
    const double moments = optimizerBytesPerParameter(model, setup);
    if (setup.zeroStage == 0)
        return unshardedStates(setup, p, n, moments, notes);

    // DeepSpeed ZeRO, as its estimators count it: 16-bit parameters and gradients, and in
    // mixed precision fp32 gradients, fp32 master weights and the moments, sharded by stage.
    ModelStates states;
    const double weight = setup.precision == Precision::Fp32 ? 4.0 : 2.0;
    const bool fp32Copies = setup.mixed();
    const uint64_t shardedParameters = setup.zeroStage >= 3 ? scaled(p, weight) / n : scaled(p, weight);
    // Stage 3 reduce-scatters each module's 16-bit gradients into the fp32 partition as they
    // appear, so in mixed precision only the gather buffer holds them (DeepSpeed's 4 bytes per
    // parameter of the largest module: 16-bit weights and 16-bit gradients).
    uint64_t lowGradients = setup.zeroStage >= 2 ? scaled(p, weight) / n : scaled(p, weight);
    if (setup.zeroStage >= 3 && fp32Copies)
        lowGradients = 0;
    const uint64_t fp32Gradients = fp32Copies ? 4 * p / n : 0;
    const uint64_t master = fp32Copies ? masterWeightBytes * p / n : 0;
    states.parameters = shardedParameters;
    states.gradients = lowGradients + fp32Gradients;
    states.optimizerState = master + scaled(p, moments) / n;
    if (setup.zeroStage >= 3)
        states.gatherBuffer = 4 * largestLayer;
    if (setup.offload != Offload::None) {
        // ZeRO-Offload: gradients are reduced straight into host buffers, the optimizer steps on the CPU.
        states.gradients = 0;
        states.optimizerState = 0;
        if (setup.offload == Offload::All)
            states.parameters = 0;
    }
    states.hostBytes = zeroHostBytes(setup, p, n, largestLayer);
    if (setup.zeroStage >= 3 && largestLayer == 0)
        notes.push_back("ZeRO-3 gathers the largest module whole: give the dimensions to count that buffer.");
    return states;
}

// LoRA: the base is frozen (no gradients, no optimizer state) in 16 bits, or for QLoRA its block
// projections in 4-bit NF4 with double-quantized constants (4.127 bits per weight, the QLoRA
// paper's figure) while embeddings and head stay 16-bit. Paged optimizers (QLoRA's spill to
// host on spikes) are counted as if resident.
ModelStates adapterStates(const ModelSpec& model, const TrainingSetup& setup, std::vector<std::string>& notes)
{
    const uint64_t p = model.totalParameters();
    const uint64_t trainable = model.loraParameters(setup.loraRank, setup.loraTargets);
    const uint64_t n = static_cast<uint64_t>(setup.totalGpus());
    ModelStates states;
    uint64_t base = setup.precision == Precision::Fp32 ? 4 * p : 2 * p;
    if (setup.quantizedBase) {
        const uint64_t quantized = std::min(model.blockLinearParameters(), p);
        base = 2 * (p - quantized) + scaled(quantized, 4.127 / 8);
    }
    if (setup.zeroStage >= 3)
        base /= n;
    // peft keeps adapters in fp32; the QLoRA recipe casts them to bf16 with the compute dtype.
    const double adapterWeight = setup.precision == Precision::Bf16 || setup.quantizedBase ? 2.0 : 4.0;
    states.parameters = base + scaled(trainable, adapterWeight);
    states.gradients = scaled(trainable, adapterWeight);
    states.optimizerState = scaled(trainable, optimizerBytesPerParameter(model, setup));
    states.optimizerTemporaries = foreachIntermediate(setup, scaled(trainable, adapterWeight));
    states.hostBytes = base * static_cast<uint64_t>(setup.gpusPerNode);
    if (trainable == 0)
        notes.push_back("LoRA adapters are counted from the layers and hidden size: give the dimensions.");
    if (setup.zeroStage > 0)
        notes.push_back(
            "With LoRA only the frozen base is sharded (at ZeRO-3); adapters are small enough to replicate.");
    return states;
}

ModelStates megatronStates(const ModelSpec& model, const TrainingSetup& setup, uint64_t parameters, uint64_t shards)
{
    const uint64_t p = parameters;
    const uint64_t n = std::max<uint64_t>(shards, 1);
    // Weights in the training dtype (bf16/fp16 in mixed precision, Megatron has no autocast);
    // gradients accumulate in an fp32 main_grad buffer (accumulate_allreduce_grads_in_fp32),
    // except in pure bf16; the optimizer keeps an fp32 master copy in mixed precision.
    const double weight = setup.precision == Precision::Fp32 ? 4.0 : 2.0;
    const double gradient = setup.precision == Precision::Bf16 ? 2.0 : 4.0;
    const double master = setup.mixed() ? 4.0 : 0.0;
    ModelStates states;
    states.parameters = scaled(p, weight);
    states.gradients = scaled(p, gradient);
    const uint64_t optimizer = scaled(p, master + optimizerBytesPerParameter(model, setup));
    states.optimizerState = setup.parallel.distributedOptimizer ? optimizer / n : optimizer;
    // Megatron's fused Adam steps in place: no parameter-sized intermediate.
    states.hostBytes = scaled(p, weight) * static_cast<uint64_t>(setup.gpusPerNode);
    return states;
}

BandBytes withOverhead(BandBytes bands)
{
    bands[static_cast<size_t>(Band::Overhead)]
        = cudaContextBytes + static_cast<uint64_t>(static_cast<double>(bandTotal(bands)) * allocatorSlackFraction);
    return bands;
}

PhaseBands composePhases(
    const ModelStates& states, uint64_t saved, uint64_t activationTemporaries, const TrainingSetup& setup)
{
    PhaseBands phases;
    const uint64_t persistent = states.parameters + states.optimizerState;
    // Gradients exist before backward when micro-batches accumulate into them, and always under
    // DeepSpeed and Megatron, which allocate their gradient buffers up front.
    const bool gradientsDuringForward = setup.gradientAccumulation > 1 || setup.zeroStage > 0 || setup.parallel.any();
    phases.forwardBytes = persistent + (gradientsDuringForward ? states.gradients : 0) + saved + states.gatherBuffer;
    // Backward is counted as if every gradient appeared while every saved activation is still
    // live: activations are freed block by block as gradients appear, so this errs high by at
    // most the smaller of the two (exact for preallocated gradient buffers).
    const uint64_t backwardTemporaries = activationTemporaries + states.gatherBuffer;
    phases.backwardBytes = persistent + states.gradients + saved + backwardTemporaries;
    phases.optimizerStepBytes = persistent + states.gradients + states.optimizerTemporaries;

    BandBytes common {};
    common[static_cast<size_t>(Band::Parameters)] = states.parameters;
    common[static_cast<size_t>(Band::OptimizerState)] = states.optimizerState;
    BandBytes forward = common;
    forward[static_cast<size_t>(Band::Gradients)] = gradientsDuringForward ? states.gradients : 0;
    forward[static_cast<size_t>(Band::Activations)] = saved;
    forward[static_cast<size_t>(Band::Temporaries)] = states.gatherBuffer;
    BandBytes backward = common;
    backward[static_cast<size_t>(Band::Gradients)] = states.gradients;
    backward[static_cast<size_t>(Band::Activations)] = saved;
    backward[static_cast<size_t>(Band::Temporaries)] = backwardTemporaries;
    BandBytes step = common;
    step[static_cast<size_t>(Band::Gradients)] = states.gradients;
    step[static_cast<size_t>(Band::Temporaries)] = states.optimizerTemporaries;
    phases.byPhase = { withOverhead(forward), withOverhead(backward), withOverhead(step) };
    // Backward holds at least what forward does; the optimizer step wins when its intermediate
    // outweighs the activations (small batches, foreach AdamW).
    phases.peakPhase
        = phases.optimizerStepBytes > phases.backwardBytes ? PeakPhase::OptimizerStep : PeakPhase::Backward;
    return phases;
}

} // namespace oomlens::planner
