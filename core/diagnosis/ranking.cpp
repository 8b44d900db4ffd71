#include "core/diagnosis/ranking.h"

#include "core/diagnosis/catalogue.h"
#include "core/units.h"

#include <algorithm>
#include <cctype>

namespace oomlens {

namespace {

std::string firstFixTitle(const Diagnosis& diagnosis)
{
    if (diagnosis.fixes.empty())
        return "its first fix";
    std::string title = diagnosis.fixes.front().title;
    if (!title.empty())
        title[0] = static_cast<char>(std::tolower(static_cast<unsigned char>(title[0])));
    return "its first fix (" + title + ")";
}

// "evaluation batch" -> "evaluation batches", "step" -> "steps".
std::string plural(const std::string& unit, uint64_t count)
{
    if (count == 1)
        return unit;
    const bool sibilant = !unit.empty() && (unit.back() == 'h' || unit.back() == 's');
    return unit + (sibilant ? "es" : "s");
}

// Making split cache usable recovers a fixed amount once. Where the ranking found that recovery
// cannot carry the failing phase to its end, the same fix in any card's ladder (a working-set
// ladder too) lets this request through but not the run: it is not "fits".
void qualifyOneOffFixes(std::vector<Diagnosis>& candidates, const RunFacts& facts, const Diagnosis* grower)
{
    const bool recoveryFallsShort = std::any_of(candidates.begin(), candidates.end(), [](const Diagnosis& d) {
        return d.outlook && d.outlook->leadingFixFreesOnceBytes && d.outlook->leadingFixFitsRun == false;
    });
    if (!recoveryFallsShort)
        return;
    std::string why;
    if (grower)
        why = diagnosisIdText(grower->id) + " adds " + formatBytes(grower->outlook->growthPerUnitBytes) + " per "
            + grower->outlook->unit;
    else if (facts.phaseStillNeedsBytes)
        why = "the failing " + (facts.phase.empty() ? std::string("phase") : facts.phase) + " still has to allocate "
            + formatBytes(*facts.phaseStillNeedsBytes);
    else if (facts.phaseGrowthCause)
        why = diagnosisIdText(*facts.phaseGrowthCause) + " makes the failing phase need more than the steps before it";
    for (Diagnosis& d : candidates) {
        for (Fix& fix : d.fixes) {
            if ((fix.kind != FixKind::ExpandableSegments && fix.kind != FixKind::MaxSplitSize) || fix.fitsAfter != true)
                continue;
            fix.fitsAfter = false;
            fix.detail += " That lets this request through, not the run" + (why.empty() ? "" : ": " + why) + ".";
        }
    }
}

// A per-process cap (set_per_process_memory_fraction) is a budget someone chose, usually to share
// the card: within it the run still has a cause of its own, and that cause is what the user has to
// fix. The cap leads only when nothing in the workload explains the overflow; otherwise it follows
// the first workload cause, as the context of the failure and the cheapest fix if it was not meant.
void putCapAfterWorkloadCause(std::vector<Diagnosis>& diagnoses)
{
    const auto cap = std::find_if(
        diagnoses.begin(), diagnoses.end(), [](const Diagnosis& d) { return d.id == DiagnosisId::MemoryFractionCap; });
    if (cap == diagnoses.end())
        return;
    const auto cause = std::find_if(cap + 1, diagnoses.end(), [](const Diagnosis& d) {
        const bool outsideTheWorkload = isOutsideTheWorkload(d.id);
        const bool cannotFit = d.outlook && d.outlook->leadingFixFitsRun == false;
        return !outsideTheWorkload && !cannotFit && d.confidence >= 0.5;
    });
    if (cause == diagnoses.end())
        return;
    // Ranking runs per snapshot and again over the whole case: say it once.
    const bool said = std::any_of(cap->evidence.begin(), cap->evidence.end(),
        [](const Evidence& line) { return line.text.rfind("ranked after ", 0) == 0; });
    if (!said)
        cap->evidence.push_back({ "ranked after " + diagnosisIdText(cause->id)
                + ": the cap is the budget this process was given, and " + diagnosisIdText(cause->id)
                + " is what overflowed it; if the cap was not meant, raising it is the cheapest fix",
            std::nullopt });
    std::rotate(cap, cap + 1, cause + 1);
}

constexpr std::string_view rankedBelow = "ranked below ";

// A symptom whose cause the rules found stays below that cause: merging the text may have
// confirmed the symptom's own numbers (the split cache is real), not made it the cause.
void keepExplainedBelowTheirCause(std::vector<Diagnosis>& diagnoses)
{
    for (Diagnosis& d : diagnoses) {
        for (const Evidence& line : d.evidence) {
            const std::string_view text = line.text;
            const size_t mark = text.find(explainsItMark);
            if (!text.starts_with(rankedBelow) || mark == std::string_view::npos)
                continue;
            const std::string_view causeId = text.substr(rankedBelow.size(), mark - rankedBelow.size());
            for (const Diagnosis& cause : diagnoses) {
                if (&cause != &d && diagnosisIdText(cause.id) == causeId && d.confidence > cause.confidence - 0.05)
                    d.confidence = std::max(0.05, cause.confidence - 0.05);
            }
        }
    }
}

} // namespace

std::string explainedByLine(DiagnosisId cause, std::string_view why)
{
    return std::string(rankedBelow) + diagnosisIdText(cause) + std::string(explainsItMark) + std::string(why);
}

void assessRunFit(std::vector<Diagnosis>& candidates, const RunFacts& facts)
{
    // The cause that consumes memory fastest sets the pace of the failing phase.
    const Diagnosis* grower = nullptr;
    for (const Diagnosis& d : candidates) {
        if (d.outlook && d.outlook->growthPerUnitBytes > 0
            && (!grower || d.outlook->growthPerUnitBytes > grower->outlook->growthPerUnitBytes))
            grower = &d;
    }
    const bool stateTooBig = facts.usableBytes && facts.fixedStateBytes > *facts.usableBytes;
    for (Diagnosis& d : candidates) {
        if (!d.outlook)
            continue;
        RunOutlook& o = *d.outlook;
        if (stateTooBig && o.leadingFixFreesOnlyDynamic) {
            o.leadingFixFitsRun = false;
            o.rankReason = "ranked below a cause its fixes can remove: the state training keeps, "
                + facts.fixedStateText + ", exceeds the " + formatBytes(*facts.usableBytes)
                + " this process could hold, and " + firstFixTitle(d) + " frees only activations, temporaries or cache";
        } else if (grower && grower != &d && !o.leadingFixStopsGrowth && !o.leadingFixRaisesCeiling) {
            const RunOutlook& g = *grower->outlook;
            o.leadingFixFitsRun = false;
            // What the first fix frees once (its projected saving) against what the cause adds per unit.
            const auto saving = d.fixes.empty() ? std::nullopt : d.fixes.front().projectedSavingBytes;
            const uint64_t once = o.leadingFixFreesOnceBytes ? *o.leadingFixFreesOnceBytes
                : saving && *saving > 0                      ? static_cast<uint64_t>(*saving)
                                                             : 0;
            const uint64_t more = once / g.growthPerUnitBytes;
            o.rankReason = "ranked below " + diagnosisIdText(grower->id) + ": that cause adds "
                + formatBytes(g.growthPerUnitBytes) + " per " + g.unit + ", and " + firstFixTitle(d)
                + (once > 0 ? " frees " + formatBytes(once) + " once, about " + std::to_string(more) + " more "
                            + plural(g.unit, more) + " before the "
                            + (facts.phase.empty() ? std::string("phase") : facts.phase) + " fails again"
                            : " does not stop it");
        } else if (o.leadingFixFreesOnceBytes) {
            const uint64_t once = *o.leadingFixFreesOnceBytes;
            if (facts.phaseStillNeedsBytes && *facts.phaseStillNeedsBytes > once) {
                o.leadingFixFitsRun = false;
                o.rankReason = "not the cause: " + firstFixTitle(d) + " makes " + formatBytes(once)
                    + " usable once, and the failing " + (facts.phase.empty() ? std::string("phase") : facts.phase)
                    + " still has to allocate " + formatBytes(*facts.phaseStillNeedsBytes) + " (" + facts.phaseNeedText
                    + ")";
            } else if (facts.phaseGrowthCause && *facts.phaseGrowthCause != d.id && !o.leadingFixFreesForThePhase) {
                o.leadingFixFitsRun = false;
                o.rankReason = "ranked below " + diagnosisIdText(*facts.phaseGrowthCause) + ": that cause makes the "
                    + (facts.earlierStepsShowNeed
                            ? std::string("failing phase need more than the steps before it did")
                            : std::string("failing phase need more than the failure shows, and no earlier step "
                                          "shows how much"))
                    + ", so the " + formatBytes(once) + " " + firstFixTitle(d) + " makes usable once does not bound it";
            } else if (facts.phaseStillNeedsBytes) {
                o.leadingFixFitsRun = true;
                if (o.leadingFixFreesForThePhase)
                    d.evidence.push_back({ firstFixTitle(d) + " keeps " + formatBytes(once)
                            + " free for the rest of the failing phase, more than the "
                            + formatBytes(*facts.phaseStillNeedsBytes) + " it still has to allocate ("
                            + facts.phaseNeedText + "): the phase fits to its end",
                        std::nullopt });
            }
        } else if (o.leadingFixStopsGrowth && !d.fixes.empty()) {
            o.leadingFixFitsRun = d.fixes.front().fitsAfter;
        }
        if (o.leadingFixFitsRun == false && !o.rankReason.empty())
            d.evidence.push_back({ o.rankReason, std::nullopt });
    }
    qualifyOneOffFixes(candidates, facts, grower);
}

void rankDiagnoses(std::vector<Diagnosis>& diagnoses)
{
    keepExplainedBelowTheirCause(diagnoses);
    sortDiagnoses(diagnoses);
    std::stable_partition(diagnoses.begin(), diagnoses.end(),
        [](const Diagnosis& d) { return !(d.outlook && d.outlook->leadingFixFitsRun == false); });
    putCapAfterWorkloadCause(diagnoses);
    // Within a diagnosis, a fix projected not to make it fit never leads one that would.
    for (Diagnosis& d : diagnoses)
        std::stable_partition(
            d.fixes.begin(), d.fixes.end(), [](const Fix& fix) { return fix.fitsAfter != std::optional<bool>(false); });
}

} // namespace oomlens
