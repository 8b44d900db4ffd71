#include "core/planner/estimatorfigures.h"

#include "core/planner/parallelplan.h"

#include <algorithm>
#include <cmath>

namespace oomlens::planner {

MegatronEstimate megatronTheoreticalMemory(const ModelSpec& model, const TrainingSetup& setup)
{
    MegatronEstimate estimate;
    if (!model.hasDimensions() || model.vocab <= 0)
        return estimate;
    const Parallelism& p = setup.parallel;
    const double h = model.hidden;
    const double a = model.heads;
    const double layers = model.layers;
    const double tp = p.tensor;
    const double pp = p.pipeline;
    const double vocab = megatronPaddedVocab(model.vocab, p.tensor);
    const double glu = model.gatedMlp ? 1.5 : 1.0;
    const double norm = model.layerNormBiases ? 2 : 1;

    double attention = 2 * h * h * (1 + static_cast<double>(model.kvHeadsOrHeads()) / a);
    if (model.latentAttention()) {
        const double qk = model.qkNopeHeadDim + model.qkRopeHeadDim;
        const double query = model.qLoraRank > 0 ? model.qLoraRank * (h + a * qk + norm) : h * a * qk;
        attention = query + model.kvLoraRank * (h + a * (model.qkNopeHeadDim + model.vHeadDim) + norm)
            + h * model.qkRopeHeadDim + a * model.vHeadDim * h;
    }
    const double denseLayer = 2 * h * (model.ffnOrDefault() * glu + norm) + attention;
    const double sharedFfn = model.sharedExperts > 0 ? model.sharedExperts * model.sharedExpertFfnOrDefault() : 0;
    const double moeLayer
        = 2 * h * (model.expertFfnOrDefault() * std::max(model.experts, 1) * glu + sharedFfn * glu + norm) + attention;
    const double moeLayers = model.moeLayers();
    const double embedding = h * vocab;
    const double block = denseLayer * (layers - moeLayers) + moeLayer * moeLayers + norm * h;
    double shard = (block / pp + embedding) / tp;
    if (!model.tiedEmbeddings && p.pipeline == 1)
        shard += embedding / tp;
    estimate.parametersOnMostLoadedShard = shard;
    const double dataParallel = p.dataParallel(setup.totalGpus());
    estimate.weightAndOptimizerBytes = shard * (p.distributedOptimizer ? 6 + 12 / dataParallel : 18);

    const double s = setup.sequence;
    const double b = setup.microBatch;
    const double sbh = s * b * h;
    const bool withSp = p.sequenceParallel && setup.checkpointing == Checkpointing::Selective;
    double activations = sbh * (withSp ? 18 + 4 * model.ffnOrDefault() / h : 10 + 24 / tp) * layers;
    activations += 8 * s * b * pp + sbh * pp; // the embedding's input and dropout, PP microbatches in flight
    if (p.virtualStages > 1)
        activations *= p.interleavingPenalty();
    else if (p.pipeline > 1 && p.microbatches > 0)
        activations *= std::min(1.0, p.microbatches / pp);
    if (p.pipeline == 1) {
        activations += withSp ? sbh * 4 * (1 + vocab / h) : (s * b * vocab / tp + sbh) * 2;
    }
    estimate.activationBytes = withSp ? activations / tp : activations * 1.05;
    return estimate;
}

namespace {

uint64_t modelStateBytes(const BandBytes& bands)
{
    return bands[static_cast<size_t>(Band::Parameters)] + bands[static_cast<size_t>(Band::Gradients)]
        + bands[static_cast<size_t>(Band::OptimizerState)];
}

// Why the planner's model states differ from Megatron's count, or that they are the same count.
std::string megatronStatesReason(const ModelSpec& model, const TrainingSetup& setup)
{
    const Parallelism& p = setup.parallel;
    std::vector<std::string> why;
    if (setup.zeroStage > 0)
        why.push_back("Megatron counts 18 bytes per parameter; ZeRO shards them over data parallel as DeepSpeed does");
    if (model.moe() && p.expert > 1)
        why.push_back("Megatron's count divides the experts by TP alone; the planner by TP x EP, as they are placed");
    if (p.context > 1 && p.distributedOptimizer)
        why.push_back("Megatron shards the distributed optimizer over DP; the planner over DP x CP, the group it "
                      "reduces gradients over");
    if (model.moe())
        why.push_back("the router's weights are not in Megatron's count");
    if (model.layerNormBiases)
        why.push_back("Megatron's count has no linear biases");
    if (setup.precision != Precision::MixedBf16 && setup.precision != Precision::MixedFp16)
        why.push_back("Megatron's 18 bytes assume mixed precision with Adam");
    else if (setup.optimizer != OptimizerKind::AdamW && setup.optimizer != OptimizerKind::AdamWFused)
        why.push_back("Megatron's 18 bytes assume Adam");
    std::string reason = "Same count: (layers/PP + one embedding)/TP parameters, 18 bytes each (6 + 12/DP with the "
                         "distributed optimizer); the planner puts the final norm on the last stage";
    if (!why.empty()) {
        reason = why.front();
        for (size_t i = 1; i < why.size(); ++i)
            reason += "; " + why[i];
    }
    return reason + ".";
}

// Why the planner's activations differ from Megatron's formula.
std::string megatronActivationsReason(const ModelSpec& model, const TrainingSetup& setup)
{
    std::string reason
        = "Megatron's formula is the GPT block's (Korthikanti et al. Table 2 with a 4h-wide, ungated MLP term of "
          "18 + 4·ffn/h under sequence parallelism and selective recompute, 10 + 24/t per s·b·h otherwise, no "
          "attention scores, plus a flat 5%); the planner counts this model's blocks (grouped-query K and V, "
          "gated MLP, norm statistics, FlashAttention's log-sum-exp or eager scores, the set-up's recompute) and "
          "the logits with their fp32 log-softmax where the LM head lives";
    if (setup.checkpointing == Checkpointing::Full || setup.checkpointing == Checkpointing::EveryK)
        reason += "; Megatron's formula does not model full recompute (the planner keeps each "
                  "checkpointed block's input and one block being recomputed)";
    if (setup.parallel.context > 1)
        reason += "; Megatron's formula does not split the sequence by CP";
    if (model.moe())
        reason += "; it has no expert term (routed tokens' MLP tensors, top-k)";
    return reason + ".";
}

void addMegatron(const ModelSpec& model, const TrainingSetup& setup, MemoryPlan& plan)
{
    const MegatronEstimate megatron = megatronTheoreticalMemory(model, setup);
    if (megatron.weightAndOptimizerBytes <= 0)
        return;
    // Model states: the first stage's GPU, which Megatron's count describes.
    const BandBytes& firstStage = plan.stages.empty() ? plan.perGpu : plan.stages.front().perGpu;
    EstimatorFigure states;
    states.id = "megatron_weights_and_optimizer";
    states.source = "Megatron-LM theoretical_memory_usage.py, compute_weight_and_optimizer_memory";
    states.scope = "model states on the first stage's GPU";
    states.bytes = static_cast<uint64_t>(std::llround(megatron.weightAndOptimizerBytes));
    states.plannerBytes = modelStateBytes(firstStage);
    states.reason = megatronStatesReason(model, setup);
    plan.estimators.push_back(states);

    EstimatorFigure activations;
    activations.id = "megatron_activations";
    activations.source = setup.parallel.sequenceParallel && setup.checkpointing == Checkpointing::Selective
        ? "Megatron-LM theoretical_memory_usage.py, compute_activation_memory"
        : "Megatron-LM theoretical_memory_usage.py, compute_activation_memory_without_sp";
    activations.scope = "activations on the first stage's GPU";
    activations.bytes = static_cast<uint64_t>(std::llround(megatron.activationBytes));
    activations.plannerBytes = plan.stages.empty()
        ? plan.activations.savedBytes
        : plan.stages.front().byPhase[static_cast<size_t>(PeakPhase::Backward)][static_cast<size_t>(Band::Activations)];
    activations.reason = megatronActivationsReason(model, setup);
    plan.estimators.push_back(activations);
}

void addDeepSpeed(const ModelSpec& model, const TrainingSetup& setup, MemoryPlan& plan)
{
    if (setup.zeroStage < 1 || setup.zeroStage > 2 || setup.offload != Offload::None || setup.loraRank > 0
        || !setup.mixed() || setup.parallel.any())
        return;
    const uint64_t p = model.totalParameters();
    const uint64_t n = static_cast<uint64_t>(setup.totalGpus());
    EstimatorFigure figure;
    figure.scope = "model states";
    figure.plannerBytes = modelStateBytes(plan.perGpu);
    if (setup.zeroStage == 2) {
        figure.id = "deepspeed_zero2_documented";
        figure.source = "DeepSpeed estimate_zero2_model_states_mem_needs in older releases and its documentation "
                        "(docs/code-docs/source/memory.rst)";
        figure.bytes = 4 * p + 16 * p / n;
        figure.reason = "That estimator serves stages 1 and 2 with one formula, 4·P + 16·P/N, counting the 16-bit "
                        "gradients whole as stage 1 keeps them; stage 2 allocates only its 1/N partition of them, "
                        "2·P + 18·P/N, which is what the planner counts, what a snapshot of a stage-2 run holds and "
                        "what current DeepSpeed's estimator prints.";
    } else {
        figure.id = "deepspeed_zero2";
        figure.source = "DeepSpeed estimate_zero2_model_states_mem_needs (current releases)";
        figure.bytes = 2 * p + 18 * p / n;
        figure.reason = "The estimator serves stages 1 and 2 with one formula, 2·P + 18·P/N, the 16-bit gradients "
                        "partitioned; stage 1 keeps them whole (4·P + 16·P/N), which is what the planner counts.";
    }
    plan.estimators.push_back(figure);
}

} // namespace

void addEstimatorFigures(const ModelSpec& model, const TrainingSetup& setup, MemoryPlan& plan)
{
    if (setup.inference)
        return;
    if (setup.parallel.any() && setup.loraRank == 0)
        addMegatron(model, setup, plan);
    addDeepSpeed(model, setup, plan);
}

} // namespace oomlens::planner
