#include "core/diagnosis/textdiagnosis.h"

#include "core/diagnosis/catalogue.h"
#include "core/diagnosis/hostmemorydiagnosis.h"
#include "core/units.h"

#include <algorithm>
#include <cmath>

// What a confidence means here: the probability, as the message's numbers support it, that the
// diagnosis names the cause the user has to fix. Each rule below says in one comment what its
// figure stands for. 0.8 and above is kept for cases where the numbers leave no other reading (a
// request larger than the card, a printed limit with the card free, another process holding what
// was missing); a phase read from a traceback alone never goes above 0.6.

namespace oomlens {

namespace {

constexpr uint64_t cudaContextAllowance = 1 * GiB; // context + cuBLAS/cuDNN workspaces: 0.3-1 GiB
// The largest single accelerators hold 288 GB (B300, MI355X); 192 GB ones (B200, MI300X) are common.
constexpr uint64_t largestCardBytes = 288ULL * 1000 * 1000 * 1000;
constexpr uint64_t commonLargeCardBytes = 192ULL * GiB;

void addEvidence(Diagnosis& diagnosis, std::string text)
{
    diagnosis.evidence.push_back({ std::move(text), std::nullopt });
}

bool mentions(const OomFacts& facts, std::initializer_list<const char*> needles)
{
    for (const auto& function : facts.tracebackFunctions) {
        for (const char* needle : needles) {
            if (function.find(needle) != std::string::npos)
                return true;
        }
    }
    return false;
}

const SummaryRow* summaryRow(const MemorySummary& summary, const char* key)
{
    const auto it = summary.rows.find(key);
    return it == summary.rows.end() ? nullptr : &it->second;
}

const MemorySummary* summaryFor(const TextFindings& findings, int device)
{
    const MemorySummary* found = nullptr;
    for (const auto& summary : findings.summaries) {
        if (summary.device == device)
            found = &summary; // the last table printed is the one nearest the failure
    }
    return found;
}

struct Candidates
{
    std::vector<Diagnosis> list;
    double strongestFullExplanation = 0.0; // a cause that alone explains why the request failed
    double capacityDamping = 1.0; // a phase case (eval, backward) explains a full card more specifically
    void add(Diagnosis diagnosis) { list.push_back(std::move(diagnosis)); }
};

void diagnoseFragmentation(const OomFacts& f, const TextFindings& context, const FixContext& fixes, Candidates& out)
{
    if (f.asyncAllocator || fixes.asyncAllocator)
        return; // cudaMallocAsync has no split blocks of its own to fragment
    double confidence = 0.0;
    Diagnosis d = makeDiagnosis("fragmentation", 0.0, {});
    // A few percent of the cache unused is normal slack (rounding, the small pool, the last freed
    // batch); it may cover a small request, but recovering it would not keep the run alive.
    const bool significantWaste = f.reservedUnallocated && f.reserved
        && (safeRatio(*f.reservedUnallocated, *f.reserved) >= 0.025 || *f.reservedUnallocated >= 512 * MiB);
    if (f.request && f.reservedUnallocated && f.reserved && significantWaste) {
        const uint64_t request = *f.request;
        const uint64_t unallocated = *f.reservedUnallocated;
        const double share = safeRatio(unallocated, *f.reserved);
        if (unallocated >= request && request > 0) {
            // How likely making the split cache usable keeps the run alive: 0.5 when the unused cache
            // covers the request, 0.85 when it is a fifth of the cache or more. Slack that is small,
            // under a twentieth of the card or under 1 GiB, lets this request through, not the next
            // few, so it counts for less: down to half at none.
            const double relative = f.limit && *f.limit > 0 ? clamp01(safeRatio(unallocated, *f.limit) / 0.05) : 1.0;
            const double slack = std::min(relative, clamp01(safeRatio(unallocated, GiB)));
            confidence = (0.5 + 0.35 * clamp01(share / 0.2)) * (0.5 + 0.5 * slack);
            addEvidence(d,
                "PyTorch holds " + formatBytes(unallocated) + " reserved but unallocated ("
                    + percentText(unallocated, *f.reserved) + " of its " + formatBytes(*f.reserved)
                    + " cache), more than the " + formatBytes(request) + " request, yet no cached block could take it");
            if (f.limit && slack < 1.0)
                addEvidence(d,
                    "but the unused cache is only " + formatBytes(unallocated) + ", "
                        + percentText(unallocated, *f.limit) + " of the " + formatBytes(*f.limit)
                        + " the process may use: recovering it buys room for this request, not much more");
            // A few hundred MiB of split blocks on a full card explain this request, not the full card.
            const double weight = f.limit && *f.limit > 0 ? clamp01(safeRatio(unallocated, *f.limit) / 0.05) : 1.0;
            out.strongestFullExplanation = std::max(out.strongestFullExplanation, confidence * weight);
            d.summary = "The cache had " + formatBytes(unallocated) + " unused, more than the " + formatBytes(request)
                + " asked for, but split into pieces too small for it.";
        } else if (f.free && unallocated + *f.free >= request && unallocated * 4 >= request) {
            // Only free plus cached memory together cover the request: one possible reading of several,
            // weaker than a phase that names what filled the card.
            confidence = 0.35;
            addEvidence(d,
                "the " + formatBytes(request) + " request is more than the " + formatBytes(*f.free)
                    + " free on the card, but less than that plus the " + formatBytes(unallocated)
                    + " PyTorch holds unused: it would fit if the cache were one piece");
            d.summary = "Free and cached-but-unused memory together would cover the " + formatBytes(request)
                + " request, but the cached part is split into smaller blocks.";
        } else if (unallocated >= GiB && share >= 0.2) {
            // Waste that makes the card fuller without explaining this failure: a side note.
            confidence = 0.3;
            addEvidence(d,
                formatBytes(unallocated) + " of PyTorch's " + formatBytes(*f.reserved) + " cache ("
                    + percentText(unallocated, *f.reserved)
                    + ") is reserved but unallocated: split blocks waste memory, though not enough to explain this "
                      "failure alone");
            d.summary = "A large share of the cache sits unused in split blocks; it makes the card fuller than it "
                        "needs to be.";
        }
    } else if (!f.request && f.reservedUnallocated && f.reserved && f.limit && *f.reservedUnallocated >= GiB
        && safeRatio(*f.reservedUnallocated, *f.reserved) >= 0.2) {
        // The request was not pasted: gigabytes of unused cache, a fifth of it or more, are then the
        // likeliest reason a request failed (0.55); it cannot be checked against the request.
        const uint64_t unallocated = *f.reservedUnallocated;
        confidence = 0.55;
        addEvidence(d,
            "PyTorch holds " + formatBytes(unallocated) + " reserved but unallocated ("
                + percentText(unallocated, *f.reserved) + " of its " + formatBytes(*f.reserved) + " cache, "
                + percentText(unallocated, *f.limit) + " of the card); the request itself was not pasted");
        d.summary = "A large share of the cache (" + formatBytes(unallocated)
            + ") sat unused in split blocks when the request failed.";
    }
    if (const MemorySummary* summary = summaryFor(context, f.device); summary && !summary->allZero) {
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
    }
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

// XLA allocates all of a program's temporaries as one buffer: a request that is exactly that
// buffer is the whole step's intermediates, not one large tensor.
bool requestIsXlaTempArena(const OomFacts& f)
{
    if (!f.xlaBuffers || !f.xlaBuffers->tempBytes || !f.request)
        return false;
    const uint64_t temp = *f.xlaBuffers->tempBytes;
    const uint64_t request = *f.request;
    const uint64_t gap = temp > request ? temp - request : request - temp;
    return gap <= std::max<uint64_t>(temp / 50, 16 * MiB);
}

// A request with no card size beside it (XLA, a cut message): only its size against every card made
// can speak. Larger than the largest accelerator is certain (0.9); larger than the common 192 GB
// class almost so (0.8); a quarter of the largest card is a large share of any card (0.5).
// (XLA's temporaries arena is judged by diagnoseXlaProgram instead.)
void diagnoseRequestWithoutCard(const OomFacts& f, const FixContext& fixes, Candidates& out)
{
    const uint64_t request = *f.request;
    if (request < 8 * GiB)
        return;
    // 8 GiB in one tensor is a quarter of the common 24-32 GB cards and a tenth of the largest: large
    // on most cards, though not all (0.35).
    double confidence = 0.35;
    std::string compared = "a quarter of the common 24-32 GB cards";
    if (request >= largestCardBytes / 4) {
        confidence = 0.5;
        compared = "a quarter of the largest accelerators' 288 GB";
    }
    if (request > largestCardBytes) {
        confidence = 0.9;
        compared = "the 288 GB of the largest single accelerator made (B300, MI355X)";
    } else if (request > commonLargeCardBytes) {
        confidence = 0.8;
        compared = "the 192 GiB of the largest common cards (B200, MI300X)";
    }
    Diagnosis d = makeDiagnosis("large_allocation", confidence, {});
    addEvidence(d,
        "the message gives no card size, but the single " + formatBytes(request) + " request is more than " + compared);
    d.summary = "One request of " + formatBytes(request)
        + " is too large for a single GPU: typically a whole batch, sequence or score matrix processed at once.";
    out.strongestFullExplanation = std::max(out.strongestFullExplanation, confidence);
    if (f.phase == Phase::Eval)
        appendFixes(d.fixes, { FixKind::EvalBatchSize }, fixes);
    appendFixes(d.fixes, { FixKind::MicroBatch, FixKind::Sdpa, FixKind::ShorterSequences }, fixes);
    out.add(std::move(d));
}

void diagnoseLargeAllocation(const OomFacts& f, const FixContext& fixes, Candidates& out)
{
    if (!f.request)
        return;
    if (requestIsXlaTempArena(f))
        return; // the compiled step's temporaries, judged by diagnoseXlaProgram
    if (!f.limit || *f.limit == 0) {
        diagnoseRequestWithoutCard(f, fixes, out);
        return;
    }
    const uint64_t request = *f.request;
    const double share = safeRatio(request, *f.limit);
    if (share < 0.25)
        return;
    // How likely this one request, not the memory around it, is the problem: 0.35 at a quarter of the
    // card, 0.85 at three quarters; 0.9 when it is larger than everything the process may use.
    Diagnosis d = makeDiagnosis("large_allocation", 0.35 + 0.5 * clamp01((share - 0.25) / 0.5), {});
    if (request > *f.limit) {
        d.confidence = 0.9;
        addEvidence(d,
            "the single " + formatBytes(request) + " request is larger than the whole " + formatBytes(*f.limit)
                + (f.allowed ? " allowed to this process" : " card"));
        d.summary
            = "One tensor of " + formatBytes(request) + " cannot fit on a " + formatBytes(*f.limit) + " card at all.";
        out.strongestFullExplanation = std::max(out.strongestFullExplanation, d.confidence);
    } else {
        addEvidence(d,
            "one request of " + formatBytes(request) + " is " + percentText(request, *f.limit) + " of the "
                + formatBytes(*f.limit) + (f.allowed ? " this process may use" : " card"));
        d.summary = "A single tensor of " + formatBytes(request) + " takes " + percentText(request, *f.limit)
            + " of the card: typically an attention score matrix or a whole batch processed at once.";
    }
    if (f.phase == Phase::Eval)
        appendFixes(d.fixes, { FixKind::EvalBatchSize }, fixes);
    appendFixes(d.fixes, { FixKind::MicroBatch, FixKind::Bf16, FixKind::Sdpa, FixKind::ShorterSequences }, fixes);
    out.add(std::move(d));
}

// IPEX refuses any single block above 4 GB on some Intel GPUs: a limit of the platform, not full
// memory. The message states it in words, so the diagnosis is certain (0.95) and nothing else is
// considered: the card was not exhausted.
Diagnosis diagnosePlatformLimit(const OomFacts& f, const FixContext& fixes)
{
    const uint64_t limit = *f.platformLimit;
    Diagnosis d = makeDiagnosis("large_allocation", 0.95, {});
    d.title = "One request is larger than the platform allows in one block";
    addEvidence(d,
        "the platform refuses any single allocation above " + formatBytes(limit) + " (\"Current platform can NOT "
            + "allocate memory block with size larger than 4GB\"), and this request was " + formatBytes(*f.request));
    if (f.total && f.allocated)
        addEvidence(d,
            "the card was not full: " + formatBytes(*f.allocated) + " allocated of " + formatBytes(*f.total)
                + "; a platform limit, not exhausted memory, refused it");
    d.summary = "Intel's XPU runtime on this GPU cannot allocate one block larger than " + formatBytes(limit) + "; the "
        + formatBytes(*f.request) + " tensor has to be split, whatever memory is free.";
    d.fixes.push_back(Fix { "split_tensor", "Split the tensor into pieces below the per-block limit",
        "Process the batch, the sequence or the attention heads in chunks so that no single tensor passes "
            + formatBytes(limit) + ". Memory that is free does not help: the limit is per allocation.",
        "# chunk the work so each piece stays under the limit\n"
        "outs = [model(chunk) for chunk in batch.split(batch.shape[0] // 4)]\n"
        "out = torch.cat(outs)",
        std::nullopt, std::nullopt, false });
    appendFixes(d.fixes, { FixKind::MicroBatch, FixKind::Sdpa, FixKind::ShorterSequences }, fixes);
    return d;
}

// XLA prints the compiled program's own accounting after RESOURCE_EXHAUSTED. When its temporaries
// (activations and intermediates of the step) are most of it, activation fixes are the way: 0.6, as
// the compiler measured it but the card's size may be unknown; 0.85 when that total is known to
// exceed what the allocator may use. When parameters dominate, the model state itself is the load.
void diagnoseXlaProgram(const OomFacts& f, const FixContext& fixes, Candidates& out)
{
    if (!f.xlaBuffers || !f.xlaBuffers->totalBytes || *f.xlaBuffers->totalBytes == 0)
        return;
    const XlaBufferStats& stats = *f.xlaBuffers;
    const uint64_t total = *stats.totalBytes;
    const uint64_t temp = stats.tempBytes.value_or(0);
    const uint64_t parameters = stats.parameterBytes.value_or(0);
    const bool tempDominates = temp * 2 >= total;
    // Temporaries asked for as one arena are one large request in the catalogue's terms; its fixes
    // (smaller batch, rematerialisation) are the activation ones either way.
    const bool arena = tempDominates && requestIsXlaTempArena(f);
    Diagnosis d = makeDiagnosis(arena ? "large_allocation" : "capacity", 0.6, {});
    d.title = tempDominates ? "The compiled step's temporaries do not fit" : "The program's inputs fill the card";
    addEvidence(d,
        "XLA's buffer assignment: the program needs " + formatBytes(total) + " at once: " + formatBytes(parameters)
            + " of parameters (weights, optimizer state, the batch), " + formatBytes(temp)
            + " of temporaries (activations and intermediates)"
            + (stats.liveOutBytes ? ", " + formatBytes(*stats.liveOutBytes) + " of outputs" : std::string()));
    if (requestIsXlaTempArena(f))
        addEvidence(d,
            "the failing " + formatBytes(*f.request)
                + " request is the temporaries' single arena, not one large tensor: XLA allocates them together");
    if (f.limit && total > *f.limit) {
        d.confidence = 0.85;
        addEvidence(d,
            "that is more than the " + formatBytes(*f.limit) + " the allocator may use (" + percentText(total, *f.limit)
                + ")");
    }
    if (tempDominates) {
        d.summary = "The jitted step's intermediates take " + percentText(temp, total) + " of the " + formatBytes(total)
            + " it needs: a smaller batch or rematerialisation (jax.checkpoint) cuts them.";
        appendFixes(d.fixes, { FixKind::MicroBatch, FixKind::Checkpointing, FixKind::Bf16, FixKind::Sdpa }, fixes);
    } else {
        d.summary = "The program's inputs (weights, optimizer state, batch) take " + percentText(parameters, total)
            + " of the " + formatBytes(total) + " it needs.";
        appendFixes(d.fixes, { FixKind::Optimizer8bit, FixKind::Zero, FixKind::Offload, FixKind::MicroBatch }, fixes);
    }
    out.strongestFullExplanation = std::max(out.strongestFullExplanation, d.confidence);
    out.add(std::move(d));
}

void diagnoseMemoryFraction(const OomFacts& f, const FixContext& fixes, Candidates& out)
{
    if (f.allowed && f.total && *f.allowed < *f.total - *f.total / 50) {
        const uint64_t allowed = *f.allowed;
        const uint64_t held = f.reserved.value_or(f.allocated.value_or(0));
        const uint64_t request = f.request.value_or(0);
        const bool cardHadRoom = !f.free || *f.free >= request;
        // The message prints the limit: certain it was reached (0.9) when the card itself had room for
        // the request; when the card was full as well, lifting the cap alone may not be enough (0.6).
        Diagnosis d = makeDiagnosis("memory_fraction_cap", cardHadRoom ? 0.9 : 0.6, {});
        addEvidence(d,
            "a per-process limit of " + formatBytes(allowed) + " is set (\"" + formatBytes(allowed)
                + " allowed\"): " + percentText(allowed, *f.total) + " of the " + formatBytes(*f.total) + " card");
        if (request > 0)
            addEvidence(d,
                "PyTorch holds " + formatBytes(held) + "; with the " + formatBytes(request)
                    + " request it would pass the limit");
        if (f.free)
            addEvidence(d,
                "the card itself " + std::string(cardHadRoom ? "still had " : "had only ") + formatBytes(*f.free)
                    + " free");
        d.summary = "This process may use only " + formatBytes(allowed) + " of the " + formatBytes(*f.total) + " card"
            + (cardHadRoom ? ", and the card itself had room for the request." : "; the card was nearly full as well.");
        out.strongestFullExplanation = std::max(out.strongestFullExplanation, d.confidence);
        appendFixes(d.fixes, { FixKind::MemoryFraction }, fixes);
        out.add(std::move(d));
        return;
    }
    // 2.1's template omitted the allowed clause (and T0 predates it): a cap then shows only as a
    // refusal with the card free. The caching allocator asks the driver only after releasing its
    // cache, so with the free memory reported several times the request the driver would have
    // served it: only a limit inside the process refuses that.
    if (!f.preAllowedClause || !f.total || !f.free || !f.request || !f.reserved)
        return;
    const uint64_t total = *f.total;
    const uint64_t request = *f.request;
    if (*f.free < request + 64 * MiB || safeRatio(*f.free, total) < 0.1)
        return;
    const bool plentyFree = *f.free >= 4 * request && *f.free >= 4 * GiB;
    const double low = safeRatio(*f.reserved, total);
    const double high = safeRatio(*f.reserved + request, total);
    int roundPercent = 0;
    for (int percentStep = 10; percentStep <= 95; percentStep += 5) {
        const double fraction = percentStep / 100.0;
        if (fraction > low - 0.01 && fraction <= high + 0.01) {
            roundPercent = percentStep;
            break;
        }
    }
    if (!roundPercent && !plentyFree)
        return;
    // Near-certain (0.9) with gigabytes free, several times the request, and PyTorch stopped at a
    // round fraction of the card; 0.75 when the fraction is not a round one (any value can be set);
    // 0.6 on a round fraction with less to spare. NVML's "not available" figures mean Windows' WDDM
    // or a container, where free-memory reports are loose: those count for less.
    double confidence = roundPercent ? (plentyFree ? 0.9 : 0.6) : 0.75;
    if (f.garbageProcessNumbers)
        confidence *= 0.6;
    if (safeRatio(*f.free, total) < 0.3)
        confidence *= 0.8;
    Diagnosis d = makeDiagnosis("memory_fraction_cap", confidence, {});
    addEvidence(d,
        formatBytes(*f.free) + " of the " + formatBytes(total) + " card was free, "
            + (plentyFree ? "several times" : "more than") + " the " + formatBytes(request)
            + " request, yet the allocator refused it after releasing its cache");
    if (roundPercent) {
        const std::string fraction
            = roundPercent % 10 == 0 ? std::to_string(roundPercent / 10) : std::to_string(roundPercent);
        addEvidence(d,
            "PyTorch stopped at " + formatBytes(*f.reserved) + " reserved, just under " + std::to_string(roundPercent)
                + "% of the card: the signature of set_per_process_memory_fraction(0." + fraction
                + "), which this message format does not print");
    } else {
        addEvidence(d,
            "PyTorch stopped at " + formatBytes(*f.reserved) + " reserved (" + percentText(*f.reserved, total)
                + " of the card): a limit this message format does not print");
    }
    if (f.garbageProcessNumbers)
        addEvidence(d, "NVML could not report process memory (WDDM or a container): free-memory figures may be loose");
    out.strongestFullExplanation = std::max(out.strongestFullExplanation, confidence);
    d.summary = "The card had " + formatBytes(*f.free) + " free, yet a " + formatBytes(request)
        + " request was refused: a per-process memory fraction, not the card, ran out.";
    appendFixes(d.fixes, { FixKind::MemoryFraction }, fixes);
    out.add(std::move(d));
}

void diagnoseOtherProcess(const OomFacts& f, const FixContext& fixes, Candidates& out)
{
    if (!f.total || f.inconsistent)
        return;
    const uint64_t total = *f.total;
    const uint64_t request = f.request.value_or(0);
    Diagnosis d = makeDiagnosis("other_process", 0.0, {});
    double confidence = 0.0;
    if (f.otherProcessBytes > 0 && (f.otherProcessBytes >= GiB || safeRatio(f.otherProcessBytes, total) >= 0.02)) {
        // How likely the memory other processes hold is what this run was missing: 0.3 for a few
        // percent of the card, 0.75 from 30% up; +0.15 when the request would have fit in it plus the
        // free memory, -0.1 when it would not have fit even without them.
        confidence = 0.3 + 0.45 * clamp01(safeRatio(f.otherProcessBytes, total) / 0.3);
        std::string who = f.otherPids.size() == 1 ? "process " + std::to_string(f.otherPids.front())
                                                  : std::to_string(f.otherPids.size()) + " other processes";
        if (f.otherPids.empty())
            who = "other processes";
        addEvidence(d,
            who + (f.otherPids.size() == 1 ? " holds " : " hold ") + formatBytes(f.otherProcessBytes) + " of the "
                + formatBytes(total) + " card (" + percentText(f.otherProcessBytes, total) + ")");
        if (f.free && request > 0) {
            // A new segment needs the request in one piece of free memory; split cache does not add to it.
            const uint64_t room = *f.free;
            if (room < request && room + f.otherProcessBytes >= request) {
                confidence += 0.15;
                addEvidence(d,
                    std::string(f.otherPids.size() == 1 ? "without it" : "without them") + " the "
                        + formatBytes(request) + " request would have fit: " + formatBytes(*f.free) + " free + "
                        + formatBytes(f.otherProcessBytes));
                out.strongestFullExplanation = std::max(out.strongestFullExplanation, confidence);
            } else if (room + f.otherProcessBytes < request) {
                confidence -= 0.1;
            }
        }
        d.summary
            = "Another process holds " + formatBytes(f.otherProcessBytes) + " on this GPU, memory this run counted on.";
    }
    if (const auto unattributed = f.unattributedOutsideBytes(); unattributed && *unattributed > cudaContextAllowance) {
        const uint64_t beyondContext = *unattributed - cudaContextAllowance;
        const double share = safeRatio(beyondContext, total);
        if (beyondContext >= GiB / 2 && share >= 0.15) {
            // Inferred from arithmetic, no process named: 0.35 at 15% of the card unaccounted, 0.7 at 60%.
            const double implicit = 0.35 + 0.35 * clamp01((share - 0.15) / 0.45);
            confidence = std::max(confidence, implicit);
            addEvidence(d,
                formatBytes(*f.outsideBytes) + " of the " + formatBytes(total) + " card ("
                    + percentText(*f.outsideBytes, total) + ") is in use outside PyTorch's "
                    + formatBytes(f.reserved.value_or(0))
                    + " cache: total − free − reserved, far more than a CUDA context (0.3-1 GiB)");
            if (f.free && *f.free < request && *f.free + beyondContext >= request)
                out.strongestFullExplanation = std::max(out.strongestFullExplanation, implicit);
            if (d.summary.empty())
                d.summary = formatBytes(*f.outsideBytes)
                    + " of the card is used by something other than this run's PyTorch cache: "
                    + "most likely another process, or the job landed on a busy GPU.";
        }
    }
    if (f.selfNonPyTorchBytes && *f.selfNonPyTorchBytes >= 3 * GiB / 2
        && safeRatio(*f.selfNonPyTorchBytes, total) >= 0.1) {
        // This run's own memory outside the allocator: worth knowing, rarely the whole story (0.3).
        confidence = std::max(confidence, 0.3);
        addEvidence(d,
            "this process itself holds " + formatBytes(*f.selfNonPyTorchBytes)
                + " outside PyTorch's cache (process usage "
                + formatBytes(f.selfProcessBytes.value_or(*f.selfNonPyTorchBytes)) + " − reserved "
                + formatBytes(f.reserved.value_or(0))
                + "): CUDA context, cuDNN/cuBLAS workspaces, NCCL buffers or another library");
        if (d.summary.empty())
            d.summary = "This process holds " + formatBytes(*f.selfNonPyTorchBytes)
                + " on the GPU outside PyTorch's allocator.";
    }
    if (confidence <= 0)
        return;
    if (f.garbageProcessNumbers)
        addEvidence(d, "the message also lists an impossible process figure (NVML's \"not available\" value), ignored");
    d.confidence = confidence;
    appendFixes(d.fixes, { FixKind::StopOtherProcess, FixKind::ChooseGpu }, fixes);
    out.add(std::move(d));
}

void diagnoseCapacity(const OomFacts& f, const FixContext& fixes, Candidates& out)
{
    if (!f.limit || !f.request || !f.allocated || *f.limit == 0 || f.inconsistent)
        return;
    const uint64_t limit = *f.limit;
    const uint64_t request = *f.request;
    const uint64_t allocated = *f.allocated;
    const uint64_t room = f.free.value_or(0) + f.reservedUnallocated.value_or(0);
    // It would have fit with real headroom, a tenth of the card: capacity is not the story. Less
    // than that is the slack a full card always has (rounding, split blocks, the last batch).
    if (f.free && room >= request && safeRatio(room, limit) >= 0.1)
        return;
    // How likely the live tensors simply need more than the card: 0.25 with 40% of it live, 0.7 when
    // it is nine tenths full; discounted by a rule that explains the failure fully, and by a phase
    // case that names what filled it. A message cannot tell the bands apart, so never above 0.7.
    const double filled = safeRatio(allocated, limit);
    double confidence = 0.25 + 0.45 * clamp01((filled - 0.4) / 0.5);
    confidence *= (1.0 - 0.5 * out.strongestFullExplanation) * out.capacityDamping;
    Diagnosis d = makeDiagnosis("capacity", confidence, {});
    d.title = "Live tensors fill the card";
    addEvidence(d,
        "live tensors take " + formatBytes(allocated) + " of the " + formatBytes(limit)
            + (f.allowed ? " allowed" : " card") + " (" + percentText(allocated, limit) + ")");
    if (f.free)
        addEvidence(d,
            "the " + formatBytes(request) + " request is more than the " + formatBytes(*f.free) + " free plus "
                + formatBytes(f.reservedUnallocated.value_or(0)) + " cached but unused");
    addEvidence(d,
        "a message cannot tell parameters, gradients, optimizer state and activations apart: a snapshot would show "
        "which band to cut");
    d.summary = "Live tensors take " + percentText(allocated, limit) + " of the card and the next "
        + formatBytes(request) + " does not fit: the run needs less memory, not a tidier cache.";
    if (f.phase == Phase::Load)
        appendFixes(d.fixes, { FixKind::LoadToCpu }, fixes);
    appendLadder(d.fixes, fixes);
    if (f.backend == "mps")
        appendFixes(d.fixes, { FixKind::MpsWatermark }, fixes);
    out.add(std::move(d));
}

// A traceback shows where the run failed, not what filled the card, so a phase case read from text
// stays at most 0.6: 0.35-0.45 for the phase alone, +0.1 when the card was full at the failure (the
// phase's own allocations tipped it), +0.1 for evaluation when live tensors held most of the card
// or the frames show a loop that gathers predictions.
// The log printed how many parameters train. Full training keeps every trainable weight and its
// gradient, at least 2 bytes each in 16 bits (4 B/param); AdamW adds two fp32 moments (8 B/param).
// When 4 B/param exceed what the process may hold, the run can never train here (0.9); when AdamW's
// 12 B/param do, it cannot train with AdamW (0.75). Activation fixes cannot help either way.
void diagnoseProjectedState(const OomFacts& f, const FixContext& fixes, Candidates& out)
{
    if (!f.trainableParameters || !f.limit || *f.limit == 0)
        return;
    const uint64_t parameters = *f.trainableParameters;
    if (parameters > (uint64_t(1) << 50) / 16)
        return;
    const uint64_t floor = 4 * parameters;
    const uint64_t adam = 12 * parameters;
    if (adam <= *f.limit)
        return;
    const bool never = floor > *f.limit;
    Diagnosis d = makeDiagnosis("capacity", never ? 0.9 : 0.75, {});
    addEvidence(d,
        "the log reports " + std::to_string(parameters) + " trainable parameters: their 16-bit weights and gradients "
            + "alone need " + formatBytes(floor) + " (4 bytes each), and with AdamW's two fp32 moments "
            + formatBytes(adam) + " (12 bytes each), against the " + formatBytes(*f.limit)
            + (f.allowed ? " this process may use" : " card"));
    if (f.phase == Phase::Backward || f.phase == Phase::Forward)
        addEvidence(d,
            "it failed before the optimizer state exists, but the first optimizer step would need it: activation "
            "fixes cannot make this run fit");
    d.summary = never ? "Training " + formatBytes(floor) + " of weights and gradients cannot fit on a "
            + formatBytes(*f.limit) + " card at all: shard them or train adapters."
                      : "Weights, gradients and AdamW's state (" + formatBytes(adam) + ") exceed the "
            + formatBytes(*f.limit) + " card: shrink the optimizer state or shard it.";
    if (!never)
        appendFixes(d.fixes, { FixKind::Optimizer8bit }, fixes);
    appendFixes(d.fixes, { FixKind::Zero, FixKind::Offload, FixKind::Lora, FixKind::Optimizer8bit }, fixes);
    out.strongestFullExplanation = std::max(out.strongestFullExplanation, d.confidence);
    out.add(std::move(d));
}

// The loop's own progress log. Memory that grows at every logged step while the batch stays the
// same is references kept across steps (0.7: the log is the user's, its figures may be peaks).
// A failing step whose sequence is at least twice any logged before it is the longest batch (0.7):
// attention buffers grow with its square.
void diagnoseMemoryLog(const OomFacts& f, const FixContext& fixes, Candidates& out)
{
    std::vector<const MemoryLogPoint*> sized;
    for (const auto& point : f.memoryLog) {
        if (point.bytes)
            sized.push_back(&point);
    }
    if (sized.size() >= 3) {
        bool growing = true;
        bool sameBatch = true;
        for (size_t i = 1; i < sized.size(); ++i) {
            growing = growing && sized[i]->step > sized[i - 1]->step && *sized[i]->bytes > *sized[i - 1]->bytes;
            sameBatch = sameBatch && sized[i]->batch == sized[0]->batch;
        }
        const uint64_t first = *sized.front()->bytes;
        const uint64_t last = *sized.back()->bytes;
        if (growing && sameBatch && last >= first + first / 5) {
            const int64_t steps = sized.back()->step - sized.front()->step;
            Diagnosis d = makeDiagnosis("leak", 0.7, {});
            addEvidence(d,
                "the log's own memory figure grew at every one of " + std::to_string(sized.size())
                    + " logged steps: " + formatBytes(first) + " at step " + std::to_string(sized.front()->step) + ", "
                    + formatBytes(last) + " at step " + std::to_string(sized.back()->step) + " (+"
                    + formatBytes((last - first) / static_cast<uint64_t>(std::max<int64_t>(steps, 1)) * 100)
                    + " per 100 steps)"
                    + (sized.front()->batch.empty() ? std::string() : " with the same batch " + sized.front()->batch));
            d.summary = "Memory grows step after step at a constant batch: something keeps references across "
                        "iterations (a loss kept with its graph, outputs appended to a list).";
            appendFixes(d.fixes, { FixKind::ReleaseReferences }, fixes);
            out.add(std::move(d));
        }
    }
    const MemoryLogPoint* failing = nullptr;
    uint64_t longestBefore = 0;
    for (const auto& point : f.memoryLog) {
        if (!point.sequenceLength)
            continue;
        if (failing)
            longestBefore = std::max(longestBefore, *failing->sequenceLength);
        failing = &point;
    }
    if (failing && longestBefore > 0 && *failing->sequenceLength >= 2 * longestBefore) {
        Diagnosis d = makeDiagnosis("longest_batch", 0.7, {});
        addEvidence(d,
            "the failing step " + std::to_string(failing->step) + " has sequence length "
                + std::to_string(*failing->sequenceLength) + ", "
                + std::to_string(*failing->sequenceLength / longestBefore) + "x the longest logged before it ("
                + std::to_string(longestBefore) + "): attention buffers grow with its square");
        d.summary = "One batch is much longer than the rest; the run fits its usual batches, not this one.";
        appendFixes(d.fixes,
            { FixKind::LengthBucketing, FixKind::Sdpa, FixKind::MicroBatch, FixKind::ShorterSequences }, fixes);
        out.add(std::move(d));
    }
}

void diagnosePhase(const OomFacts& f, const FixContext& fixes, Candidates& out)
{
    const bool cardFull = f.request && f.free && *f.free + f.reservedUnallocated.value_or(0) < *f.request;
    const double fullBonus = cardFull ? 0.1 : 0.0;
    const bool mostlyLive = f.allocated && f.limit && safeRatio(*f.allocated, *f.limit) >= 0.5;
    const std::string where = f.phaseEvidence.empty() ? std::string() : " (" + f.phaseEvidence + ")";
    switch (f.phase) {
    case Phase::Backward: {
        Diagnosis d = makeDiagnosis("first_backward", 0.4 + fullBonus,
            "The failure is in backward, where gradients are allocated while every saved "
            "activation is still alive; the text alone cannot tell whether it is the first step.");
        addEvidence(d, "the traceback shows the failure in backward" + where);
        out.capacityDamping = 0.85;
        appendFixes(d.fixes,
            { FixKind::MicroBatch, FixKind::Bf16, FixKind::Checkpointing, FixKind::ExpandableSegments }, fixes);
        out.add(std::move(d));
        break;
    }
    case Phase::Optimizer: {
        Diagnosis d = makeDiagnosis("optimizer_step2", 0.45 + fullBonus,
            "The failure is in optimizer.step(): Adam allocates its two state buffers "
            "(8 bytes per parameter) at the first step, on top of weights and gradients.");
        addEvidence(d, "the traceback shows the failure in the optimizer step" + where);
        out.capacityDamping = 0.85;
        appendFixes(
            d.fixes, { FixKind::OptimizerForeach, FixKind::Optimizer8bit, FixKind::Zero, FixKind::Offload }, fixes);
        out.add(std::move(d));
        break;
    }
    case Phase::Eval: {
        const bool accumulating = mentions(
            f, { "evaluation_loop", "prediction_loop", "nested_concat", "preds", "predict", "evaluate", "validat" });
        const double liveBonus = !cardFull && mostlyLive ? 0.1 : 0.0;
        Diagnosis d = makeDiagnosis("eval_accumulation", (accumulating ? 0.5 : 0.35) + fullBonus + liveBonus,
            "The failure is in evaluation: either outputs are collected on the GPU batch after batch, or "
            "the evaluation batch is larger than training's.");
        addEvidence(d, "the traceback shows the failure in evaluation / no-grad code" + where);
        if (accumulating)
            addEvidence(d, "the traceback passes through an evaluation loop that gathers predictions");
        if (mostlyLive)
            addEvidence(d,
                "live tensors held " + formatBytes(*f.allocated) + " of the " + formatBytes(*f.limit) + " ("
                    + percentText(*f.allocated, *f.limit)
                    + ") during evaluation, which needs no gradients or optimizer state: kept outputs are the "
                      "likely filler");
        // Training-side fixes (accumulation, checkpointing, sharding) do little for evaluation.
        out.capacityDamping = 0.6;
        appendFixes(d.fixes, { FixKind::EvalAccumulation, FixKind::EvalBatchSize }, fixes);
        out.add(std::move(d));
        break;
    }
    default:
        break;
    }
}

// The ranking rule of product.md §3: a diagnosis names the cause. In evaluation with live tensors
// holding most of the card, recovering split cache buys a batch or two while the outputs kept batch
// after batch go on growing, so the phase cause ranks above fragmentation.
void rankCauseOverSymptom(const OomFacts& f, std::vector<Diagnosis>& list)
{
    const auto isCause = [](const Diagnosis& d) {
        return d.id == "first_backward" || d.id == "optimizer_step2" || d.id == "eval_accumulation" || d.id == "leak"
            || d.id == "longest_batch";
    };
    auto phaseCase = list.end();
    for (auto it = list.begin(); it != list.end(); ++it) {
        if (isCause(*it) && (phaseCase == list.end() || it->confidence > phaseCase->confidence))
            phaseCase = it;
    }
    if (phaseCase != list.end()) {
        // From a message, capacity only says that live tensors fill the card; the phase (or the
        // log's growth, or its longest batch) says what filled it. Below that cause unless the state
        // itself was projected not to fit.
        for (auto& d : list) {
            const bool symptom = d.id == "capacity" && d.title == "Live tensors fill the card";
            if (symptom && d.confidence >= phaseCase->confidence)
                d.confidence = std::max(0.05, phaseCase->confidence - 0.05);
        }
        // In evaluation one large request is the outputs gathered at once (torch.cat of every batch's
        // logits, metrics over all predictions): the gathering is the cause.
        if (phaseCase->id == "eval_accumulation") {
            for (auto& d : list) {
                if (d.id == "large_allocation" && d.confidence >= phaseCase->confidence && f.request) {
                    d.confidence = std::max(0.05, phaseCase->confidence - 0.05);
                    addEvidence(d,
                        "ranked below eval_accumulation: in evaluation a single " + formatBytes(*f.request)
                            + " request is typically the outputs of every batch gathered at once");
                }
            }
        }
    }
    if (f.phase != Phase::Eval || !f.allocated || !f.limit || safeRatio(*f.allocated, *f.limit) < 0.5)
        return;
    const auto eval
        = std::find_if(list.begin(), list.end(), [](const Diagnosis& d) { return d.id == "eval_accumulation"; });
    const auto fragmentation
        = std::find_if(list.begin(), list.end(), [](const Diagnosis& d) { return d.id == "fragmentation"; });
    if (eval == list.end() || fragmentation == list.end() || fragmentation->confidence < eval->confidence)
        return;
    fragmentation->confidence = std::max(0.05, eval->confidence - 0.05);
    addEvidence(*fragmentation,
        "ranked below eval_accumulation: live tensors take " + percentText(*f.allocated, *f.limit)
            + " of the card during evaluation; making the split cache usable would let this request through, but "
              "outputs kept batch after batch would fill it again before the evaluation ends");
}

// Class of its own: the "other" process in the message is this run seen from outside its container.
void explainContainerSelf(const OomFacts& f, Diagnosis& top)
{
    const uint64_t self = f.selfProcessBytes.value_or(0);
    const uint64_t reserved = f.reserved.value_or(0);
    std::string text = "process " + std::to_string(*f.inferredSelfPid) + " (" + formatBytes(self)
        + ") is most likely this run itself: it holds PyTorch's " + formatBytes(reserved) + " reserved";
    if (self > reserved)
        text += " plus " + formatBytes(self - reserved) + ", the size of a CUDA context and library workspaces";
    text += ", and no line says \"this process\": inside a container NVML reports host PIDs, which PyTorch cannot "
            "match to its own. Compare nvidia-smi inside the container with nvidia-smi on the host to confirm";
    top.evidence.insert(top.evidence.begin(), { text, std::nullopt });
}

} // namespace

GpuCount textGpuCount(const TextFindings& findings)
{
    std::vector<int> ranks = findings.launcherRanks;
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    if (ranks.size() >= 2) {
        // Ranks 0-7 in the prefixes: at least 8 ranks, even if some never printed anything.
        const int count = std::max(static_cast<int>(ranks.size()), ranks.back() + 1);
        return { count,
            "the log's line prefixes name ranks " + std::to_string(ranks.front()) + " to "
                + std::to_string(ranks.back()) };
    }
    size_t gpus = 0;
    for (const auto& table : findings.nvidiaSmi)
        gpus = std::max(gpus, table.gpus.size());
    if (gpus >= 2)
        return { static_cast<int>(gpus), "nvidia-smi lists " + std::to_string(gpus) + " GPUs" };
    return {};
}

std::string expandableSegmentsSource(const TextFindings& findings)
{
    for (auto it = findings.allocConfs.rbegin(); it != findings.allocConfs.rend(); ++it) {
        if (it->expandableSegments())
            return it->source + " \"" + it->raw + "\""
                + (it->sourceLine > 0 ? " at line " + std::to_string(it->sourceLine) : "");
    }
    return {};
}

FixContext textFixContext(const OomFacts& facts, const TextFindings& context)
{
    FixContext fixes;
    fixes.backend = facts.backend.empty() ? "cuda" : facts.backend;
    if (!context.allocConfs.empty()) {
        const AllocConfSetting& last = context.allocConfs.back();
        fixes.expandableSegmentsOn = last.expandableSegments();
        fixes.maxSplitSizeSet = last.maxSplitSizeMb().has_value();
        fixes.asyncAllocator = last.backend() == "cudaMallocAsync";
    }
    fixes.asyncAllocator = fixes.asyncAllocator || facts.asyncAllocator;
    fixes.preExpandableTorch = facts.preExpandableTorch;
    fixes.otherProcessBytes = facts.otherProcessBytes;
    fixes.allowedBytes = facts.allowed;

    MemoryBudget& budget = fixes.budget;
    const GpuCount gpus = textGpuCount(context);
    budget.gpuCount = gpus.count;
    budget.gpuCountEvidence = gpus.evidence;
    budget.liveBytes = facts.allocated.value_or(0);
    budget.request = facts.request.value_or(0);
    budget.fragmentedBytes = facts.reservedUnallocated.value_or(0);
    if (facts.reserved && facts.free)
        budget.usableBytes = *facts.reserved + *facts.free;
    return fixes;
}

std::vector<Diagnosis> diagnoseOomMessage(const OomMessage& message, const TextFindings& context)
{
    OomFacts facts = oomFacts(message);
    addNvidiaSmi(facts, context.nvidiaSmi);
    FixContext fixes = textFixContext(facts, context);

    if (facts.platformLimit && facts.request && *facts.request > *facts.platformLimit)
        return { diagnosePlatformLimit(facts, fixes) };

    Candidates out;
    diagnoseMemoryFraction(facts, fixes, out);
    diagnoseProjectedState(facts, fixes, out);
    diagnoseXlaProgram(facts, fixes, out);
    diagnoseFragmentation(facts, context, fixes, out);
    diagnoseLargeAllocation(facts, fixes, out);
    diagnoseOtherProcess(facts, fixes, out);
    diagnosePhase(facts, fixes, out);
    diagnoseMemoryLog(facts, fixes, out);
    diagnoseCapacity(facts, fixes, out);
    rankCauseOverSymptom(facts, out.list);

    if (out.list.empty() && message.backend != "cpu") {
        // Nothing measurable: still say what is known and point at the inputs that would tell more.
        Diagnosis d = makeDiagnosis("capacity", 0.25,
            "The message carries no allocator numbers to judge by; the usual remedies "
            "apply, and a memory snapshot would show which band to cut.");
        d.title = "Live tensors fill the card";
        addEvidence(d,
            facts.request
                ? "the failing request was " + formatBytes(*facts.request) + "; the card's size is not in the message"
                : "the message gives no sizes (" + (message.templateId.empty() ? message.backend : message.templateId)
                    + ")");
        if (facts.phase == Phase::Load)
            appendFixes(d.fixes, { FixKind::LoadToCpu }, fixes);
        appendLadder(d.fixes, fixes);
        out.add(std::move(d));
    }
    if (facts.probable) {
        for (auto& d : out.list) {
            d.confidence *= 0.6;
            addEvidence(d,
                "a near-OOM error (" + (message.templateId.empty() ? message.backend : message.templateId)
                    + "), not the allocator's own message: memory was probably exhausted, but it is not certain");
        }
    }
    if (facts.inconsistent)
        for (auto& d : out.list)
            addEvidence(d,
                "the message's numbers do not add up (more in use than the card holds): unified memory or WSL reports "
                "them loosely");
    sortDiagnoses(out.list);
    if (facts.inferredSelfPid && !out.list.empty())
        explainContainerSelf(facts, out.list.front());
    return out.list;
}

std::vector<Diagnosis> diagnoseText(const TextFindings& findings)
{
    std::vector<Diagnosis> result;
    const auto& messages = findings.oomMessages;
    if (!messages.empty()) {
        result = diagnoseOomMessage(messages.back(), findings);
        for (size_t i = messages.size() - 1; i-- > 0;) {
            auto earlier = diagnoseOomMessage(messages[i], findings);
            const std::string where
                = messages[i].sourceLine > 0 ? " at line " + std::to_string(messages[i].sourceLine) : "";
            for (auto& d : earlier) {
                for (auto& e : d.evidence)
                    e.text = "earlier OOM" + where + ": " + e.text;
            }
            mergeDiagnoses(result, std::move(earlier), 0.7);
        }
        if (messages.size() > 1 && !result.empty())
            addEvidence(result.front(),
                std::to_string(messages.size()) + " OOM messages in the input; the last one is diagnosed first");
        sortDiagnoses(result);
        if (auto host = diagnoseHostMemory(findings)) {
            // A GPU out-of-memory message in the same input is the failure to fix first; a kill of the
            // host process may be its aftermath or a second problem, ranked after it.
            const double ceiling = result.empty() ? host->confidence : result.front().confidence - 0.05;
            host->confidence = std::clamp(std::min(host->confidence, ceiling), 0.05, 0.97);
            addEvidence(*host,
                "the input also holds a GPU out-of-memory message (line " + std::to_string(messages.back().sourceLine)
                    + "): that failure is diagnosed first");
            result.push_back(std::move(*host));
        }
    } else {
        // Summaries or tracebacks without a message: judge what they show.
        OomFacts facts;
        if (!findings.summaries.empty())
            facts.device = findings.summaries.back().device;
        for (const auto& traceback : findings.tracebacks) {
            if (traceback.phase != Phase::Unknown) {
                facts.phase = traceback.phase;
                facts.phaseEvidence = traceback.phaseEvidence;
                for (const auto& frame : traceback.frames)
                    facts.tracebackFunctions.push_back(frame.function);
            }
        }
        const FixContext fixes = textFixContext(facts, findings);
        Candidates out;
        diagnoseFragmentation(facts, findings, fixes, out);
        diagnosePhase(facts, fixes, out);
        for (auto& d : out.list)
            d.confidence *= 0.8; // no OOM message: the failure itself is not in view
        result = std::move(out.list);
        if (auto host = diagnoseHostMemory(findings))
            result.push_back(std::move(*host));
    }
    sortDiagnoses(result);
    return result;
}

} // namespace oomlens
