#include "core/diagnosis/textrules.h"

#include "core/diagnosis/catalogue.h"
#include "core/units.h"

#include <algorithm>

namespace oomlens::textrules {

namespace {

// The message prints the limit (the "allowed" clause), below the card by more than rounding.
bool limitPrinted(const OomFacts& f)
{
    return f.allowed && f.total && *f.allowed < *f.total - *f.total / 50;
}

void diagnosePrintedLimit(const OomFacts& f, const FixContext& fixes, Candidates& out)
{
    const uint64_t allowed = *f.allowed;
    const uint64_t held = f.reserved.value_or(f.allocated.value_or(0));
    const uint64_t request = f.request.value_or(0);
    const bool cardHadRoom = !f.free || *f.free >= request;
    // The message prints the limit: certain it was reached (0.9) when the card itself had room for
    // the request; when the card was full as well, lifting the cap alone may not be enough (0.6).
    Diagnosis d = makeDiagnosis(DiagnosisId::MemoryFractionCap, cardHadRoom ? 0.9 : 0.6, {});
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
}

// The round fraction of the card (10%, 15% ... 95%) PyTorch stopped just under: between what it had
// reserved and that plus the request. 0 when none is.
int roundPercentReached(const OomFacts& f)
{
    const double low = safeRatio(*f.reserved, *f.total);
    const double high = safeRatio(*f.reserved + *f.request, *f.total);
    for (int percentStep = 10; percentStep <= 95; percentStep += 5) {
        const double fraction = percentStep / 100.0;
        if (fraction > low - 0.01 && fraction <= high + 0.01)
            return percentStep;
    }
    return 0;
}

void unprintedLimitEvidence(const OomFacts& f, bool plentyFree, int roundPercent, Diagnosis& d)
{
    const uint64_t total = *f.total;
    addEvidence(d,
        formatBytes(*f.free) + " of the " + formatBytes(total) + " card was free, "
            + (plentyFree ? "several times" : "more than") + " the " + formatBytes(*f.request)
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
}

// 2.1's template omitted the allowed clause (and T0 predates it): a cap then shows only as a
// refusal with the card free. The caching allocator asks the driver only after releasing its
// cache, so with the free memory reported several times the request the driver would have
// served it: only a limit inside the process refuses that.
void diagnoseUnprintedLimit(const OomFacts& f, const FixContext& fixes, Candidates& out)
{
    if (!f.preAllowedClause || !f.total || !f.free || !f.request || !f.reserved)
        return;
    const uint64_t total = *f.total;
    const uint64_t request = *f.request;
    if (*f.free < request + 64 * MiB || safeRatio(*f.free, total) < 0.1)
        return;
    const bool plentyFree = *f.free >= 4 * request && *f.free >= 4 * GiB;
    const int roundPercent = roundPercentReached(f);
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
    Diagnosis d = makeDiagnosis(DiagnosisId::MemoryFractionCap, confidence, {});
    unprintedLimitEvidence(f, plentyFree, roundPercent, d);
    out.strongestFullExplanation = std::max(out.strongestFullExplanation, confidence);
    d.summary = "The card had " + formatBytes(*f.free) + " free, yet a " + formatBytes(request)
        + " request was refused: a per-process memory fraction, not the card, ran out.";
    appendFixes(d.fixes, { FixKind::MemoryFraction }, fixes);
    out.add(std::move(d));
}

} // namespace

void diagnoseMemoryFraction(const OomFacts& f, const FixContext& fixes, Candidates& out)
{
    if (limitPrinted(f))
        diagnosePrintedLimit(f, fixes, out);
    else
        diagnoseUnprintedLimit(f, fixes, out);
}

} // namespace oomlens::textrules
