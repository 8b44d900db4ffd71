#include "core/diagnosis/snapshotrules.h"

#include "core/analysis/poolowners.h"
#include "core/analysis/privatepools.h"
#include "core/analysis/stackfeatures.h"
#include "core/diagnosis/catalogue.h"
#include "core/phasewords.h"
#include "core/units.h"

#include <algorithm>

namespace oomlens::snapshotrules {

namespace {

// Who holds what at the failure: the inference engine's side and the trainer's.
struct Sides
{
    uint64_t kvCache = 0;
    uint64_t engineWeights = 0;
    uint64_t engineOther = 0; // the engine's forward, sampling and graph scratch
    uint64_t trainerParameters = 0;
    uint64_t trainerGradients = 0;
    uint64_t trainerOptimizer = 0;
    uint64_t weightSync = 0; // buffers born in a weight sync
    Engine engine = Engine::None;

    uint64_t engineBytes() const { return kvCache + engineWeights + engineOther; }
    uint64_t trainerBytes() const { return trainerParameters + trainerGradients + trainerOptimizer; }
};

Sides measureSides(const SnapshotEvidence& e)
{
    Sides sides;
    const Snapshot& snapshot = *e.analysis.snapshot;
    StackFeatures features(snapshot);
    uint64_t engineStackBytes = 0;
    for (const Allocation& a : e.device.allocations) {
        if (!a.liveAfter(e.oom.eventIndex))
            continue;
        const bool stackKnown = a.stack != FrameTable::emptyStack() && snapshot.frames;
        const uint32_t f = stackKnown ? features.features(a.stack) : 0u;
        const Engine engine = stackKnown ? features.engine(a.stack) : Engine::None;
        const uint64_t bytes = a.blockSize;
        if (engine != Engine::None && bytes > engineStackBytes) {
            engineStackBytes = bytes;
            sides.engine = engine;
        }
        if (a.phase == Phase::WeightSync)
            sides.weightSync += bytes;
        if (a.category == Category::KvCache) {
            sides.kvCache += bytes;
        } else if (f & FeatureEngine) {
            (a.category == Category::Parameters ? sides.engineWeights : sides.engineOther) += bytes;
        } else if (a.phase == Phase::Rollout && !(f & FeatureEngine)
            && (a.category == Category::Activations || a.category == Category::Temporaries)) {
            sides.engineOther += bytes; // generation by the policy itself (Hugging Face generate)
        } else if (a.category == Category::Parameters) {
            sides.trainerParameters += bytes;
        } else if (a.category == Category::Gradients) {
            sides.trainerGradients += bytes;
        } else if (a.category == Category::OptimizerState) {
            sides.trainerOptimizer += bytes;
        }
    }
    return sides;
}

// The engine's generation side of an iteration: its own start-up, rollout, waking it.
bool isEnginePhase(Phase phase)
{
    return phase == Phase::Rollout || phase == Phase::Wake || phase == Phase::Load;
}

// The trainer's side: the update, its reload, the forward-only passes of the reference and reward models.
bool isTrainerPhase(Phase phase)
{
    return phase == Phase::Forward || phase == Phase::Backward || phase == Phase::Optimizer || phase == Phase::Reload
        || phase == Phase::Reference || phase == Phase::Reward || phase == Phase::Offload;
}

void project(Fix& fix, const std::string& what, uint64_t saving, const MemoryBudget& budget)
{
    if (saving == 0)
        return;
    fix.projectedSavingBytes = static_cast<int64_t>(saving);
    if (const auto spare = budget.spareAfter(saving))
        fix.fitsAfter = *spare >= 0;
    const std::string fit = budget.fitPhrase(saving);
    fix.detail
        += " " + what + ": " + formatSignedBytes(-static_cast<int64_t>(saving)) + (fit.empty() ? "" : "; " + fit) + ".";
}

Fix offloadTrainer(const Sides& s, Phase phase, const MemoryBudget& budget)
{
    Fix fix { FixKind::OffloadTrainerDuringRollout,
        "Offload the trainer's parameters and optimizer state during rollout",
        "The policy's training state is not used while the engine generates: move it to the host before rollout "
        "and back for the update (the engine sleeps meanwhile).",
        "# verl (FSDP or Megatron workers)\n"
        "actor_rollout_ref.actor.fsdp_config.param_offload=True\n"
        "actor_rollout_ref.actor.fsdp_config.optimizer_offload=True\n"
        "# OpenRLHF\n"
        "--colocate_all_models --vllm_enable_sleep --deepspeed_enable_sleep\n"
        "# slime\n"
        "--colocate   # offloads the Megatron actor with torch_memory_saver during rollout",
        std::nullopt, std::nullopt, false };
    // A weight sync needs the parameters it sends; the optimizer's state and the gradients can go.
    const bool sync = phase == Phase::WeightSync;
    const uint64_t saving = sync ? s.trainerOptimizer + s.trainerGradients : s.trainerBytes();
    project(fix,
        sync ? "offloading the optimizer state and gradients during the sync moves " + formatBytes(saving)
             : "offloading moves the trainer's " + formatBytes(saving) + " off the card for the rollout",
        saving, budget);
    return fix;
}

Fix engineFraction(const Sides& s, const SnapshotEvidence& e)
{
    Fix fix { FixKind::EngineMemoryFraction, "Give the engine a smaller share of the card",
        "vLLM sizes its KV cache to fill gpu_memory_utilization of the whole card, SGLang to mem_fraction_static, "
        "whatever the trainer holds beside it; a smaller share leaves the trainer room and costs only concurrent "
        "sequences (generation gets slower, not different).",
        "# verl\n"
        "actor_rollout_ref.rollout.gpu_memory_utilization=0.4\n"
        "# vLLM\n"
        "LLM(model, gpu_memory_utilization=0.4, enable_sleep_mode=True)\n"
        "# SGLang (slime: --sglang-mem-fraction-static)\n"
        "--mem-fraction-static 0.4",
        std::nullopt, std::nullopt, false };
    if (e.cardTotal) {
        const uint64_t tenth = std::min(s.kvCache, *e.cardTotal / 10);
        if (e.context.kvShape && planner::kvBytesPerToken(*e.context.kvShape) > 0)
            fix.detail += " Each 0.1 is about " + std::to_string(planner::kvTokensThatFit(*e.context.kvShape, tenth))
                + " tokens of cache fewer (" + e.context.kvShapeSource + ").";
        project(fix,
            "each 0.1 less takes a tenth of the " + formatBytes(*e.cardTotal) + " card from the "
                + formatBytes(s.kvCache) + " KV cache",
            tenth, e.fixes.budget);
    } else {
        project(fix,
            "halving the engine's share halves the " + formatBytes(s.kvCache)
                + " KV cache (the card's size is unknown: the step per 0.1 cannot be said)",
            s.kvCache / 2, e.fixes.budget);
    }
    return fix;
}

Fix engineBatch(const Sides& s, const MemoryBudget& budget)
{
    Fix fix { FixKind::EngineMaxNumSeqs, "Generate fewer sequences at once, or shorter ones",
        "The engine's forward and sampling scratch grows with the sequences it batches (max_num_seqs, "
        "max_num_batched_tokens) and their length (max_model_len); Hugging Face's generate grows its KV cache with "
        "the batch. Shorter responses change the experiment.",
        "# verl\n"
        "actor_rollout_ref.rollout.max_num_seqs=256\n"
        "actor_rollout_ref.rollout.max_num_batched_tokens=8192\n"
        "# vLLM\n"
        "LLM(model, max_num_seqs=256, max_model_len=4096)\n"
        "# SGLang\n"
        "--max-running-requests 256 --chunked-prefill-size 4096",
        std::nullopt, std::nullopt, false };
    const bool hfCache = s.engine == Engine::HuggingFace || s.engine == Engine::None;
    const uint64_t grows = s.engineOther + (hfCache ? s.kvCache : 0);
    project(fix, "half the sequences halve the " + formatBytes(grows) + " that grows with them", grows / 2, budget);
    return fix;
}

Fix sleepEngine(const Sides& s, const MemoryBudget& budget)
{
    Fix fix { FixKind::FreeEngineCacheBeforeUpdate, "Free the engine's KV cache (and weights) before the update",
        "The engine's cache is not used while the trainer updates: put it to sleep after rollout and wake it for "
        "the next one (vLLM sleep level 1 discards the KV cache and offloads its weights to the host).",
        "# vLLM\n"
        "llm = LLM(model, enable_sleep_mode=True)\n"
        "llm.sleep(level=1)   # after rollout\n"
        "llm.wake_up()        # before the next rollout\n"
        "# verl\n"
        "actor_rollout_ref.rollout.free_cache_engine=True\n"
        "# SGLang\n"
        "engine.release_memory_occupation()  /  engine.resume_memory_occupation()",
        std::nullopt, std::nullopt, false };
    project(fix,
        "sleeping frees the " + formatBytes(s.kvCache) + " KV cache and the engine's " + formatBytes(s.engineWeights)
            + " of weights",
        s.kvCache + s.engineWeights, budget);
    return fix;
}

Fix bucketedSync(const Sides& s, const MemoryBudget& budget)
{
    Fix fix { FixKind::BucketedWeightSync, "Sync the weights to the engine bucket by bucket",
        "Gathering every updated weight before handing it to the engine needs a second full copy on the card; "
        "sending them in fixed-size buckets needs one bucket.",
        "# verl\n"
        "actor_rollout_ref.rollout.update_weights_bucket_megabytes=512\n"
        "# slime\n"
        "--update-weight-buffer-size 536870912\n"
        "# SGLang: several update_weights_from_tensor calls instead of one",
        std::nullopt, std::nullopt, false };
    constexpr uint64_t bucket = 512ull << 20;
    if (s.weightSync > bucket)
        project(fix, "512 MiB buckets instead of the " + formatBytes(s.weightSync) + " gathered", s.weightSync - bucket,
            budget);
    return fix;
}

Fix moreGpus(const Sides& s, const MemoryBudget& budget)
{
    Fix fix { FixKind::MoreRolloutGpus, "Spread the rollout over more GPUs",
        "Tensor parallelism splits the engine's weights and KV cache across its GPUs; or give the rollout GPUs of "
        "its own instead of sharing the trainer's.",
        "# verl\n"
        "actor_rollout_ref.rollout.tensor_model_parallel_size=2\n"
        "# OpenRLHF: separate engines\n"
        "--vllm_num_engines 2 --vllm_tensor_parallel_size 2",
        std::nullopt, std::nullopt, false };
    const uint64_t engine = s.kvCache + s.engineWeights;
    project(fix, "twice the tensor parallelism halves the engine's " + formatBytes(engine), engine / 2, budget);
    return fix;
}

// With the model's config among the inputs, the planner's KV arithmetic (core/planner/kvcache.h)
// says how many tokens the cache holds: the same numbers `oomlens plan` gives for serving.
void kvPerTokenEvidence(const SnapshotEvidence& e, const Sides& s, Diagnosis& d)
{
    if (!e.context.kvShape || s.kvCache == 0)
        return;
    const planner::KvCacheShape& shape = *e.context.kvShape;
    const uint64_t perToken = planner::kvBytesPerToken(shape);
    if (perToken == 0)
        return;
    const uint64_t tokens = planner::kvTokensThatFit(shape, s.kvCache);
    const std::string formula = shape.latentDim > 0
        ? std::to_string(shape.layers) + " layers x " + std::to_string(shape.latentDim) + " latent"
        : "2 x " + std::to_string(shape.layers) + " layers x " + std::to_string(shape.kvHeadsPerGpu()) + " KV heads x "
            + std::to_string(shape.headDim) + " head dim";
    e.evidence(d,
        "KV cache per token " + formatBytes(perToken) + " (" + e.context.kvShapeSource + ": " + formula
            + " x 2 bytes; bf16 and one GPU assumed): the " + formatBytes(s.kvCache) + " hold about "
            + std::to_string(tokens) + " tokens, " + std::to_string(tokens / 4096) + " sequences of 4096");
}

// The engine's pools as their blocks' stacks name them ("MemPool (0, 2) holds vLLM's KV cache: 20.30 GiB reserved").
void poolEvidence(const SnapshotEvidence& e, Diagnosis& d)
{
    const PrivatePools pools = privatePools(*e.analysis.snapshot, e.device);
    for (const PoolAtDump& pool : pools.pools) {
        if (!pool.isPrivate() || pool.heldBy.role == PoolRole::Unknown || pool.heldBy.role == PoolRole::CudaGraphs)
            continue;
        e.evidence(d,
            poolName(pool.id) + " holds " + pool.heldBy.text + ": " + formatBytes(pool.reservedBytes)
                + " reserved at the dump");
    }
}

// Sleep releases an engine's memory without telling PyTorch's allocator: its pool's segments stay
// in the snapshot. The last sleep before the failure with no wake-up after it says so.
void sleepEvidence(const SnapshotEvidence& e, Diagnosis& d)
{
    int64_t sleptAt = -1;
    for (int64_t i = 0; i <= e.oom.eventIndex && i < static_cast<int64_t>(e.device.eventPhase.size()); ++i) {
        const Phase p = e.device.eventPhase[static_cast<size_t>(i)];
        if (p == Phase::Sleep)
            sleptAt = i;
        else if (p == Phase::Wake)
            sleptAt = -1;
    }
    if (sleptAt >= 0)
        e.evidence(d,
            "the engine went to sleep before the failure with no wake-up after it: a sleeping engine's pools keep "
            "their segments in the snapshot but not their memory, so its bytes above may already be released",
            sleptAt);
}

// Both sides must be resident, and the engine's share worth moving: at least the failed request.
// A trainer shows by the state only training keeps (gradients, optimizer state) or by failing in
// training's or an RL iteration's phases; weights alone beside a KV cache are an inference server's.
bool bothSidesResident(const SnapshotEvidence& e, const Sides& s)
{
    const Phase phase = e.oom.phase;
    const bool trainerPresent = s.trainerGradients + s.trainerOptimizer > 0 || isIterationPhase(phase)
        || phase == Phase::Forward || phase == Phase::Backward || phase == Phase::Optimizer;
    return s.engineBytes() != 0 && s.trainerBytes() != 0 && trainerPresent
        && s.kvCache + s.engineWeights >= std::max<uint64_t>(e.oom.requestedBytes, 1);
}

// 0.5, +0.2 in an RL iteration's phase, +0.15 when either side alone would have fit, +0.1 when
// neither side is under a tenth of the two.
double colocatedConfidence(const SnapshotEvidence& e, const Sides& s)
{
    const Phase phase = e.oom.phase;
    const uint64_t engine = s.engineBytes();
    const uint64_t trainer = s.trainerBytes();
    const bool iteration = isIterationPhase(phase) || (phase == Phase::Load && s.kvCache > 0);
    const uint64_t live = engine + trainer;
    const bool balanced = safeRatio(std::min(engine, trainer), live) >= 0.1;
    // The case itself, measured: without the engine's cache and weights, or without the trainer's
    // state, the failing request would have fit.
    const MemoryBudget& budget = e.fixes.budget;
    const auto spareWithoutEngine = budget.spareAfter(s.kvCache + s.engineWeights);
    const auto spareWithoutTrainer = budget.spareAfter(trainer);
    const bool eitherAloneFits
        = (spareWithoutEngine && *spareWithoutEngine >= 0) || (spareWithoutTrainer && *spareWithoutTrainer >= 0);
    return 0.5 + (iteration ? 0.2 : 0.0) + (eitherAloneFits ? 0.15 : 0.0) + (balanced ? 0.1 : 0.0);
}

// Both sides' memory at the failure, and which side failed.
void sidesEvidence(const SnapshotEvidence& e, const Sides& s, Diagnosis& d)
{
    const Phase phase = e.oom.phase;
    const std::string engineWho
        = s.engine == Engine::None ? std::string("the inference engine") : std::string(engineLabel(s.engine));
    e.evidence(d,
        "at the OOM in " + e.where() + " " + engineWho + " held " + formatBytes(s.engineBytes()) + ": KV cache "
            + formatBytes(s.kvCache) + ", its copy of the weights " + formatBytes(s.engineWeights)
            + ", its working memory " + formatBytes(s.engineOther),
        e.oom.eventIndex);
    e.evidence(d,
        "the trainer held " + formatBytes(s.trainerBytes()) + ": parameters " + formatBytes(s.trainerParameters)
            + ", gradients " + formatBytes(s.trainerGradients) + ", optimizer state " + formatBytes(s.trainerOptimizer),
        e.oom.eventIndex);
    kvPerTokenEvidence(e, s, d);
    poolEvidence(e, d);
    if (isEnginePhase(phase))
        e.evidence(d,
            "the failure is on the engine's side (" + phaseInSentence(phase)
                + "): the trainer's state stayed resident while the engine needed the card");
    else if (isTrainerPhase(phase))
        e.evidence(d,
            "the failure is on the trainer's side (" + phaseInSentence(phase)
                + "): the engine's KV cache and weights stayed resident during it");
    else if (phase == Phase::WeightSync)
        e.evidence(
            d, formatBytes(s.weightSync) + " of weight-sync buffers were live: the weights on their way to the engine");
    sleepEvidence(e, d);
}

// The ladder of product.md §3, each fix only where it acts on the failing phase. Its rung is
// whichever side idles in that phase: during the trainer's phases (the update, the reference
// and reward passes) the engine's KV cache and weights serve nobody, and sleeping it returns
// all of them (vLLM sleep level 1 discards the cache and moves the weights to the host; SGLang
// releases its memory occupation), where a smaller share returns a tenth of the card per 0.1.
// That whole release leads, as offloading the idle trainer leads during rollout, and it is
// the fix the ranking judges: whether the failing phase fits once the engine is asleep.
void colocatedLadder(const SnapshotEvidence& e, const Sides& s, Diagnosis& d)
{
    const Phase phase = e.oom.phase;
    const MemoryBudget& budget = e.fixes.budget;
    const bool trainerSide = isTrainerPhase(phase);
    if (trainerSide)
        d.fixes.push_back(sleepEngine(s, budget));
    if (!trainerSide)
        d.fixes.push_back(offloadTrainer(s, phase, budget));
    // A share of the card is an engine's setting; Hugging Face's caches grow with the batch instead.
    const bool engineSizesItsCache = s.engine != Engine::None && s.engine != Engine::HuggingFace;
    if (s.kvCache > 0 && engineSizesItsCache)
        d.fixes.push_back(engineFraction(s, e));
    if (phase == Phase::Rollout && (s.engineOther > 0 || s.engine == Engine::HuggingFace))
        d.fixes.push_back(engineBatch(s, budget));
    if (!trainerSide && !isEnginePhase(phase))
        d.fixes.push_back(sleepEngine(s, budget));
    if (phase == Phase::WeightSync || s.weightSync > 0)
        d.fixes.push_back(bucketedSync(s, budget));
    d.fixes.push_back(moreGpus(s, budget));
}

RunOutlook colocatedOutlook(const Diagnosis& d)
{
    RunOutlook outlook;
    if (!d.fixes.empty() && d.fixes.front().projectedSavingBytes)
        outlook.leadingFixFreesOnceBytes = static_cast<uint64_t>(*d.fixes.front().projectedSavingBytes);
    // The side that idles in the failing phase leaves the card for all of it (the engine asleep
    // through the update, the trainer offloaded through rollout): not a one-off recovery.
    const FixKind leading = d.fixes.empty() ? FixKind::MoreRolloutGpus : d.fixes.front().kind;
    outlook.leadingFixFreesForThePhase
        = leading == FixKind::FreeEngineCacheBeforeUpdate || leading == FixKind::OffloadTrainerDuringRollout;
    return outlook;
}

} // namespace

void colocatedEngine(const SnapshotEvidence& e, std::vector<Diagnosis>& out)
{
    const Sides s = measureSides(e);
    if (!bothSidesResident(e, s))
        return;
    Diagnosis d = makeDiagnosis(DiagnosisId::ColocatedEngine, colocatedConfidence(e, s),
        "The trainer's state (" + formatBytes(s.trainerBytes()) + ") and the inference engine's memory ("
            + formatBytes(s.engineBytes()) + ") were both on the card when " + phaseInSentence(e.oom.phase)
            + " failed; one side has to leave the GPU during the other's phase.");
    sidesEvidence(e, s, d);
    colocatedLadder(e, s, d);
    d.outlook = colocatedOutlook(d);
    out.push_back(std::move(d));
}

} // namespace oomlens::snapshotrules
