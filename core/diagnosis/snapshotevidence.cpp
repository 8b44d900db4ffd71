#include "core/diagnosis/snapshotevidence.h"

#include "core/analysis/enginecategories.h"
#include "core/diagnosis/blockcount.h"
#include "core/diagnosis/earlierstep.h"
#include "core/units.h"

#include <algorithm>
#include <cstdio>
#include <unordered_map>

namespace oomlens {

namespace {

// What the run's allocator settings and the OOM message tell the fixes.
void readRunSettings(SnapshotEvidence& e)
{
    const Snapshot& snapshot = *e.analysis.snapshot;
    const SnapshotDiagnosisContext& context = e.context;
    FixContext& fixes = e.fixes;
    fixes.backend = context.message ? context.message->backend : Backend::Cuda;
    fixes.expandableSegmentsOn = context.expandableSegmentsOn
        || (snapshot.allocatorSettings && snapshot.allocatorSettings->expandableSegments);
    for (const auto& segment : snapshot.segments)
        fixes.expandableSegmentsOn |= segment.device == e.device.device && segment.isExpandable;
    fixes.maxSplitSizeSet = snapshot.allocatorSettings && snapshot.allocatorSettings->maxSplitSize > 0;
    fixes.lora = loraTargetOf(snapshot);
    fixes.asyncAllocator = context.asyncAllocator;
    if (context.message) {
        fixes.otherProcessBytes = context.message->otherProcessBytes;
        fixes.allowedBytes = context.message->allowed;
    }
}

// The live bands, the request and the cache left unused at the failure.
void measureBudgetAtOom(MemoryBudget& budget, const OomAnalysis& oom)
{
    budget.bands = oom.liveByCategory;
    budget.liveBytes = 0;
    for (const uint64_t bytes : oom.liveByCategory)
        budget.liveBytes += bytes;
    budget.request = oom.requestedBytes;
    budget.fragmentedBytes = oom.reservedBytes > oom.allocatedBytes ? oom.reservedBytes - oom.allocatedBytes : 0;
}

// What this process could hold: its reserve plus what the card had free, unless a per-process
// limit stood lower. Under a limit the limit plays the part of the card (what the run must fit
// in), so every fit, capacity and growth projection is made against it.
void findUsable(SnapshotEvidence& e)
{
    const OomAnalysis& oom = e.oom;
    MemoryBudget& budget = e.fixes.budget;
    budget.usableBytes = oom.reservedBytes + oom.deviceFreeBytes;
    e.usableText = formatBytes(oom.reservedBytes) + " reserved + " + formatBytes(oom.deviceFreeBytes)
        + " free on the card at the OOM in " + e.where();
    if (e.context.message && e.context.message->allowed) {
        e.processLimit = e.context.message->allowed;
        e.processLimitExact = true;
    } else if (e.limitRefusedSegment()) {
        e.processLimit = oom.reservedBytes + e.requestSegmentBytes();
    }
    if (e.processLimit && *e.processLimit < *budget.usableBytes) {
        budget.usableBytes = e.processLimit;
        e.usableText = e.processLimitExact
            ? "the " + formatBytes(*e.processLimit) + " per-process limit the OOM message states"
            : "at most " + formatBytes(*e.processLimit) + " under a per-process limit: "
                + formatBytes(oom.reservedBytes) + " reserved + the " + formatBytes(e.requestSegmentBytes())
                + " segment it refused while the card had " + formatBytes(oom.deviceFreeBytes) + " free";
    }
}

// The card's size where something tells it, and whether the process held implausibly little of one.
void readCard(SnapshotEvidence& e)
{
    const SnapshotDiagnosisContext& context = e.context;
    e.cardTotal = context.cardTotalBytes;
    e.cardSource = context.cardTotalSource.empty() ? "given with the case" : context.cardTotalSource;
    if (!e.cardTotal && context.message && context.message->total) {
        e.cardTotal = context.message->total;
        e.cardSource = "the OOM message";
    }
    // Judged on what the card left this process, not on a limit it was given: a small limit on a
    // large card is a choice, not a sign that something else holds the card.
    e.implausiblySmall = !e.cardTotal && e.oom.reservedBytes + e.oom.deviceFreeBytes < smallestPlausibleProcessBytes;
}

// What the distributed evidence tells the fixes' ladders.
void carryDistributedIntoFixes(SnapshotEvidence& e)
{
    const DistributedEvidence& distributed = e.distributed;
    FixContext& fixes = e.fixes;
    fixes.checkpointingOn = distributed.checkpointing;
    fixes.checkpointingEvidence = distributed.checkpointingText;
    // The message's log may say what the stacks do not (frames cut short, stacks="python" of a
    // recompute the engine thread ran): gradient_checkpointing=True before the failure.
    const std::optional<OomFacts>& message = e.context.message;
    if (!fixes.checkpointingOn && message && message->recipe.activationCheckpointing.value_or(false)) {
        fixes.checkpointingOn = true;
        fixes.checkpointingEvidence = message->recipe.checkpointingEvidence;
    }
    fixes.communicationBytes = distributed.communicationBytes;
    fixes.communicationKeptBytes = distributed.keptBeyondNeedBytes();
    fixes.collectiveFramework = distributed.communicationFramework;
    fixes.ddpBucketCopyBytes = distributed.ddpBucketBytes;
    fixes.deferredGradientBytes = distributed.deferredGradientBytes;
    // What pending frees kept from reuse around the failure: segments reserved in the failing step
    // that the pending blocks could have served, what the allocator's synchronize returned just
    // before it gave up, or what was still pending at the oom event.
    fixes.pendingFreeBytes = std::max({ distributed.pending.coverableInFailingStepBytes,
        distributed.pending.releasedAtOomBytes, distributed.pending.atOomBytes });
    fixes.graphPoolBytes = distributed.graphPoolReservedBytes;
    fixes.cacheOutsideCaptureBytes = distributed.cacheOutsideCaptureBytes;
    fixes.otherGraphPoolsBytes = distributed.otherGraphPoolsReservedBytes;
}

} // namespace

SnapshotEvidence::SnapshotEvidence(const SnapshotAnalysis& analysis, const DeviceAnalysis& device,
    const OomAnalysis& oom, const SnapshotDiagnosisContext& context)
    : analysis(analysis)
    , device(device)
    , oom(oom)
    , context(context)
    , profile(profileDevice(device, oom.eventIndex))
{
    readRunSettings(*this);
    earlierStepStateBytes = optimizerStateOfAnEarlierStep(*analysis.snapshot, device, oom.eventIndex);
    measureBudgetAtOom(fixes.budget, oom);
    capacity = snapshotCapacity(device, context);
    findUsable(*this);
    fixes.budget.quadraticBytes = quadraticBytesAtOom();
    const BlockEstimate blocks = estimateRepeatedBlocks(device, oom.eventIndex);
    fixes.budget.estimatedBlocks = blocks.blocks;
    fixes.budget.blocksEvidence = blocks.evidence;
    countGpus();
    readCard(*this);
    // Before the projection: a failure inside a CUDA graph capture bears on whether this is training.
    distributed = distributedEvidence(analysis, device, oom);
    projectState();
    carryDistributedIntoFixes(*this);
}

bool SnapshotEvidence::isTrainingRun() const
{
    // A forward that fails is training's until shown otherwise (the first forward fails before any
    // backward exists), but not inside a CUDA graph capture: a capture comes after the warm-up
    // iterations CUDA graphs need (run eagerly, so lazily made state and workspaces exist), and a
    // program that trains shows its backward there. Then only the steps below can tell.
    const bool capturedForward = oom.phase == Phase::Forward && distributed.oomInCapture;
    if ((oom.phase == Phase::Forward && !capturedForward) || oom.phase == Phase::Backward
        || oom.phase == Phase::Optimizer)
        return true;
    return std::any_of(profile.steps.begin(), profile.steps.end(),
        [](const StepProfile& step) { return step.hasBackward || step.hasOptimizer; });
}

uint64_t SnapshotEvidence::requestSegmentBytes() const
{
    const uint64_t request = oom.requestedBytes;
    return request <= MiB ? 2 * MiB
                          : (request <= 10 * MiB ? 20 * MiB : (request + 2 * MiB - 1) / (2 * MiB) * (2 * MiB));
}

bool SnapshotEvidence::limitRefusedSegment() const
{
    // With expandable segments the allocator maps pages, not whole segments: the bound does not hold.
    return !fixes.expandableSegmentsOn && oom.deviceFreeBytes >= requestSegmentBytes() + 2 * MiB;
}

int32_t SnapshotEvidence::firstTrainingStep() const
{
    // optimizer.step() reads the gradients a backward wrote: a step whose optimizer ran trained,
    // even where the trace began after its backward (a late-started or wrapped history shows only
    // the step's tail; an RL iteration's update before its next rollout is one).
    for (const auto& step : profile.steps) {
        if (step.step >= 1 || step.hasBackward || step.hasOptimizer)
            return step.step;
    }
    return 1;
}

const StepProfile* SnapshotEvidence::completedStepBeforeFailure() const
{
    for (const auto& step : profile.steps) {
        if (step.complete && step.hasBackward && step.step < oom.step)
            return &step;
    }
    return nullptr;
}

// What training keeps whatever the batch (trainingstate.h). A run seen only loading or
// evaluating is not projected: nothing shows that it will train.
void SnapshotEvidence::projectState()
{
    TrainingStateInputs inputs;
    inputs.live = oom.liveByCategory;
    // A colocated inference engine's copy of the weights is not trained: no gradients, no optimizer state.
    uint64_t& weights = inputs.live[static_cast<size_t>(Category::Parameters)];
    weights -= std::min(weights, engineWeightsLiveAfter(*analysis.snapshot, device, oom.eventIndex));
    inputs.peakSeen = profile.peakBands;
    // Failing while loading, the request is more of the weights.
    if (oom.phase == Phase::Load)
        inputs.live[static_cast<size_t>(Category::Parameters)] += oom.requestedBytes;
    const bool training = isTrainingRun();
    for (const auto& step : profile.steps) {
        const bool earlier = step.step < oom.step && step.complete;
        inputs.backwardCompleted |= earlier && step.hasBackward;
        // A finished optimizer.step() has made whatever state its optimizer keeps (none for plain SGD).
        inputs.optimizerStateBuilt |= earlier && step.hasOptimizer;
    }
    inputs.backwardCompleted |= oom.phase == Phase::Optimizer;
    // Optimizers make their state lazily inside step(), all of a rank's at once (torch.optim and
    // the fused ones alike); state live at the failure that an earlier step made, or that existed
    // before the trace while the failure is outside an optimizer step, is the whole of it. That is
    // also what a sharded optimizer holds (ZeRO, Megatron's distributed optimizer, FSDP: 1/N of the
    // moments per rank), which a projection from the weights would overstate N times.
    for (const Allocation& allocation : device.allocations) {
        if (allocation.category != Category::OptimizerState || !allocation.liveAfter(oom.eventIndex))
            continue;
        const bool earlierStep = allocation.step >= 0 && oom.step >= 0 && allocation.step < oom.step;
        const bool beforeTraceOutsideStep = allocation.olderThanTrace() && oom.phase != Phase::Optimizer;
        if (earlierStep || beforeTraceOutsideStep) {
            inputs.optimizerStateBuilt = true;
            break;
        }
    }
    if (!training) {
        inputs.backwardCompleted = true;
        inputs.optimizerStateBuilt = true;
    }
    PrecisionEvidence precision = weightPrecision(*analysis.snapshot, device);
    if (precision.precision == WeightPrecision::Unknown)
        precision = precisionFromStateSizes(device, oom.eventIndex);
    OptimizerKind optimizer = optimizerKind(*analysis.snapshot, device);
    if (context.message && context.message->failingFrame && oom.phase == Phase::Optimizer)
        noteMomentumBeingCreated(optimizer, *context.message->failingFrame);
    state = projectTrainingState(inputs, precision, optimizer);
}

// Ranks for ZeRO's projection: the log's rank prefixes or nvidia-smi when the text shows them,
// else the devices this snapshot holds memory on (DataParallel, or a process driving several GPUs).
void SnapshotEvidence::countGpus()
{
    MemoryBudget& budget = fixes.budget;
    int devices = 0;
    for (const auto& device : analysis.devices) {
        if (!device.allocations.empty() || !device.eventAllocation.empty())
            ++devices;
    }
    if (context.gpuCount >= 2) {
        budget.gpuCount = context.gpuCount;
        budget.gpuCountEvidence = context.gpuCountEvidence;
    } else if (devices >= 2) {
        budget.gpuCount = devices;
        budget.gpuCountEvidence = "the snapshot holds memory on " + std::to_string(devices) + " devices";
    }
}

EvidenceLink SnapshotEvidence::link(int64_t event) const
{
    EvidenceLink result { context.snapshotIndex, device.device, event, 0 };
    const DeviceTrace* trace = analysis.snapshot->trace(device.device);
    if (trace && event >= 0 && event < static_cast<int64_t>(trace->events.size()))
        result.timeUs = trace->events[static_cast<size_t>(event)].timeUs;
    return result;
}

void SnapshotEvidence::evidence(Diagnosis& d, std::string text, int64_t event) const
{
    d.evidence.push_back({ std::move(text), event >= 0 ? std::optional<EvidenceLink>(link(event)) : std::nullopt });
}

std::string SnapshotEvidence::where() const
{
    std::string text = std::string(phaseName(oom.phase));
    if (oom.step >= 0)
        text += " of step " + std::to_string(oom.step);
    return text;
}

std::string SnapshotEvidence::bandsText() const
{
    std::vector<std::pair<uint64_t, Category>> order;
    for (int i = 0; i < categoryCount; ++i)
        order.emplace_back(oom.liveByCategory[static_cast<size_t>(i)], static_cast<Category>(i));
    std::sort(order.begin(), order.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
    std::string text;
    for (const auto& [bytes, category] : order) {
        if (bytes == 0)
            continue;
        text += (text.empty() ? "" : ", ") + std::string(categoryName(category)) + " " + formatBytes(bytes);
    }
    return text;
}

// Attention scores and softmax outputs grow with seq²: find them by the frames that made them.
uint64_t SnapshotEvidence::quadraticBytesAtOom() const
{
    const Snapshot& snapshot = *analysis.snapshot;
    if (!snapshot.frames || !snapshot.strings)
        return 0;
    std::unordered_map<uint32_t, bool> quadraticStack;
    uint64_t bytes = 0;
    for (const auto& allocation : device.allocations) {
        if (allocation.category != Category::Activations && allocation.category != Category::Temporaries)
            continue;
        if (!allocation.liveAfter(oom.eventIndex))
            continue;
        auto [it, inserted] = quadraticStack.try_emplace(allocation.stack.value, false);
        if (inserted)
            it->second = isQuadraticStack(allocation.stack);
        if (it->second)
            bytes += allocation.requestedSize;
    }
    return bytes;
}

std::optional<uint64_t> SnapshotEvidence::heldOutsideBytes() const
{
    const uint64_t mine = oom.reservedBytes + oom.deviceFreeBytes;
    if (!cardTotal)
        return implausiblySmall && mine < smallestPlausibleProcessBytes
            ? std::optional<uint64_t>(smallestPlausibleProcessBytes - mine)
            : std::nullopt;
    const uint64_t context = (this->context.message ? this->context.message->selfNonPyTorchBytes.value_or(0) : 0) + GiB;
    if (mine + context >= *cardTotal)
        return std::nullopt;
    return *cardTotal - mine - context;
}

bool SnapshotEvidence::isQuadraticStack(StackId stack) const
{
    const Snapshot& snapshot = *analysis.snapshot;
    if (!stack.isValid() || stack.value >= snapshot.frames->stackCount())
        return false;
    for (const FrameId id : snapshot.frames->stack(stack)) {
        const Frame& frame = snapshot.frames->frame(id);
        const std::string_view name = snapshot.strings->get(frame.name);
        for (const char* needle : { "softmax", "baddbmm", "attn", "attention", "scores" }) {
            if (name.find(needle) != std::string_view::npos)
                return true;
        }
    }
    return false;
}

uint64_t median(std::vector<uint64_t> values)
{
    if (values.empty())
        return 0;
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

std::string times(double factor)
{
    return formatRatio(factor, 1);
}

RunOutlook dynamicOutlook()
{
    RunOutlook outlook;
    outlook.leadingFixFreesOnlyDynamic = true;
    return outlook;
}

} // namespace oomlens
