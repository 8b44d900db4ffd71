#include "core/diagnosis/textrules.h"

#include "core/diagnosis/catalogue.h"
#include "core/diagnosis/textdiagnosis.h"
#include "core/units.h"

#include <algorithm>

namespace oomlens::textrules {

namespace {

// A few percent of the cache unused is normal slack (rounding, the small pool, the last freed
// batch); it may cover a small request, but recovering it would not keep the run alive.
bool significantWaste(const OomFacts& f)
{
    return f.reservedUnallocated && f.reserved
        && (safeRatio(*f.reservedUnallocated, *f.reserved) >= 0.025 || *f.reservedUnallocated >= 512 * MiB);
}

// The unused cache alone covers the request, yet no cached block could take it.
double unusedCacheCoversRequest(const OomFacts& f, Diagnosis& d, Candidates& out)
{
    const uint64_t request = *f.request;
    const uint64_t unallocated = *f.reservedUnallocated;
    const double share = safeRatio(unallocated, *f.reserved);
    // How likely making the split cache usable keeps the run alive: 0.5 when the unused cache
    // covers the request, 0.85 when it is a fifth of the cache or more. Slack that is small,
    // under a twentieth of the card or under 1 GiB, lets this request through, not the next
    // few, so it counts for less: down to half at none.
    const double relative = f.limit && *f.limit > 0 ? clamp01(safeRatio(unallocated, *f.limit) / 0.05) : 1.0;
    const double slack = std::min(relative, clamp01(safeRatio(unallocated, GiB)));
    const double confidence = (0.5 + 0.35 * clamp01(share / 0.2)) * (0.5 + 0.5 * slack);
    addEvidence(d,
        "PyTorch holds " + formatBytes(unallocated) + " reserved but unallocated ("
            + percentText(unallocated, *f.reserved) + " of its " + formatBytes(*f.reserved) + " cache), more than the "
            + formatBytes(request) + " request, yet no cached block could take it");
    if (f.limit && slack < 1.0)
        addEvidence(d,
            "but the unused cache is only " + formatBytes(unallocated) + ", " + percentText(unallocated, *f.limit)
                + " of the " + formatBytes(*f.limit)
                + " the process may use: recovering it buys room for this request, not much more");
    // A few hundred MiB of split blocks on a full card explain this request, not the full card.
    const double weight = f.limit && *f.limit > 0 ? clamp01(safeRatio(unallocated, *f.limit) / 0.05) : 1.0;
    out.strongestFullExplanation = std::max(out.strongestFullExplanation, confidence * weight);
    d.summary = "The cache had " + formatBytes(unallocated) + " unused, more than the " + formatBytes(request)
        + " asked for, but split into pieces too small for it.";
    return confidence;
}

// The message's figures against the request: the unused cache covers it, or only covers it with the
// card's free memory, or is large without explaining it.
double unusedCacheAgainstRequest(const OomFacts& f, Diagnosis& d, Candidates& out)
{
    const uint64_t request = *f.request;
    const uint64_t unallocated = *f.reservedUnallocated;
    const double share = safeRatio(unallocated, *f.reserved);
    if (unallocated >= request && request > 0)
        return unusedCacheCoversRequest(f, d, out);
    if (f.free && unallocated + *f.free >= request && unallocated * 4 >= request) {
        // Only free plus cached memory together cover the request: one possible reading of several,
        // weaker than a phase that names what filled the card.
        addEvidence(d,
            "the " + formatBytes(request) + " request is more than the " + formatBytes(*f.free)
                + " free on the card, but less than that plus the " + formatBytes(unallocated)
                + " PyTorch holds unused: it would fit if the cache were one piece");
        d.summary = "Free and cached-but-unused memory together would cover the " + formatBytes(request)
            + " request, but the cached part is split into smaller blocks.";
        return 0.35;
    }
    if (unallocated >= GiB && share >= 0.2) {
        // Waste that makes the card fuller without explaining this failure: a side note.
        addEvidence(d,
            formatBytes(unallocated) + " of PyTorch's " + formatBytes(*f.reserved) + " cache ("
                + percentText(unallocated, *f.reserved)
                + ") is reserved but unallocated: split blocks waste memory, though not enough to explain this "
                  "failure alone");
        d.summary = "A large share of the cache sits unused in split blocks; it makes the card fuller than it "
                    "needs to be.";
        return 0.3;
    }
    return 0.0;
}

// The request was not pasted: gigabytes of unused cache, a fifth of it or more, are then the
// likeliest reason a request failed (0.55); it cannot be checked against the request.
double unusedCacheWithoutRequest(const OomFacts& f, Diagnosis& d)
{
    if (!f.reservedUnallocated || !f.reserved || !f.limit || *f.reservedUnallocated < GiB
        || safeRatio(*f.reservedUnallocated, *f.reserved) < 0.2)
        return 0.0;
    const uint64_t unallocated = *f.reservedUnallocated;
    addEvidence(d,
        "PyTorch holds " + formatBytes(unallocated) + " reserved but unallocated ("
            + percentText(unallocated, *f.reserved) + " of its " + formatBytes(*f.reserved) + " cache, "
            + percentText(unallocated, *f.limit) + " of the card); the request itself was not pasted");
    d.summary = "A large share of the cache (" + formatBytes(unallocated)
        + ") sat unused in split blocks when the request failed.";
    return 0.55;
}

// memory_summary's own count of trapped bytes and of the allocator's retries, beside the message's.
double withMemorySummary(const OomFacts& f, const TextFindings& context, double confidence, Diagnosis& d)
{
    const MemorySummary* summary = summaryFor(context, f.device);
    if (!summary || summary->allZero)
        return confidence;
    const SummaryRow* nonReleasable = summaryRow(*summary, "non_releasable_memory");
    const SummaryRow* reserved = summaryRow(*summary, "gpu_reserved_memory");
    if (nonReleasable && nonReleasable->current && reserved && reserved->current && *reserved->current > 0) {
        const uint64_t stuck = *nonReleasable->current;
        if (stuck >= 256 * MiB && safeRatio(stuck, *reserved->current) >= 0.25) {
            // memory_summary's own count of trapped bytes: 0.35 at a quarter of the cache, 0.75 at three quarters.
            confidence
                = std::max(confidence, 0.35 + 0.4 * clamp01((safeRatio(stuck, *reserved->current) - 0.25) / 0.5));
            addEvidence(d,
                "memory_summary: " + formatBytes(stuck) + " non-releasable of " + formatBytes(*reserved->current)
                    + " reserved (" + percentText(stuck, *reserved->current)
                    + "): free space trapped inside partly used blocks");
            if (d.summary.empty())
                d.summary = "memory_summary shows a large share of the cache trapped in partly used blocks.";
        }
    }
    if (summary->allocRetries && *summary->allocRetries > 0 && confidence > 0)
        addEvidence(d,
            "memory_summary: " + std::to_string(*summary->allocRetries)
                + " cudaMalloc retries (the allocator flushed its cache and tried again)");
    return confidence;
}

} // namespace

void diagnoseFragmentation(const OomFacts& f, const TextFindings& context, const FixContext& fixes, Candidates& out)
{
    if (f.asyncAllocator || fixes.asyncAllocator)
        return; // cudaMallocAsync has no split blocks of its own to fragment
    Diagnosis d = makeDiagnosis(DiagnosisId::Fragmentation, 0.0, {});
    double confidence = 0.0;
    if (f.request && f.reservedUnallocated && f.reserved && significantWaste(f))
        confidence = unusedCacheAgainstRequest(f, d, out);
    else if (!f.request)
        confidence = unusedCacheWithoutRequest(f, d);
    confidence = withMemorySummary(f, context, confidence, d);
    if (confidence <= 0)
        return;
    if (fixes.expandableSegmentsOn) {
        confidence *= 0.6;
        addEvidence(d,
            "expandable segments are already on (" + expandableSegmentsSource(context)
                + "), which limits this kind of waste");
    }
    d.confidence = std::min(confidence, 0.97);
    if (fixes.preExpandableTorch)
        appendFixes(d.fixes, { FixKind::MaxSplitSize, FixKind::ExpandableSegments }, fixes);
    else
        appendFixes(d.fixes, { FixKind::ExpandableSegments, FixKind::MaxSplitSize }, fixes);
    appendFixes(d.fixes, { FixKind::MicroBatch, FixKind::Bf16, FixKind::Checkpointing }, fixes);
    out.add(std::move(d));
}

} // namespace oomlens::textrules
