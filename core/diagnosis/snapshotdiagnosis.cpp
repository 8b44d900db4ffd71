#include "core/diagnosis/snapshotdiagnosis.h"

#include "core/diagnosis/blockcount.h"
#include "core/diagnosis/catalogue.h"
#include "core/diagnosis/fixladder.h"
#include "core/diagnosis/leakdetection.h"
#include "core/diagnosis/ranking.h"
#include "core/diagnosis/stepprofile.h"
#include "core/diagnosis/trainingstate.h"
#include "core/units.h"

#include <algorithm>
#include <cmath>
#include <unordered_map>

namespace oomlens {

namespace {

std::string times(double factor)
{
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.1fx", factor);
    return buffer;
}

uint64_t band(const CategoryBytes& bands, Category category)
{
    return bands[static_cast<size_t>(category)];
}

// A process that could hold less than this is not the whole of a training GPU: the smallest cards
// PyTorch still supports have 2 GiB, and a CUDA context takes a few hundred MiB of that.
constexpr uint64_t smallestPlausibleProcessBytes = GiB;

uint64_t median(std::vector<uint64_t> values)
{
    if (values.empty())
        return 0;
    std::sort(values.begin(), values.end());
    return values[values.size() / 2];
}

// Everything one device's diagnosis needs, computed once.
class DeviceDiagnoser
{
public:
    DeviceDiagnoser(const SnapshotAnalysis& analysis, const DeviceAnalysis& device, const OomAnalysis& oom,
        const SnapshotDiagnosisContext& context)
        : m_analysis(analysis)
        , m_device(device)
        , m_oom(oom)
        , m_context(context)
        , m_profile(profileDevice(device, oom.eventIndex))
    {
        const Snapshot& snapshot = *analysis.snapshot;
        m_fixes.backend = context.message ? context.message->backend : "cuda";
        m_fixes.expandableSegmentsOn = context.expandableSegmentsOn
            || (snapshot.allocatorSettings && snapshot.allocatorSettings->expandableSegments);
        for (const auto& segment : snapshot.segments)
            m_fixes.expandableSegmentsOn |= segment.device == device.device && segment.isExpandable;
        m_fixes.maxSplitSizeSet = snapshot.allocatorSettings && snapshot.allocatorSettings->maxSplitSize > 0;
        m_fixes.asyncAllocator = context.asyncAllocator;
        if (context.message) {
            m_fixes.otherProcessBytes = context.message->otherProcessBytes;
            m_fixes.allowedBytes = context.message->allowed;
        }
        MemoryBudget& budget = m_fixes.budget;
        budget.bands = m_oom.liveByCategory;
        budget.liveBytes = 0;
        for (const uint64_t bytes : m_oom.liveByCategory)
            budget.liveBytes += bytes;
        budget.request = m_oom.requestedBytes;
        budget.fragmentedBytes = oom.reservedBytes > oom.allocatedBytes ? oom.reservedBytes - oom.allocatedBytes : 0;
        m_capacity = snapshotCapacity(device, context);
        budget.usableBytes = oom.reservedBytes + oom.deviceFreeBytes;
        budget.quadraticBytes = quadraticBytesAtOom();
        const BlockEstimate blocks = estimateRepeatedBlocks(device, oom.eventIndex);
        budget.estimatedBlocks = blocks.blocks;
        budget.blocksEvidence = blocks.evidence;
        countGpus(context);
        m_cardTotal = context.cardTotalBytes;
        m_cardSource = context.cardTotalSource.empty() ? "given with the case" : context.cardTotalSource;
        if (!m_cardTotal && context.message && context.message->total) {
            m_cardTotal = context.message->total;
            m_cardSource = "the OOM message";
        }
        m_implausiblySmall = !m_cardTotal && *budget.usableBytes < smallestPlausibleProcessBytes;
        projectState();
    }

    std::vector<Diagnosis> run()
    {
        fragmentation();
        largeAllocation();
        firstBackward();
        optimizerStep2AndCapacity();
        longestBatch();
        evalAccumulation();
        leak();
        memoryFraction();
        otherProcess();
        if (m_out.empty())
            workingSet();
        RunFacts facts;
        facts.usableBytes = m_fixes.budget.usableBytes;
        facts.fixedStateBytes = m_state.total();
        facts.fixedStateText = m_state.text();
        facts.phase = m_oom.phase == Phase::Eval ? "evaluation" : "training";
        projectPhaseNeed(facts);
        for (const Diagnosis& d : m_out) {
            const bool growsInPhase = d.id == "longest_batch" || d.id == "optimizer_step2" || d.id == "first_backward"
                || d.id == "leak" || d.id == "eval_accumulation" || d.id == "capacity";
            if (growsInPhase && d.confidence >= 0.5 && facts.phaseGrowthCause.empty())
                facts.phaseGrowthCause = d.id;
        }
        assessRunFit(m_out, facts);
        demoteSymptomWithoutCause(facts);
        return std::move(m_out);
    }

private:
    bool isTrainingRun() const
    {
        if (m_oom.phase == Phase::Forward || m_oom.phase == Phase::Backward || m_oom.phase == Phase::Optimizer)
            return true;
        return std::any_of(m_profile.steps.begin(), m_profile.steps.end(),
            [](const StepProfile& step) { return step.hasBackward || step.hasOptimizer; });
    }

    // What training keeps whatever the batch (trainingstate.h). A run seen only loading or
    // evaluating is not projected: nothing shows that it will train.
    void projectState()
    {
        TrainingStateInputs inputs;
        inputs.live = m_oom.liveByCategory;
        inputs.peakSeen = m_profile.peakBands;
        // Failing while loading, the request is more of the weights.
        if (m_oom.phase == Phase::Load)
            inputs.live[static_cast<size_t>(Category::Parameters)] += m_oom.requestedBytes;
        const bool training = isTrainingRun();
        for (const auto& step : m_profile.steps) {
            const bool earlier = step.step < m_oom.step && step.complete;
            inputs.backwardCompleted |= earlier && step.hasBackward;
            // A finished optimizer.step() has made whatever state its optimizer keeps (none for plain SGD).
            inputs.optimizerStateBuilt |= earlier && step.hasOptimizer;
        }
        inputs.backwardCompleted |= m_oom.phase == Phase::Optimizer;
        if (!training) {
            inputs.backwardCompleted = true;
            inputs.optimizerStateBuilt = true;
        }
        m_state = projectTrainingState(inputs, weightPrecision(*m_analysis.snapshot, m_device));
    }

    // What the failing phase still has to allocate before it ends, projected from the step profile:
    // the rest of a typical step's dynamic peak (what other steps grew from their start, less what
    // this one already has), the gradients and optimizer state training has yet to create, and at
    // least the request that failed. Only a lower bound where no earlier step shows the rest.
    void projectPhaseNeed(RunFacts& facts)
    {
        const uint64_t request = m_oom.requestedBytes;
        uint64_t remaining = request;
        std::string text = formatBytes(request) + " request";
        m_phaseNeedIsBound = true;
        const bool training
            = m_oom.phase == Phase::Forward || m_oom.phase == Phase::Backward || m_oom.phase == Phase::Optimizer;
        if (training && m_oom.step >= 0) {
            std::vector<uint64_t> growth;
            for (const auto& step : m_profile.steps) {
                if (step.step != m_oom.step && step.complete && step.step >= firstTrainingStep() && !step.hasEval)
                    growth.push_back(step.dynamicGrowth());
            }
            const StepProfile* failing = m_profile.step(m_oom.step);
            if (!growth.empty() && failing) {
                uint64_t dynamicNow = 0;
                for (int i = 0; i < categoryCount; ++i) {
                    if (isDynamic(static_cast<Category>(i)))
                        dynamicNow += m_oom.liveByCategory[static_cast<size_t>(i)];
                }
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
            const uint64_t gradients = band(m_oom.liveByCategory, Category::Gradients);
            const uint64_t state = band(m_oom.liveByCategory, Category::OptimizerState);
            const uint64_t toCome = (m_state.gradients > gradients ? m_state.gradients - gradients : 0)
                + (m_state.optimizerState > state ? m_state.optimizerState - state : 0);
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
        auto fragmentation
            = std::find_if(m_out.begin(), m_out.end(), [](const Diagnosis& d) { return d.id == "fragmentation"; });
        if (fragmentation == m_out.end() || !fragmentation->outlook)
            return;
        const RunOutlook& o = *fragmentation->outlook;
        const bool othersCanFit = std::any_of(m_out.begin(), m_out.end(), [](const Diagnosis& d) {
            return d.id != "fragmentation" && !(d.outlook && d.outlook->leadingFixFitsRun == false);
        });
        if (o.leadingFixFitsRun == false) {
            if (!othersCanFit) {
                fragmentation->confidence = std::min(fragmentation->confidence, 0.35);
                workingSet();
            }
            return;
        }
        const uint64_t once = o.leadingFixFreesOnceBytes.value_or(0);
        const uint64_t need = facts.phaseStillNeedsBytes.value_or(m_oom.requestedBytes);
        if (m_phaseNeedIsBound && isTrainingRun() && once < 2 * need) {
            fragmentation->confidence = std::min(fragmentation->confidence, 0.6);
            evidence(*fragmentation,
                "no earlier step shows what the rest of this one needs: " + formatBytes(need) + " ("
                    + facts.phaseNeedText + ") is only a lower bound next to the " + formatBytes(once)
                    + " recovery would make usable");
        }
    }

    static RunOutlook dynamicOutlook()
    {
        RunOutlook outlook;
        outlook.leadingFixFreesOnlyDynamic = true;
        return outlook;
    }

    // Ranks for ZeRO's projection: the log's rank prefixes or nvidia-smi when the text shows them,
    // else the devices this snapshot holds memory on (DataParallel, or a process driving several GPUs).
    void countGpus(const SnapshotDiagnosisContext& context)
    {
        MemoryBudget& budget = m_fixes.budget;
        int devices = 0;
        for (const auto& device : m_analysis.devices) {
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

    EvidenceLink link(int64_t event) const
    {
        EvidenceLink result { m_context.snapshotIndex, m_device.device, event, 0 };
        const DeviceTrace* trace = m_analysis.snapshot->trace(m_device.device);
        if (trace && event >= 0 && event < static_cast<int64_t>(trace->events.size()))
            result.timeUs = trace->events[static_cast<size_t>(event)].timeUs;
        return result;
    }

    void evidence(Diagnosis& d, std::string text, int64_t event = -1) const
    {
        d.evidence.push_back({ std::move(text), event >= 0 ? std::optional<EvidenceLink>(link(event)) : std::nullopt });
    }

    std::string where() const
    {
        std::string text = std::string(phaseName(m_oom.phase));
        if (m_oom.step >= 0)
            text += " of step " + std::to_string(m_oom.step);
        return text;
    }

    std::string bandsText() const
    {
        std::vector<std::pair<uint64_t, Category>> order;
        for (int i = 0; i < categoryCount; ++i)
            order.emplace_back(m_oom.liveByCategory[static_cast<size_t>(i)], static_cast<Category>(i));
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
    uint64_t quadraticBytesAtOom() const
    {
        const Snapshot& snapshot = *m_analysis.snapshot;
        if (!snapshot.frames || !snapshot.strings)
            return 0;
        std::unordered_map<uint32_t, bool> quadraticStack;
        uint64_t bytes = 0;
        for (const auto& allocation : m_device.allocations) {
            if (allocation.category != Category::Activations && allocation.category != Category::Temporaries)
                continue;
            if (!allocation.liveAfter(m_oom.eventIndex))
                continue;
            auto [it, inserted] = quadraticStack.try_emplace(allocation.stack.value, false);
            if (inserted)
                it->second = isQuadraticStack(allocation.stack);
            if (it->second)
                bytes += allocation.requestedSize;
        }
        return bytes;
    }

    bool isQuadraticStack(StackId stack) const
    {
        const Snapshot& snapshot = *m_analysis.snapshot;
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

    void fragmentation()
    {
        const uint64_t request = m_oom.requestedBytes;
        const uint64_t unused = m_fixes.budget.fragmentedBytes;
        if (m_fixes.asyncAllocator || request == 0)
            return;
        double confidence = 0.0;
        Diagnosis d = makeDiagnosis("fragmentation", 0.0, {});
        const bool pooled = m_oom.freeInPoolBytes >= request && m_oom.largestFreeBlock < request;
        if (pooled) {
            confidence = 0.9;
            evidence(d,
                formatBytes(m_oom.freeInPoolBytes) + " sat free in cached blocks of that pool, more than the "
                    + formatBytes(request) + " request, but the largest free block was "
                    + formatBytes(m_oom.largestFreeBlock),
                m_oom.eventIndex);
        } else if (unused >= request) {
            confidence = 0.5 + 0.25 * clamp01(safeRatio(unused, m_oom.reservedBytes) / 0.2);
            evidence(d,
                "reserved − allocated was " + formatBytes(unused) + " at the OOM (" + formatBytes(m_oom.reservedBytes)
                    + " reserved, " + formatBytes(m_oom.allocatedBytes) + " allocated), more than the "
                    + formatBytes(request) + " request",
                m_oom.eventIndex);
        }
        if (confidence <= 0)
            return;
        // Reserved − allocated also counts block rounding and the other pool: a few percent of the
        // cache is normal slack, and freeing it would not make room for the next step anyway.
        // Only waste that is a real share of the cache (or big in absolute terms) is a diagnosis.
        const double significance = clamp01(safeRatio(unused, m_oom.reservedBytes) / 0.05);
        if (significance < 0.5 && unused < 512 * MiB)
            return;
        confidence *= 0.6 + 0.4 * std::max(significance, unused >= GiB ? 1.0 : 0.0);
        if (!pooled && m_oom.largestFreeBlock < request && m_oom.largestFreeBlock > 0)
            evidence(d,
                "no free block could take " + formatBytes(request) + ": the largest was "
                    + formatBytes(m_oom.largestFreeBlock));
        evidence(d, "the card had only " + formatBytes(m_oom.deviceFreeBytes) + " left to reserve a new segment");
        if (m_fixes.expandableSegmentsOn) {
            confidence *= 0.6;
            evidence(d, "expandable segments were already on in this run");
        }
        d.confidence = confidence;
        d.summary = formatBytes(unused) + " sat unused in PyTorch's cache, but split into blocks smaller than the "
            + formatBytes(request) + " that failed.";
        appendFixes(d.fixes,
            { FixKind::ExpandableSegments, FixKind::MaxSplitSize, FixKind::MicroBatch, FixKind::Bf16,
                FixKind::Checkpointing },
            m_fixes);
        d.outlook = dynamicOutlook();
        d.outlook->leadingFixFreesOnceBytes = unused + m_oom.deviceFreeBytes;
        m_out.push_back(std::move(d));
    }

    void largeAllocation()
    {
        if (!m_capacity || *m_capacity == 0)
            return;
        const uint64_t request = m_oom.requestedBytes;
        const double share = safeRatio(request, *m_capacity);
        if (share < 0.25)
            return;
        const bool attention = m_oom.stack.isValid() && isQuadraticStack(m_oom.stack);
        Diagnosis d = makeDiagnosis(
            "large_allocation", 0.45 + 0.45 * clamp01((share - 0.25) / 0.5) + (attention ? 0.05 : 0.0), {});
        evidence(d,
            "the failing request of " + formatBytes(request) + " is " + percentText(request, *m_capacity) + " of the "
                + formatBytes(*m_capacity) + " card, in " + where(),
            m_oom.eventIndex);
        if (attention)
            evidence(d,
                "it comes from attention code (softmax / score matrix): its size grows with the square of the sequence "
                "length");
        d.summary = "One " + formatBytes(request) + " tensor, " + percentText(request, *m_capacity)
            + " of the card, could not be placed.";
        m_fixes.budget.quadraticBytes = std::max(m_fixes.budget.quadraticBytes, attention ? request : 0);
        if (attention)
            appendFixes(d.fixes, { FixKind::Sdpa }, m_fixes);
        appendFixes(d.fixes, { FixKind::MicroBatch, FixKind::Bf16, FixKind::Sdpa, FixKind::ShorterSequences }, m_fixes);
        d.outlook = dynamicOutlook();
        m_out.push_back(std::move(d));
    }

    int32_t firstTrainingStep() const
    {
        for (const auto& step : m_profile.steps) {
            if (step.step >= 1 || step.hasBackward)
                return step.step;
        }
        return 1;
    }

    void firstBackward()
    {
        if (m_oom.phase != Phase::Backward)
            return;
        const bool first = m_oom.step < 0 || m_oom.step <= firstTrainingStep();
        const uint64_t state = band(m_oom.liveByCategory, Category::OptimizerState);
        Diagnosis d = makeDiagnosis("first_backward", first && state == 0 ? 0.85 : (first ? 0.7 : 0.45), {});
        evidence(d, "the OOM is in " + where() + (state == 0 ? ", before any optimizer state exists" : ""),
            m_oom.eventIndex);
        evidence(d, "live at the failure: " + bandsText());
        if (const StepProfile* step = m_profile.step(m_oom.step); step && step->peakEvent >= 0)
            evidence(d,
                "activations saved by the forward pass stay live while backward allocates gradients: "
                    + formatBytes(band(m_oom.liveByCategory, Category::Activations)) + " of activations and "
                    + formatBytes(band(m_oom.liveByCategory, Category::Gradients)) + " of gradients");
        if (m_state.total() <= *m_fixes.budget.usableBytes && m_state.ifHalfBytes > *m_fixes.budget.usableBytes)
            evidence(d,
                "if the weights are 16-bit (the frames do not tell), training with fp32 master weights and Adam would "
                "keep "
                    + formatBytes(m_state.ifHalfBytes) + ", more than the " + formatBytes(*m_fixes.budget.usableBytes)
                    + " this process could hold: then no activation fix is enough");
        d.summary = "The forward pass fit; backward then needs the saved activations and the new gradients at once, "
                    "and that did not fit.";
        appendFixes(d.fixes,
            { FixKind::MicroBatch, FixKind::Bf16, FixKind::Checkpointing, FixKind::ExpandableSegments }, m_fixes);
        d.outlook = dynamicOutlook();
        m_out.push_back(std::move(d));
    }

    // Temporaries made inside the optimizer step and still live: the multi-tensor update's
    // intermediates, which exist only while step() runs.
    uint64_t stepTemporariesAtOom() const
    {
        uint64_t bytes = 0;
        for (const auto& allocation : m_device.allocations) {
            if (allocation.category == Category::Temporaries && allocation.phase == Phase::Optimizer
                && allocation.liveAfter(m_oom.eventIndex))
                bytes += allocation.requestedSize;
        }
        return bytes;
    }

    // capacity is claimed only when the state training keeps (measured, or projected from the
    // weights where the failure came before it existed) exceeds what this process could hold.
    // Confidence: 0.9 when every band was measured; 0.85 projected with the precision read from
    // the frames; 0.8 projected under the stated fp32 assumption (the smaller projection, so the
    // claim holds whatever the precision; only the larger one exceeding is no claim). With the
    // card's size unknown and the process holding implausibly little: 0.4 before training started
    // (other_process is then the better reading, see processHeldImplausiblyLittle), at most 0.7
    // once it trained on that share.
    void optimizerStep2AndCapacity()
    {
        const uint64_t state = band(m_oom.liveByCategory, Category::OptimizerState);
        const uint64_t usable = *m_fixes.budget.usableBytes;
        const bool inFirstOptimizer
            = m_oom.phase == Phase::Optimizer && (m_oom.step < 0 || m_oom.step <= firstTrainingStep());
        const uint64_t fixedState = m_state.total();
        if (m_state.parameters > 0 && fixedState > usable) {
            double confidence = !m_state.projected()                      ? 0.9
                : m_state.precision.precision != WeightPrecision::Unknown ? 0.85
                                                                          : 0.8;
            if (m_implausiblySmall)
                confidence = std::min(confidence, isTrainingRun() ? 0.7 : 0.4);
            // With the card's size known, a state that fits on the card (less a CUDA context) once
            // the memory held outside this process is back is that holder's doing, not the card's.
            const uint64_t context = m_context.message && m_context.message->selfNonPyTorchBytes
                ? *m_context.message->selfNonPyTorchBytes
                : GiB / 2;
            const bool fitsCard = m_cardTotal && fixedState + context <= *m_cardTotal;
            if (fitsCard)
                confidence = std::min(confidence, 0.45);
            Diagnosis d = makeDiagnosis("capacity", confidence, {});
            evidence(d,
                m_state.text() + ", against " + formatBytes(usable) + " this process could hold ("
                    + formatBytes(m_oom.reservedBytes) + " reserved + " + formatBytes(m_oom.deviceFreeBytes)
                    + " free at the OOM in " + where() + ")",
                m_oom.eventIndex);
            if (const std::string assumption = m_state.assumption(); !assumption.empty())
                evidence(d, assumption);
            if (m_state.gradientsProjected || m_state.optimizerProjected)
                evidence(d,
                    "the failure came before training had built that state: it is projected from the "
                        + formatBytes(m_state.parameters) + " of weights, assuming every parameter trains");
            evidence(d,
                "activations at the failure are " + formatBytes(band(m_oom.liveByCategory, Category::Activations))
                    + ": smaller batches or checkpointing shrink only those");
            if (fitsCard)
                evidence(d,
                    "it would fit on the " + formatBytes(*m_cardTotal) + " card (" + m_cardSource
                        + "): the rest of the card was held outside this process (see other_process)");
            if (m_implausiblySmall)
                evidence(d,
                    "the snapshot records no card size, and " + formatBytes(usable)
                        + " is less than any training GPU leaves a process: the card may be larger and partly held "
                          "by something else (see other_process)");
            const std::string holder = m_cardTotal ? "the card" : "this process";
            d.summary = "Weights, gradients and optimizer state alone need " + formatBytes(fixedState)
                + (m_state.projected() ? " once training has built them" : "") + "; " + holder + " could hold "
                + formatBytes(usable) + ", whatever the batch.";
            MemoryBudget projected = m_fixes.budget;
            CategoryBytes bands = *projected.bands;
            bands[static_cast<size_t>(Category::OptimizerState)] = m_state.optimizerState;
            bands[static_cast<size_t>(Category::Gradients)] = m_state.gradients;
            bands[static_cast<size_t>(Category::Parameters)] = m_state.parameters + m_state.masterWeights;
            projected.bands = bands;
            projected.liveBytes = 0;
            for (const uint64_t bytes : bands)
                projected.liveBytes += bytes;
            projected.request = 0;
            FixContext fixes = m_fixes;
            fixes.budget = projected;
            appendFixes(d.fixes, { FixKind::Optimizer8bit, FixKind::Zero, FixKind::Offload, FixKind::Lora }, fixes);
            d.outlook = RunOutlook {};
            m_out.push_back(std::move(d));
            return;
        }

        const bool stateAppearedEarlier = m_profile.firstOptimizerStateEvent >= 0 && m_oom.step >= 0
            && m_profile.firstOptimizerStateStep >= 0 && m_profile.firstOptimizerStateStep == m_oom.step - 1
            && m_profile.firstOptimizerStateStep <= firstTrainingStep();
        if (!inFirstOptimizer && !stateAppearedEarlier)
            return;
        const uint64_t temporaries = inFirstOptimizer ? stepTemporariesAtOom() : 0;
        // In the first step: 0.8 when the step's own intermediates are measured beside a state that
        // fits, 0.75 from the phase alone. On the step after: 0.8, the state's arrival is measured.
        const double confidence = stateAppearedEarlier || temporaries > 0 ? 0.8 : 0.75;
        Diagnosis d = makeDiagnosis("optimizer_step2", confidence, {});
        if (stateAppearedEarlier) {
            evidence(d,
                "optimizer state (" + formatBytes(state) + " at the failure) first appeared in step "
                    + std::to_string(m_profile.firstOptimizerStateStep) + "'s optimizer.step()",
                m_profile.firstOptimizerStateEvent);
            if (const StepProfile* previous = m_profile.step(m_oom.step - 1))
                evidence(d,
                    "step " + std::to_string(previous->step) + " peaked at " + formatBytes(previous->peakLive)
                        + " without it; step " + std::to_string(m_oom.step) + " starts with " + formatBytes(state)
                        + " more and fails in " + std::string(phaseName(m_oom.phase)),
                    previous->peakEvent);
        } else {
            evidence(d,
                "the OOM is in the first optimizer.step(), while Adam creates its state (" + formatBytes(state)
                    + " so far)",
                m_oom.eventIndex);
        }
        if (fixedState <= usable)
            evidence(d,
                "the state training keeps fits: " + m_state.text() + ", " + formatBytes(usable - fixedState)
                    + " less than the " + formatBytes(usable) + " this process could hold");
        if (temporaries > 0)
            evidence(d,
                formatBytes(temporaries)
                    + " of the step's own intermediates (multi-tensor _foreach_ results, freed when step() "
                      "returns) were live at the failure, plus the "
                    + formatBytes(m_oom.requestedBytes) + " request");
        evidence(d, "live at the failure: " + bandsText());
        d.summary = temporaries > 0
            ? "The first optimizer.step() creates Adam's state and, on the multi-tensor path, intermediates for a "
              "whole parameter group at once: "
                + formatBytes(temporaries) + " of them did not fit beside the state, which itself fits."
            : "Step 1 fit; Adam's state, created at the first optimizer.step(), is the extra "
                + formatBytes(std::max(state, m_state.optimizerState)) + " that the next steps cannot hold.";
        FixContext fixes = m_fixes;
        if (temporaries > 0)
            fixes.caseSavingBytes = temporaries;
        appendFixes(d.fixes,
            { FixKind::OptimizerForeach, FixKind::Optimizer8bit, FixKind::MicroBatch, FixKind::Bf16, FixKind::Zero },
            fixes);
        d.outlook = dynamicOutlook();
        m_out.push_back(std::move(d));
    }

    void longestBatch()
    {
        if (m_oom.step < 0 || m_oom.phase == Phase::Eval)
            return;
        std::vector<uint64_t> growth;
        std::vector<uint64_t> largest;
        for (const auto& step : m_profile.steps) {
            if (step.step != m_oom.step && step.complete && step.step >= firstTrainingStep() && !step.hasEval) {
                growth.push_back(step.dynamicGrowth());
                largest.push_back(step.largestDynamicAlloc);
            }
        }
        if (growth.size() < 2)
            return;
        const StepProfile* failing = m_profile.step(m_oom.step);
        if (!failing)
            return;
        const uint64_t typical = median(growth);
        uint64_t dynamicNow = 0;
        for (int i = 0; i < categoryCount; ++i) {
            if (isDynamic(static_cast<Category>(i)))
                dynamicNow += m_oom.liveByCategory[static_cast<size_t>(i)];
        }
        const uint64_t start = failing->startDynamic();
        const uint64_t needed = (dynamicNow > start ? dynamicNow - start : 0) + m_oom.requestedBytes;
        const double factor = safeRatio(needed, typical);
        if (typical == 0 || factor < 1.5)
            return;
        const uint64_t typicalLargest = median(largest);
        const uint64_t failingLargest = std::max(failing->largestDynamicAlloc, m_oom.requestedBytes);
        const double largestFactor = safeRatio(failingLargest, typicalLargest);
        Diagnosis d = makeDiagnosis("longest_batch", 0.55 + 0.3 * clamp01((factor - 1.5) / 2.0), {});
        evidence(d,
            "step " + std::to_string(m_oom.step) + " needed at least " + formatBytes(needed)
                + " of activations and temporaries, " + times(factor) + " the " + formatBytes(typical)
                + " a typical step (median of " + std::to_string(growth.size()) + ") peaked at",
            m_oom.eventIndex);
        if (typicalLargest > 0 && largestFactor >= 2.0) {
            evidence(d,
                "its largest buffer is " + formatBytes(failingLargest) + " against " + formatBytes(typicalLargest)
                    + " in other steps (" + times(largestFactor) + ")"
                    + (largestFactor >= 1.5 * factor ? ": faster than the batch grew, like seq² attention scores" : ""),
                failing->largestDynamicEvent >= 0 ? failing->largestDynamicEvent : m_oom.eventIndex);
        }
        const uint64_t excess = needed > typical ? needed - typical : 0;
        d.summary = "Other steps peak far lower; step " + std::to_string(m_oom.step) + "'s batch is about "
            + times(factor) + " as demanding, as the longest sequences in a variable-length dataset are.";
        FixContext fixes = m_fixes;
        fixes.caseSavingBytes = excess;
        appendFixes(d.fixes, { FixKind::LengthBucketing }, fixes);
        if (largestFactor >= 1.5 * factor)
            appendFixes(d.fixes, { FixKind::Sdpa }, m_fixes);
        appendFixes(d.fixes,
            { FixKind::MicroBatch, FixKind::Bf16, FixKind::Checkpointing, FixKind::ExpandableSegments, FixKind::Sdpa,
                FixKind::ShorterSequences },
            m_fixes);
        d.outlook = dynamicOutlook();
        m_out.push_back(std::move(d));
    }

    // Evaluation outputs kept on the GPU: each batch adds about the same bytes, so the pile grows
    // until the evaluation ends or the card is full. The batches are counted as the repeats of the
    // most repeated allocation site among what evaluation left live.
    void evalAccumulation()
    {
        if (m_oom.phase != Phase::Eval && m_profile.evalRetainedCount == 0)
            return;
        const uint64_t live = m_fixes.budget.liveBytes;
        const bool retains = m_profile.evalRetainedCount >= 3 && safeRatio(m_profile.evalRetainedBytes, live) >= 0.15;
        if (m_oom.phase != Phase::Eval && !retains)
            return;
        // 0.85: the failure is in evaluation and evaluation's own outputs are a large share of what
        // is live; 0.5: in evaluation with nothing retained (an oversized evaluation batch is as
        // likely); 0.45: retained outputs measured but the failure is elsewhere.
        double confidence = m_oom.phase == Phase::Eval ? (retains ? 0.85 : 0.5) : 0.45;
        Diagnosis d = makeDiagnosis("eval_accumulation", confidence, {});
        evidence(d, "the OOM is in evaluation (" + where() + ")", m_oom.eventIndex);
        int batches = 0;
        if (m_profile.evalRetainedCount > 0) {
            std::unordered_map<uint32_t, int> perSite;
            for (const auto& allocation : m_device.allocations) {
                if (allocation.phase == Phase::Eval && allocation.category != Category::Parameters
                    && allocation.allocEvent >= 0 && allocation.liveAfter(m_oom.eventIndex))
                    batches = std::max(batches, ++perSite[allocation.stack.value]);
            }
            evidence(d,
                std::to_string(m_profile.evalRetainedCount)
                    + " allocations made during evaluation are still live at the failure: "
                    + formatBytes(m_profile.evalRetainedBytes) + ", " + percentText(m_profile.evalRetainedBytes, live)
                    + " of live memory",
                m_profile.firstEvalRetainedEvent);
        }
        d.outlook = RunOutlook {};
        d.outlook->leadingFixStopsGrowth = true;
        if (retains && batches >= 2) {
            d.outlook->growthPerUnitBytes = m_profile.evalRetainedBytes / static_cast<uint64_t>(batches);
            d.outlook->unit = "evaluation batch";
            evidence(d,
                "one allocation site kept " + std::to_string(batches) + " tensors, one per batch: about "
                    + formatBytes(d.outlook->growthPerUnitBytes)
                    + " more per evaluation batch, until the evaluation set ends");
        }
        d.summary = retains ? "Evaluation keeps each batch's outputs on the GPU; "
                + formatBytes(m_profile.evalRetainedBytes) + " piled up before the failure."
                            : "The failure is in evaluation; outputs kept per batch or an oversized evaluation batch "
                              "are the usual causes.";
        FixContext fixes = m_fixes;
        if (retains)
            fixes.caseSavingBytes = m_profile.evalRetainedBytes;
        appendFixes(d.fixes, { FixKind::EvalAccumulation, FixKind::EvalBatchSize }, fixes);
        m_out.push_back(std::move(d));
    }

    // Live memory at matching points of successive steps (leakdetection.h). Confidence: 0.85 when
    // every one of at least three comparisons rises, 0.7 when most do; a growth under 1% of what
    // the process could hold is noise next to the failure and not reported.
    void leak()
    {
        const auto finding = findLeak(*m_analysis.snapshot, m_device, m_profile, m_oom.eventIndex, firstTrainingStep());
        if (!finding || finding->growth < MiB || safeRatio(finding->growth, *m_fixes.budget.usableBytes) < 0.01)
            return;
        const bool steady = finding->rising == finding->comparisons && finding->comparisons >= 3;
        Diagnosis d = makeDiagnosis("leak", steady ? 0.85 : 0.7, {});
        evidence(d,
            "memory live at " + finding->point
                + ", besides weights, gradients and optimizer state, grows: " + formatBytes(finding->live.front())
                + " to " + formatBytes(finding->live.back()) + " over " + std::to_string(finding->comparisons)
                + " steps (" + formatSignedBytes(static_cast<int64_t>(finding->growth)) + "), about "
                + formatBytes(finding->slopePerStep) + " per step (the median change)",
            finding->events.back());
        evidence(d,
            std::to_string(finding->rising) + " of " + std::to_string(finding->comparisons)
                + " step-over-step comparisons rise; a loop that keeps nothing starts every step at the same level",
            finding->events[1]);
        std::string sites;
        for (size_t i = 0; i < finding->growingSites.size() && i < 3; ++i) {
            const auto& site = finding->growingSites[i];
            sites += (sites.empty() ? "" : "; ") + site.where + " (" + std::to_string(site.count) + " allocations, "
                + formatBytes(site.bytes) + ")";
        }
        if (!sites.empty())
            evidence(d, "made since the first of those points and still live: " + sites);
        if (const uint64_t spare = *m_fixes.budget.usableBytes > m_oom.allocatedBytes
                ? *m_fixes.budget.usableBytes - m_oom.allocatedBytes
                : 0;
            spare > 0)
            evidence(d,
                "at " + formatBytes(finding->slopePerStep) + " per step, the " + formatBytes(spare)
                    + " this process had left lasts about " + std::to_string(spare / finding->slopePerStep)
                    + " more steps, whatever else is fixed");
        d.summary = "Something keeps about " + formatBytes(finding->slopePerStep)
            + " per step alive; the run fails once that adds up.";
        FixContext fixes = m_fixes;
        fixes.caseSavingBytes = finding->growth;
        appendFixes(d.fixes, { FixKind::ReleaseReferences }, fixes);
        d.outlook = RunOutlook {};
        d.outlook->growthPerUnitBytes = finding->slopePerStep;
        d.outlook->unit = "step";
        d.outlook->leadingFixStopsGrowth = true;
        m_out.push_back(std::move(d));
    }

    void memoryFraction()
    {
        // The allocator asks the driver for a whole segment: 2 MiB for small requests, 20 MiB for
        // 1-10 MiB ones, the request rounded to 2 MiB above that.
        const uint64_t request = m_oom.requestedBytes;
        const uint64_t segment = request <= MiB
            ? 2 * MiB
            : (request <= 10 * MiB ? 20 * MiB : (request + 2 * MiB - 1) / (2 * MiB) * (2 * MiB));
        if (m_oom.deviceFreeBytes < segment + 2 * MiB || m_fixes.expandableSegmentsOn)
            return;
        // The caching allocator asks the driver for that segment before it gives up; with the driver
        // reporting several segments' worth free, only a limit refuses it. 0.6 when free barely
        // covers the segment (a race with another process reads the same), rising to 0.9 at four
        // segments' worth and more.
        const double headroom = safeRatio(m_oom.deviceFreeBytes, segment);
        Diagnosis d = makeDiagnosis("memory_fraction_cap", 0.6 + 0.3 * clamp01((headroom - 1.0) / 3.0), {});
        evidence(d,
            "the driver reported " + formatBytes(m_oom.deviceFreeBytes) + " free at the OOM, more than the "
                + formatBytes(m_oom.requestedBytes) + " requested: only a per-process limit refuses that",
            m_oom.eventIndex);
        d.summary = "The card had room for the request; a per-process memory fraction refused it.";
        appendFixes(d.fixes, { FixKind::MemoryFraction }, m_fixes);
        d.outlook = RunOutlook {};
        d.outlook->leadingFixRaisesCeiling = true;
        m_out.push_back(std::move(d));
    }

    void otherProcess()
    {
        if (!m_cardTotal) {
            processHeldImplausiblyLittle();
            return;
        }
        const uint64_t total = *m_cardTotal;
        const uint64_t mine = m_oom.reservedBytes + m_oom.deviceFreeBytes;
        if (mine >= total)
            return;
        const uint64_t outside = total - mine;
        const uint64_t explained = (m_context.message ? m_context.message->selfNonPyTorchBytes.value_or(0) : 0) + GiB;
        if (outside <= explained || safeRatio(outside - explained, total) < 0.15)
            return;
        Diagnosis d
            = makeDiagnosis("other_process", 0.45 + 0.35 * clamp01(safeRatio(outside - explained, total) / 0.5), {});
        evidence(d,
            formatBytes(outside) + " of the " + formatBytes(total) + " card (" + m_cardSource
                + ") was neither PyTorch's cache (" + formatBytes(m_oom.reservedBytes) + ") nor free ("
                + formatBytes(m_oom.deviceFreeBytes) + ") at the OOM",
            m_oom.eventIndex);
        d.summary = formatBytes(outside) + " of the card was held outside this run's cache.";
        appendFixes(d.fixes, { FixKind::StopOtherProcess, FixKind::ChooseGpu }, m_fixes);
        d.outlook = RunOutlook {};
        d.outlook->leadingFixRaisesCeiling = true;
        m_out.push_back(std::move(d));
    }

    // A snapshot records no card size. When what this process could hold is smaller than any
    // training GPU would leave it, a card shared with something else is a likely reading. 0.6 when
    // the run failed before training started (a busy card shows itself as the first weights not
    // fitting), 0.45 once it has trained on that share (a card that small is then as likely);
    // never more, since a tiny card or a deliberate limit read the same from the snapshot alone.
    void processHeldImplausiblyLittle()
    {
        if (!m_implausiblySmall)
            return;
        const uint64_t usable = *m_fixes.budget.usableBytes;
        Diagnosis d = makeDiagnosis("other_process", isTrainingRun() ? 0.45 : 0.6, {});
        evidence(d,
            "this process could hold only " + formatBytes(usable) + " (" + formatBytes(m_oom.reservedBytes)
                + " reserved + " + formatBytes(m_oom.deviceFreeBytes) + " free on the card at the OOM in " + where()
                + ")",
            m_oom.eventIndex);
        evidence(d,
            "the snapshot records no card size; the smallest GPUs PyTorch trains on have 2 GiB, and a CUDA context "
            "leaves more than "
                + formatBytes(smallestPlausibleProcessBytes)
                + " of that: most likely another process (or a zombie) holds the rest");
        evidence(d,
            "to confirm, add nvidia-smi output from the failure, or the OOM message, whose \"total capacity\" "
            "gives the card's size");
        d.summary = "This process could hold only " + formatBytes(usable)
            + "; the card is most likely shared. The card's size is unknown from a snapshot alone.";
        appendFixes(d.fixes, { FixKind::StopOtherProcess, FixKind::ChooseGpu }, m_fixes);
        d.outlook = RunOutlook {};
        d.outlook->leadingFixRaisesCeiling = true;
        m_out.push_back(std::move(d));
    }

    // No specific cause measured: the working set simply outgrew what the process could hold.
    // Not `capacity`: that names the state training keeps, which was not shown to be too big.
    // 0.4: a description of the failure, not a cause.
    void workingSet()
    {
        Diagnosis d = makeDiagnosis("working_set", 0.4, {});
        evidence(d, "at the OOM in " + where() + ": " + bandsText(), m_oom.eventIndex);
        evidence(d,
            "the " + formatBytes(m_oom.requestedBytes) + " request found " + formatBytes(m_oom.deviceFreeBytes)
                + " free on the card and " + formatBytes(m_fixes.budget.fragmentedBytes) + " unused in the cache");
        if (m_state.total() <= *m_fixes.budget.usableBytes)
            evidence(d,
                "the state training keeps fits (" + m_state.text() + " of " + formatBytes(*m_fixes.budget.usableBytes)
                    + "): what did not fit comes and goes with the batch");
        d.summary = "No single cause stands out: the live tensors outgrew what this process could hold. The "
                    "projected savings below are measured from the bands.";
        appendLadder(d.fixes, m_fixes);
        d.outlook = dynamicOutlook();
        m_out.push_back(std::move(d));
    }

    const SnapshotAnalysis& m_analysis;
    const DeviceAnalysis& m_device;
    OomAnalysis m_oom;
    const SnapshotDiagnosisContext& m_context;
    DeviceProfile m_profile;
    FixContext m_fixes;
    std::optional<uint64_t> m_capacity;
    std::optional<uint64_t> m_cardTotal; // from the message, nvidia-smi or a capture sidecar
    std::string m_cardSource;
    bool m_phaseNeedIsBound = true; // the phase's need is only a lower bound: no earlier step shows the rest
    bool m_implausiblySmall = false; // card unknown, and the process could hold less than any training GPU leaves
    TrainingState m_state;
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
