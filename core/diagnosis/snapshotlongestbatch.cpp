#include "core/diagnosis/snapshotrules.h"

#include "core/diagnosis/batchscaling.h"
#include "core/diagnosis/catalogue.h"
#include "core/units.h"

#include <algorithm>

namespace oomlens::snapshotrules {

namespace {

// An earlier step to compare the failing one with: whole in the trace, a training step, not evaluation.
bool comparableStep(const SnapshotEvidence& e, const StepProfile& step)
{
    return step.step != e.oom.step && step.complete && step.step >= e.firstTrainingStep() && !step.hasEval;
}

// What the failing step needed against what the earlier steps grew, measured each way the trace allows:
// against a typical earlier step, against the one earlier step, by the same call sites, by the cache
// the earlier steps left.
struct BatchGrowth
{
    const StepProfile* failing = nullptr;
    uint64_t needed = 0; // what the failing step grew by, with the request
    uint64_t heldNow = 0; // activations and temporaries live at the failure, with the request

    std::vector<uint64_t> growth; // each comparable earlier step's growth
    std::vector<uint64_t> largest; // and its largest dynamic allocation
    uint64_t typical = 0;
    double factor = 0.0;
    bool grew = false;

    const StepProfile* onlyStep = nullptr; // the one whole training step before, when it is the only one
    uint64_t onlyEarlier = 0;
    double onlyFactor = 0.0;
    bool grewPastOnlyStep = false;

    std::optional<BatchScaling> scaling;
    bool measuredSites = false;
    bool scaled = false;
    bool sitesUnchanged = false;

    std::optional<CacheBeforeStep> cache;
    double cacheFactor = 0.0;
    uint64_t cacheRoom = 0;
    bool outgrewCache = false;
};

// Against a typical step: needs two complete earlier steps to know what "typical" is.
void compareWithTypicalStep(const SnapshotEvidence& e, BatchGrowth& g)
{
    for (const auto& step : e.profile.steps) {
        if (comparableStep(e, step)) {
            g.growth.push_back(step.dynamicGrowth());
            g.largest.push_back(step.largestDynamicAlloc);
        }
    }
    g.typical = g.growth.size() >= 2 ? median(g.growth) : 0;
    g.factor = safeRatio(g.needed, g.typical);
    g.grew = g.typical > 0 && g.factor >= 1.5;
}

void compareWithOnlyStep(const SnapshotEvidence& e, BatchGrowth& g)
{
    // One complete earlier step is no typical step, but it is a measurement: the same model ran a
    // whole step on what it grew, and the failing step already needs half as much again of
    // activations and temporaries (state is not counted: it does not grow with the batch). Only a
    // step the trace shows from its start has a known growth: step 0 is what the trace opened in.
    const auto onlyStep = std::find_if(e.profile.steps.begin(), e.profile.steps.end(),
        [&](const StepProfile& step) { return comparableStep(e, step); });
    // And only a whole training step (forward, backward and optimizer) ran what the failing step runs.
    const bool wholeStep
        = g.growth.size() == 1 && onlyStep->step >= 1 && onlyStep->hasBackward && onlyStep->hasOptimizer;
    if (wholeStep)
        g.onlyStep = &*onlyStep;
    g.onlyEarlier = wholeStep ? g.growth.front() : 0;
    g.onlyFactor = safeRatio(g.needed, g.onlyEarlier);
    g.grewPastOnlyStep = g.onlyEarlier > 0 && g.onlyFactor >= 1.5;
}

// The same lines of model code allocating more than they did before: activations scale with the
// tokens, attention scores with their square (batchscaling.h).
void compareSameSites(const SnapshotEvidence& e, BatchGrowth& g)
{
    g.scaling = measureBatchScaling(*e.analysis.snapshot, e.device, e.profile, *g.failing, e.oom.eventIndex);
    g.measuredSites = g.scaling && g.scaling->matchedSites >= 3;
    g.scaled = g.measuredSites && g.scaling->ratio >= 1.5 && g.heldNow > g.scaling->earlierPeakDynamic;
    g.sitesUnchanged = g.measuredSites && g.scaling->matchedSites >= 5 && g.scaling->ratio < 1.2;
    // The same code allocating the same sizes says the batch did not grow, whatever one step shows.
    g.grewPastOnlyStep = g.grewPastOnlyStep && !g.sitesUnchanged;
}

// No earlier step whole in the trace, none of its tensors seen by site: what the earlier steps
// needed is bounded by the cache they left (batchscaling.h's CacheBeforeStep), once a completed
// step is known to have run before the trace (optimizer state its step() created). Their
// growth fit in what was reserved at the failing step's start less what was live then; the
// failing step needs 1.5x that or more, and its largest tensors outgrow every cached segment
// from two call sites or more (one site is one oversized tensor, large_allocation's case).
// Optimizer state created since does not pass: the earlier step's tensors fit the cache.
void compareWithCacheLeft(const SnapshotEvidence& e, BatchGrowth& g)
{
    if (!g.grew && !g.scaled && g.growth.size() < 2 && !g.measuredSites && e.earlierStepStateBytes > 0) {
        g.cache = measureCacheBeforeStep(*e.analysis.snapshot, e.device, *g.failing, e.oom.eventIndex);
        const uint64_t startLive = g.failing->startLive();
        g.cacheRoom = g.cache && g.cache->reservedBytes > startLive ? g.cache->reservedBytes - startLive : 0;
        g.cacheFactor = safeRatio(g.needed, g.cacheRoom);
    }
    g.outgrewCache = g.cache && g.cacheRoom > 0 && g.cache->outgrowingSites >= 2 && g.cacheFactor >= 1.5;
}

BatchGrowth measureBatchGrowth(const SnapshotEvidence& e, const StepProfile& failing)
{
    BatchGrowth g;
    g.failing = &failing;
    const uint64_t dynamicNow = dynamicBandBytes(e.oom.liveByCategory);
    const uint64_t start = failing.startDynamic();
    g.needed = (dynamicNow > start ? dynamicNow - start : 0) + e.oom.requestedBytes;
    g.heldNow = dynamicNow + e.oom.requestedBytes;
    compareWithTypicalStep(e, g);
    compareWithOnlyStep(e, g);
    compareSameSites(e, g);
    compareWithCacheLeft(e, g);
    return g;
}

// Confidence: 0.55-0.85 with the step growth factor (1.5x to 3.5x); 0.6-0.85 with the median site
// ratio (1.5x to 3x), the same code growing being direct evidence of the batch; the higher when
// both measure. Growth with the sites' sizes unchanged is something else: 0.45 at most.
double longerBatchConfidence(const BatchGrowth& g)
{
    double confidence = 0.0;
    if (g.grew)
        confidence = 0.55 + 0.3 * clamp01((g.factor - 1.5) / 2.0);
    // One step to compare with: below what a typical step measures.
    if (g.grewPastOnlyStep)
        confidence = std::max(confidence, 0.5 + 0.25 * clamp01((g.onlyFactor - 1.5) / 2.0));
    // Bounded rather than measured: at most 0.7.
    if (g.outgrewCache)
        confidence = std::min(0.7, 0.55 + 0.3 * clamp01((g.cacheFactor - 1.5) / 2.0));
    if (g.scaled)
        confidence = std::max(confidence, 0.6 + 0.25 * clamp01((g.scaling->ratio - 1.5) / 1.5));
    if (g.sitesUnchanged)
        confidence = std::min(confidence, 0.45);
    return confidence;
}

// Returns whether its largest buffer grew faster than the batch, like seq² attention scores.
bool typicalStepEvidence(const SnapshotEvidence& e, const BatchGrowth& g, Diagnosis& d)
{
    e.evidence(d,
        "step " + std::to_string(e.oom.step) + " needed at least " + formatBytes(g.needed)
            + " of activations and temporaries, " + times(g.factor) + " the " + formatBytes(g.typical)
            + " a typical step (median of " + std::to_string(g.growth.size()) + ") peaked at",
        e.oom.eventIndex);
    const uint64_t typicalLargest = median(g.largest);
    const uint64_t failingLargest = std::max(g.failing->largestDynamicAlloc, e.oom.requestedBytes);
    const double largestFactor = safeRatio(failingLargest, typicalLargest);
    const bool attention = largestFactor >= 1.5 * g.factor;
    if (typicalLargest > 0 && largestFactor >= 2.0)
        e.evidence(d,
            "its largest buffer is " + formatBytes(failingLargest) + " against " + formatBytes(typicalLargest)
                + " in other steps (" + times(largestFactor) + ")"
                + (attention ? ": faster than the batch grew, like seq² attention scores" : ""),
            g.failing->largestDynamicEvent >= 0 ? g.failing->largestDynamicEvent : e.oom.eventIndex);
    return attention;
}

void onlyStepEvidence(const SnapshotEvidence& e, const BatchGrowth& g, Diagnosis& d)
{
    const StepProfile& before = *g.onlyStep;
    e.evidence(d,
        "step " + std::to_string(before.step) + " completed after growing by " + formatBytes(g.onlyEarlier)
            + " of activations and temporaries (peak " + formatBytes(before.peakLive) + " live); step "
            + std::to_string(e.oom.step) + " needed at least " + formatBytes(g.needed) + ", " + times(g.onlyFactor)
            + " that, when it failed: this batch is larger than the one before it",
        e.oom.eventIndex);
}

void sameSitesEvidence(const SnapshotEvidence& e, const BatchGrowth& g, Diagnosis& d)
{
    const BatchScaling& scaling = *g.scaling;
    e.evidence(d,
        "the same code allocated more in step " + std::to_string(e.oom.step) + " than before it: over "
            + std::to_string(scaling.matchedSites) + " call sites seen in both, the failing step's tensors are "
            + times(scaling.ratio) + " the earlier ones (median by bytes), " + std::to_string(scaling.grownSites)
            + " sites 1.5x or more; activations grow with the batch's tokens, weights, gradients and optimizer "
              "state do not",
        scaling.largestNowEvent);
    if (!scaling.largestWhere.empty())
        e.evidence(d,
            "largest: " + scaling.largestWhere + " allocated " + formatBytes(scaling.largestNowBytes) + " against "
                + formatBytes(scaling.largestBeforeBytes) + " earlier ("
                + times(safeRatio(scaling.largestNowBytes, scaling.largestBeforeBytes)) + ")",
            scaling.largestNowEvent);
    const bool startsMidStep = !e.profile.steps.empty() && e.profile.steps.front().startDynamic() > 0;
    e.evidence(d,
        "at the failure step " + std::to_string(e.oom.step) + " held " + formatBytes(g.heldNow)
            + " of activations and temporaries with the request, against at most "
            + formatBytes(scaling.earlierPeakDynamic) + " the trace shows any earlier step holding"
            + (startsMidStep ? " (the trace starts mid-step: a lower bound of their peak)" : "") + "; those steps fit");
}

void cacheLeftEvidence(const SnapshotEvidence& e, const BatchGrowth& g, Diagnosis& d)
{
    const CacheBeforeStep& cache = *g.cache;
    e.evidence(d,
        "step " + std::to_string(e.oom.step) + " needed at least " + formatBytes(g.needed)
            + " of activations and temporaries, " + times(g.cacheFactor) + " the " + formatBytes(g.cacheRoom)
            + " any earlier step could have grown by: the allocator had " + formatBytes(cache.reservedBytes)
            + " reserved when this step began, the high-water mark the earlier steps left, less the "
            + formatBytes(g.failing->startLive()) + " live then",
        e.oom.eventIndex);
    e.evidence(d,
        std::to_string(cache.outgrowingSites) + " call sites of this step asked for tensors up to "
            + formatBytes(cache.largestRequest) + ", " + times(safeRatio(cache.largestRequest, cache.largestSegment))
            + " the largest segment cached then (" + formatBytes(cache.largestSegment)
            + "), which held the largest tensor of every earlier step: the tensors that grow with the tokens grew",
        cache.largestRequestEvent);
    e.evidence(d,
        "the trace holds no earlier step whole; optimizer state older than it shows that steps completed before "
        "it began");
}

// What the failing step needed beyond what the earlier steps did, by the measure that decided.
uint64_t excessOverEarlierSteps(const BatchGrowth& g)
{
    if (g.grewPastOnlyStep && !g.grew && !g.scaled)
        return g.needed > g.onlyEarlier ? g.needed - g.onlyEarlier : 0;
    if (g.grew)
        return g.needed > g.typical ? g.needed - g.typical : 0;
    if (g.scaled)
        return g.heldNow > g.scaling->earlierPeakDynamic ? g.heldNow - g.scaling->earlierPeakDynamic : 0;
    return g.needed > g.cacheRoom ? g.needed - g.cacheRoom : 0;
}

std::string longerBatchSummary(const SnapshotEvidence& e, const BatchGrowth& g)
{
    const std::string step = "Step " + std::to_string(e.oom.step);
    if (g.grew)
        return "Other steps peak far lower; step " + std::to_string(e.oom.step) + "'s batch is about " + times(g.factor)
            + " as demanding, as the longest sequences in a variable-length dataset are.";
    if (g.scaled)
        return step + "'s batch is longer than those before it: the same code allocated about "
            + times(g.scaling->ratio)
            + " as much, and its activations no longer fit beside the state that earlier steps held with room to "
              "spare.";
    if (g.outgrewCache)
        return step + " needs about " + times(g.cacheFactor)
            + " what any earlier step could have, and its largest tensors outgrew everything the cache held: a "
              "longer batch, as the longest sequences in a variable-length dataset are.";
    return step + " needed about " + times(g.onlyFactor)
        + " the activations the step before it grew by, and that step completed: a larger batch than the one "
          "before, as the longest sequences in a variable-length dataset are.";
}

} // namespace

// A longer batch shows two ways. Its step grows far more than earlier steps did (needs two
// complete earlier steps to know what "typical" is); and the same lines of model code allocate
// more than they did before, since activations scale with the tokens and attention scores with
// their square (batchscaling.h; needs only some earlier step's tensors, by allocation or free).
// The failing step must also need more than the trace shows any earlier step holding: those fit.
void longestBatch(const SnapshotEvidence& e, std::vector<Diagnosis>& out)
{
    if (e.oom.step < 0 || e.oom.phase == Phase::Eval)
        return;
    const StepProfile* failing = e.profile.step(e.oom.step);
    if (!failing)
        return;
    const BatchGrowth g = measureBatchGrowth(e, *failing);
    if (!g.grew && !g.scaled && !g.outgrewCache && !g.grewPastOnlyStep)
        return;

    Diagnosis d = makeDiagnosis(DiagnosisId::LongestBatch, longerBatchConfidence(g), {});
    bool attention = false;
    if (g.grew)
        attention = typicalStepEvidence(e, g, d);
    if (g.grewPastOnlyStep)
        onlyStepEvidence(e, g, d);
    if (g.scaled) {
        sameSitesEvidence(e, g, d);
        attention = attention
            || (g.scaling->largestStack != FrameTable::emptyStack() && e.isQuadraticStack(g.scaling->largestStack));
    }
    if (g.outgrewCache)
        cacheLeftEvidence(e, g, d);
    if (g.sitesUnchanged)
        e.evidence(d,
            "but the same code allocated the same sizes as before (" + times(g.scaling->ratio) + " over "
                + std::to_string(g.scaling->matchedSites) + " call sites): the batch did not grow, something else did");
    d.summary = longerBatchSummary(e, g);

    FixContext fixes = e.fixes;
    fixes.caseSavingBytes = excessOverEarlierSteps(g);
    appendFixes(d.fixes, { FixKind::LengthBucketing }, fixes);
    if (attention)
        appendFixes(d.fixes, { FixKind::Sdpa }, e.fixes);
    appendFixes(d.fixes,
        { FixKind::MicroBatch, FixKind::Bf16, FixKind::Checkpointing, FixKind::ExpandableSegments, FixKind::Sdpa,
            FixKind::ShorterSequences },
        e.fixes);
    d.outlook = dynamicOutlook();
    out.push_back(std::move(d));
}

} // namespace oomlens::snapshotrules
