#include "core/diagnosis/snapshotdiagnosis.h"

#include "core/diagnosis/catalogue.h"
#include "core/diagnosis/ranking.h"
#include "core/diagnosis/snapshotrules.h"
#include "core/units.h"

#include <algorithm>

namespace oomlens {

namespace {

// Runs the rules on one device's last OOM, then judges every candidate by whether its first fix
// makes the failing phase fit (ranking.h).
class DeviceDiagnoser
{
public:
    DeviceDiagnoser(const SnapshotAnalysis& analysis, const DeviceAnalysis& device, const OomAnalysis& oom,
        const SnapshotDiagnosisContext& context)
        : m_evidence(analysis, device, oom, context)
    { }

    std::vector<Diagnosis> run()
    {
        snapshotrules::fragmentation(m_evidence, m_out);
        snapshotrules::largeAllocation(m_evidence, m_out);
        snapshotrules::firstBackward(m_evidence, m_out);
        snapshotrules::capacityOrOptimizerStep2(m_evidence, m_out);
        snapshotrules::longestBatch(m_evidence, m_out);
        snapshotrules::evalAccumulation(m_evidence, m_out);
        snapshotrules::leak(m_evidence, m_out);
        snapshotrules::growingTensor(m_evidence, m_out);
        snapshotrules::memoryFraction(m_evidence, m_out);
        snapshotrules::otherProcess(m_evidence, m_out);
        snapshotrules::pendingFrees(m_evidence, m_out);
        snapshotrules::communicationBuffers(m_evidence, m_out);
        snapshotrules::graphCapture(m_evidence, m_out);
        snapshotrules::colocatedEngine(m_evidence, m_out);
        if (m_out.empty())
            snapshotrules::workingSet(m_evidence, m_out);
        RunFacts facts;
        facts.usableBytes = m_evidence.fixes.budget.usableBytes;
        // Only state no guess is needed for demotes a fix: see TrainingState::withoutUnseenOptimizer.
        facts.fixedStateBytes = m_evidence.state.withoutUnseenOptimizer();
        facts.fixedStateText = m_evidence.state.text();
        facts.phase = m_evidence.oom.phase == Phase::Eval ? "evaluation" : "training";
        projectPhaseNeed(facts);
        for (const Diagnosis& d : m_out) {
            const bool growsInPhase = d.id == DiagnosisId::LongestBatch || d.id == DiagnosisId::OptimizerStep2
                || d.id == DiagnosisId::FirstBackward || d.id == DiagnosisId::Leak
                || d.id == DiagnosisId::EvalAccumulation || d.id == DiagnosisId::Capacity;
            if (growsInPhase && d.confidence >= 0.5 && !facts.phaseGrowthCause)
                facts.phaseGrowthCause = d.id;
        }
        facts.earlierStepsShowNeed = !m_phaseNeedIsBound;
        assessRunFit(m_out, facts);
        demoteSymptomWithoutCause(facts);
        putWholePhaseCauseFirst();
        return std::move(m_out);
    }

private:
    // What the failing phase still has to allocate before it ends, projected from the step profile:
    // the rest of a typical step's dynamic peak (what other steps grew from their start, less what
    // this one already has), the gradients and optimizer state training has yet to create, and at
    // least the request that failed. Only a lower bound where no earlier step shows the rest.
    void projectPhaseNeed(RunFacts& facts)
    {
        const uint64_t request = m_evidence.oom.requestedBytes;
        uint64_t remaining = request;
        std::string text = formatBytes(request) + " request";
        m_phaseNeedIsBound = true;
        const bool training = m_evidence.oom.phase == Phase::Forward || m_evidence.oom.phase == Phase::Backward
            || m_evidence.oom.phase == Phase::Optimizer;
        if (training && m_evidence.oom.step >= 0) {
            std::vector<uint64_t> growth;
            for (const auto& step : m_evidence.profile.steps) {
                if (step.step != m_evidence.oom.step && step.complete && step.step >= m_evidence.firstTrainingStep()
                    && !step.hasEval)
                    growth.push_back(step.dynamicGrowth());
            }
            const StepProfile* failing = m_evidence.profile.step(m_evidence.oom.step);
            if (!growth.empty() && failing) {
                const uint64_t dynamicNow = dynamicBandBytes(m_evidence.oom.liveByCategory);
                const uint64_t already
                    = dynamicNow > failing->startDynamic() ? dynamicNow - failing->startDynamic() : 0;
                const uint64_t typical = median(growth);
                if (typical > already + request) {
                    remaining = typical - already;
                    text = "the rest of a typical step's " + formatBytes(typical) + " of activations and temporaries";
                }
                m_phaseNeedIsBound = false;
            }
        }
        if (training) {
            const uint64_t gradients = band(m_evidence.oom.liveByCategory, Category::Gradients);
            const uint64_t state = band(m_evidence.oom.liveByCategory, Category::OptimizerState);
            const uint64_t toCome
                = (m_evidence.state.gradients > gradients ? m_evidence.state.gradients - gradients : 0)
                + (m_evidence.state.optimizerState > state ? m_evidence.state.optimizerState - state : 0);
            if (toCome > 0) {
                remaining += toCome;
                text += ", plus " + formatBytes(toCome) + " of gradients and optimizer state still to be created";
            }
        }
        facts.phaseStillNeedsBytes = remaining;
        facts.phaseNeedText = text;
    }

    // Split cache blocks are at almost every OOM; recovering them is the fix only when that makes
    // the phase fit. When the ranking shows it would not, or the phase's need is only a lower bound
    // and the recovered bytes are not well above it, fragmentation describes the failure but is no
    // cause: its confidence says so, and with no other cause the working set is named.
    void demoteSymptomWithoutCause(const RunFacts& facts)
    {
        auto fragmentation = std::find_if(
            m_out.begin(), m_out.end(), [](const Diagnosis& d) { return d.id == DiagnosisId::Fragmentation; });
        if (fragmentation == m_out.end() || !fragmentation->outlook)
            return;
        const RunOutlook& o = *fragmentation->outlook;
        const bool othersCanFit = std::any_of(m_out.begin(), m_out.end(), [](const Diagnosis& d) {
            return d.id != DiagnosisId::Fragmentation && !(d.outlook && d.outlook->leadingFixFitsRun == false);
        });
        if (o.leadingFixFitsRun == false) {
            if (!othersCanFit) {
                fragmentation->confidence = std::min(fragmentation->confidence, 0.35);
                snapshotrules::workingSet(m_evidence, m_out);
            }
            return;
        }
        const uint64_t once = o.leadingFixFreesOnceBytes.value_or(0);
        // A cache splits what it has when it cannot reserve more. With memory held outside the
        // process, no new segment could be reserved: when the phase's need is unknown, returning
        // that memory gives the run more room than recovering the split blocks once, and it is
        // why the split mattered at all.
        const auto other = std::find_if(
            m_out.begin(), m_out.end(), [](const Diagnosis& d) { return d.id == DiagnosisId::OtherProcess; });
        const auto outside = m_evidence.heldOutsideBytes();
        if (m_phaseNeedIsBound && other != m_out.end() && outside && *outside > once) {
            fragmentation->confidence = std::min(fragmentation->confidence, std::max(0.05, other->confidence - 0.05));
            m_evidence.evidence(*fragmentation,
                "ranked below other_process: the " + formatBytes(once)
                    + " recovery would make usable once is less than the " + formatBytes(*outside)
                    + " held outside this process, which is also why no new segment could be reserved");
            return;
        }
        const uint64_t need = facts.phaseStillNeedsBytes.value_or(m_evidence.oom.requestedBytes);
        if (m_phaseNeedIsBound && m_evidence.isTrainingRun() && once < 2 * need) {
            fragmentation->confidence = std::min(fragmentation->confidence, 0.6);
            m_evidence.evidence(*fragmentation,
                "no earlier step shows what the rest of this one needs: " + formatBytes(need) + " ("
                    + facts.phaseNeedText + ") is only a lower bound next to the " + formatBytes(once)
                    + " recovery would make usable");
        }
    }

    // Cause over symptom: a candidate whose first fix takes memory that serves nobody in the failing
    // phase off the card for all of it, and with that makes the phase fit to its end, names the
    // cause. The phase's own working set reaching the ceiling that memory lowered (the first
    // backward, the split cache, a batch's activations) describes where it showed; such a
    // candidate, whose own fix is not known to carry the phase, ranks below it.
    void putWholePhaseCauseFirst()
    {
        const auto cause = std::find_if(m_out.begin(), m_out.end(), [](const Diagnosis& d) {
            return d.outlook && d.outlook->leadingFixFreesForThePhase && d.outlook->leadingFixFitsRun == true
                && d.confidence >= 0.5;
        });
        if (cause == m_out.end())
            return;
        const Diagnosis& c = *cause;
        const std::string why = "its fix (" + (c.fixes.empty() ? std::string() : c.fixes.front().title) + ") keeps "
            + formatBytes(c.outlook->leadingFixFreesOnceBytes.value_or(0))
            + " free for the rest of the failing phase, which then fits to its end";
        for (Diagnosis& d : m_out) {
            const bool symptom = d.id == DiagnosisId::FirstBackward || d.id == DiagnosisId::LongestBatch
                || d.id == DiagnosisId::WorkingSet || d.id == DiagnosisId::Fragmentation
                || d.id == DiagnosisId::LargeAllocation;
            if (&d == &c || !symptom || d.confidence < c.confidence - 0.05
                || (d.outlook && d.outlook->leadingFixFitsRun == true))
                continue;
            d.confidence = std::max(0.05, c.confidence - 0.05);
            m_evidence.evidence(d, explainedByLine(c.id, why));
        }
    }

    SnapshotEvidence m_evidence;
    bool m_phaseNeedIsBound = true; // the phase's need is only a lower bound: no earlier step shows the rest
    std::vector<Diagnosis> m_out;
};

} // namespace

std::optional<uint64_t> snapshotCapacity(const DeviceAnalysis& device, const SnapshotDiagnosisContext& context)
{
    if (context.message && context.message->limit)
        return context.message->limit;
    if (device.ooms.empty())
        return std::nullopt;
    const OomAnalysis& oom = device.ooms.back();
    return oom.reservedBytes + oom.deviceFreeBytes;
}

std::vector<Diagnosis> diagnoseSnapshot(const SnapshotAnalysis& analysis, const SnapshotDiagnosisContext& context)
{
    if (!analysis.snapshot)
        return {};
    const DeviceAnalysis* device = analysis.primary();
    if (!device || device->ooms.empty())
        return {};
    // The last OOM is the one that ended the run; earlier ones were caught and retried.
    std::vector<Diagnosis> result = DeviceDiagnoser(analysis, *device, device->ooms.back(), context).run();
    rankDiagnoses(result);
    return result;
}

} // namespace oomlens
