#include "core/diagnosis/snapshotrules.h"

#include "core/diagnosis/batchscaling.h"
#include "core/diagnosis/catalogue.h"
#include "core/units.h"

#include <algorithm>

namespace oomlens::snapshotrules {

namespace {

uint64_t dynamicBytes(const CategoryBytes& bands)
{
    uint64_t bytes = 0;
    for (int i = 0; i < categoryCount; ++i) {
        if (isDynamic(static_cast<Category>(i)))
            bytes += bands[static_cast<size_t>(i)];
    }
    return bytes;
}

} // namespace

// A longer batch shows two ways. Its step grows far more than earlier steps did (needs two
// complete earlier steps to know what "typical" is); and the same lines of model code allocate
// more than they did before, since activations scale with the tokens and attention scores with
// their square (batchscaling.h; needs only some earlier step's tensors, by allocation or free).
// The failing step must also need more than the trace shows any earlier step holding: those fit.
// Confidence: 0.55-0.85 with the step growth factor (1.5x to 3.5x); 0.6-0.85 with the median site
// ratio (1.5x to 3x), the same code growing being direct evidence of the batch; the higher when
// both measure. Growth with the sites' sizes unchanged is something else: 0.45 at most.
void longestBatch(const SnapshotEvidence& e, std::vector<Diagnosis>& out)
{
    if (e.oom.step < 0 || e.oom.phase == Phase::Eval)
        return;
    const StepProfile* failing = e.profile.step(e.oom.step);
    if (!failing)
        return;
    std::vector<uint64_t> growth;
    std::vector<uint64_t> largest;
    for (const auto& step : e.profile.steps) {
        if (step.step != e.oom.step && step.complete && step.step >= e.firstTrainingStep() && !step.hasEval) {
            growth.push_back(step.dynamicGrowth());
            largest.push_back(step.largestDynamicAlloc);
        }
    }
    const uint64_t dynamicNow = dynamicBytes(e.oom.liveByCategory);
    const uint64_t start = failing->startDynamic();
    const uint64_t needed = (dynamicNow > start ? dynamicNow - start : 0) + e.oom.requestedBytes;
    const uint64_t typical = growth.size() >= 2 ? median(growth) : 0;
    const double factor = safeRatio(needed, typical);
    const bool grew = typical > 0 && factor >= 1.5;
    // One complete earlier step is no typical step, but it is a measurement: the same model ran a
    // whole step on what it grew, and the failing step already needs half as much again of
    // activations and temporaries (state is not counted: it does not grow with the batch). Only a
    // step the trace shows from its start has a known growth: step 0 is what the trace opened in.
    const auto onlyStep = std::find_if(e.profile.steps.begin(), e.profile.steps.end(), [&](const StepProfile& step) {
        return step.step != e.oom.step && step.complete && step.step >= e.firstTrainingStep() && !step.hasEval;
    });
    // And only a whole training step (forward, backward and optimizer) ran what the failing step runs.
    const bool wholeStep = growth.size() == 1 && onlyStep->step >= 1 && onlyStep->hasBackward && onlyStep->hasOptimizer;
    const uint64_t onlyEarlier = wholeStep ? growth.front() : 0;
    const double onlyFactor = safeRatio(needed, onlyEarlier);
    bool grewPastOnlyStep = onlyEarlier > 0 && onlyFactor >= 1.5;

    const auto scaling = measureBatchScaling(*e.analysis.snapshot, e.device, e.profile, *failing, e.oom.eventIndex);
    const uint64_t heldNow = dynamicNow + e.oom.requestedBytes;
    const bool measuredSites = scaling && scaling->matchedSites >= 3;
    const bool scaled = measuredSites && scaling->ratio >= 1.5 && heldNow > scaling->earlierPeakDynamic;
    const bool sitesUnchanged = measuredSites && scaling->matchedSites >= 5 && scaling->ratio < 1.2;
    // The same code allocating the same sizes says the batch did not grow, whatever one step shows.
    grewPastOnlyStep = grewPastOnlyStep && !sitesUnchanged;

    // No earlier step whole in the trace, none of its tensors seen by site: what the earlier steps
    // needed is bounded by the cache they left (batchscaling.h's CacheBeforeStep), once a completed
    // step is known to have run before the trace (optimizer state its step() created). Their
    // growth fit in what was reserved at the failing step's start less what was live then; the
    // failing step needs 1.5x that or more, and its largest tensors outgrow every cached segment
    // from two call sites or more (one site is one oversized tensor, large_allocation's case).
    // Optimizer state created since does not pass: the earlier step's tensors fit the cache.
    std::optional<CacheBeforeStep> cache;
    double cacheFactor = 0.0;
    uint64_t cacheRoom = 0;
    if (!grew && !scaled && growth.size() < 2 && !measuredSites && e.earlierStepStateBytes > 0) {
        cache = measureCacheBeforeStep(*e.analysis.snapshot, e.device, *failing, e.oom.eventIndex);
        const uint64_t startLive = failing->startLive();
        cacheRoom = cache && cache->reservedBytes > startLive ? cache->reservedBytes - startLive : 0;
        cacheFactor = safeRatio(needed, cacheRoom);
    }
    const bool outgrewCache = cache && cacheRoom > 0 && cache->outgrowingSites >= 2 && cacheFactor >= 1.5;
    if (!grew && !scaled && !outgrewCache && !grewPastOnlyStep)
        return;

    double confidence = 0.0;
    if (grew)
        confidence = 0.55 + 0.3 * clamp01((factor - 1.5) / 2.0);
    // One step to compare with: below what a typical step measures.
    if (grewPastOnlyStep)
        confidence = std::max(confidence, 0.5 + 0.25 * clamp01((onlyFactor - 1.5) / 2.0));
    // Bounded rather than measured: at most 0.7.
    if (outgrewCache)
        confidence = std::min(0.7, 0.55 + 0.3 * clamp01((cacheFactor - 1.5) / 2.0));
    if (scaled)
        confidence = std::max(confidence, 0.6 + 0.25 * clamp01((scaling->ratio - 1.5) / 1.5));
    if (sitesUnchanged)
        confidence = std::min(confidence, 0.45);
    Diagnosis d = makeDiagnosis(DiagnosisId::LongestBatch, confidence, {});

    bool attention = false;
    if (grew) {
        e.evidence(d,
            "step " + std::to_string(e.oom.step) + " needed at least " + formatBytes(needed)
                + " of activations and temporaries, " + times(factor) + " the " + formatBytes(typical)
                + " a typical step (median of " + std::to_string(growth.size()) + ") peaked at",
            e.oom.eventIndex);
        const uint64_t typicalLargest = median(largest);
        const uint64_t failingLargest = std::max(failing->largestDynamicAlloc, e.oom.requestedBytes);
        const double largestFactor = safeRatio(failingLargest, typicalLargest);
        attention = largestFactor >= 1.5 * factor;
        if (typicalLargest > 0 && largestFactor >= 2.0)
            e.evidence(d,
                "its largest buffer is " + formatBytes(failingLargest) + " against " + formatBytes(typicalLargest)
                    + " in other steps (" + times(largestFactor) + ")"
                    + (attention ? ": faster than the batch grew, like seq² attention scores" : ""),
                failing->largestDynamicEvent >= 0 ? failing->largestDynamicEvent : e.oom.eventIndex);
    }
    if (grewPastOnlyStep) {
        const StepProfile& before = *onlyStep;
        e.evidence(d,
            "step " + std::to_string(before.step) + " completed after growing by " + formatBytes(onlyEarlier)
                + " of activations and temporaries (peak " + formatBytes(before.peakLive) + " live); step "
                + std::to_string(e.oom.step) + " needed at least " + formatBytes(needed) + ", " + times(onlyFactor)
                + " that, when it failed: this batch is larger than the one before it",
            e.oom.eventIndex);
    }
    if (scaled) {
        e.evidence(d,
            "the same code allocated more in step " + std::to_string(e.oom.step) + " than before it: over "
                + std::to_string(scaling->matchedSites) + " call sites seen in both, the failing step's tensors are "
                + times(scaling->ratio) + " the earlier ones (median by bytes), " + std::to_string(scaling->grownSites)
                + " sites 1.5x or more; activations grow with the batch's tokens, weights, gradients and optimizer "
                  "state do not",
            scaling->largestNowEvent);
        if (!scaling->largestWhere.empty())
            e.evidence(d,
                "largest: " + scaling->largestWhere + " allocated " + formatBytes(scaling->largestNowBytes)
                    + " against " + formatBytes(scaling->largestBeforeBytes) + " earlier ("
                    + times(safeRatio(scaling->largestNowBytes, scaling->largestBeforeBytes)) + ")",
                scaling->largestNowEvent);
        const bool startsMidStep = !e.profile.steps.empty() && e.profile.steps.front().startDynamic() > 0;
        e.evidence(d,
            "at the failure step " + std::to_string(e.oom.step) + " held " + formatBytes(heldNow)
                + " of activations and temporaries with the request, against at most "
                + formatBytes(scaling->earlierPeakDynamic) + " the trace shows any earlier step holding"
                + (startsMidStep ? " (the trace starts mid-step: a lower bound of their peak)" : "")
                + "; those steps fit");
        attention = attention
            || (scaling->largestStack != FrameTable::emptyStack() && e.isQuadraticStack(scaling->largestStack));
    }
    if (outgrewCache) {
        e.evidence(d,
            "step " + std::to_string(e.oom.step) + " needed at least " + formatBytes(needed)
                + " of activations and temporaries, " + times(cacheFactor) + " the " + formatBytes(cacheRoom)
                + " any earlier step could have grown by: the allocator had " + formatBytes(cache->reservedBytes)
                + " reserved when this step began, the high-water mark the earlier steps left, less the "
                + formatBytes(failing->startLive()) + " live then",
            e.oom.eventIndex);
        e.evidence(d,
            std::to_string(cache->outgrowingSites) + " call sites of this step asked for tensors up to "
                + formatBytes(cache->largestRequest) + ", "
                + times(safeRatio(cache->largestRequest, cache->largestSegment)) + " the largest segment cached then ("
                + formatBytes(cache->largestSegment)
                + "), which held the largest tensor of every earlier step: the tensors that grow with the tokens grew",
            cache->largestRequestEvent);
        e.evidence(d,
            "the trace holds no earlier step whole; optimizer state older than it shows that steps completed before "
            "it began");
    }
    if (sitesUnchanged)
        e.evidence(d,
            "but the same code allocated the same sizes as before (" + times(scaling->ratio) + " over "
                + std::to_string(scaling->matchedSites) + " call sites): the batch did not grow, something else did");

    const uint64_t excess = grewPastOnlyStep && !grew && !scaled ? (needed > onlyEarlier ? needed - onlyEarlier : 0)
        : grew                                                   ? (needed > typical ? needed - typical : 0)
        : scaled ? (heldNow > scaling->earlierPeakDynamic ? heldNow - scaling->earlierPeakDynamic : 0)
                 : (needed > cacheRoom ? needed - cacheRoom : 0);
    const std::string step = "Step " + std::to_string(e.oom.step);
    if (grew)
        d.summary = "Other steps peak far lower; step " + std::to_string(e.oom.step) + "'s batch is about "
            + times(factor) + " as demanding, as the longest sequences in a variable-length dataset are.";
    else if (scaled)
        d.summary = step + "'s batch is longer than those before it: the same code allocated about "
            + times(scaling->ratio)
            + " as much, and its activations no longer fit beside the state that earlier steps held with room to "
              "spare.";
    else if (outgrewCache)
        d.summary = step + " needs about " + times(cacheFactor)
            + " what any earlier step could have, and its largest tensors outgrew everything the cache held: a "
              "longer batch, as the longest sequences in a variable-length dataset are.";
    else
        d.summary = step + " needed about " + times(onlyFactor)
            + " the activations the step before it grew by, and that step completed: a larger batch than the one "
              "before, as the longest sequences in a variable-length dataset are.";
    FixContext fixes = e.fixes;
    fixes.caseSavingBytes = excess;
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
