#include "core/diagnosis/snapshotdiagnosis.h"

#include "core/diagnosis/blockcount.h"
#include "core/diagnosis/catalogue.h"
#include "core/diagnosis/fixladder.h"
#include "core/diagnosis/stepprofile.h"
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
        return std::move(m_out);
    }

private:
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
        d.summary = "The forward pass fit; backward then needs the saved activations and the new gradients at once, "
                    "and that did not fit.";
        appendFixes(d.fixes,
            { FixKind::MicroBatch, FixKind::Bf16, FixKind::Checkpointing, FixKind::ExpandableSegments }, m_fixes);
        m_out.push_back(std::move(d));
    }

    void optimizerStep2AndCapacity()
    {
        const uint64_t params = band(m_oom.liveByCategory, Category::Parameters);
        const uint64_t grads = band(m_oom.liveByCategory, Category::Gradients);
        const uint64_t state = band(m_oom.liveByCategory, Category::OptimizerState);
        const uint64_t usable = *m_fixes.budget.usableBytes;
        const bool inFirstOptimizer
            = m_oom.phase == Phase::Optimizer && (m_oom.step < 0 || m_oom.step <= firstTrainingStep());
        // Adam ends up with two moments per parameter; judge the state it is building, not the part built so far.
        const uint64_t projectedState = inFirstOptimizer ? std::max(state, 2 * params) : state;
        const uint64_t fixedState = params + std::max(grads, inFirstOptimizer ? params : 0) + projectedState;

        if (params > 0 && static_cast<double>(fixedState) >= 0.9 * static_cast<double>(usable)) {
            Diagnosis d = makeDiagnosis(
                "capacity", static_cast<double>(fixedState) >= static_cast<double>(usable) ? 0.85 : 0.7, {});
            evidence(d,
                "parameters " + formatBytes(params) + " + gradients "
                    + formatBytes(std::max(grads, inFirstOptimizer ? params : 0)) + " + optimizer state "
                    + formatBytes(projectedState) + (projectedState > state ? " (Adam: two moments per parameter)" : "")
                    + " = " + formatBytes(fixedState) + ", against " + formatBytes(usable) + " this process could hold",
                m_oom.eventIndex);
            evidence(d,
                "activations at the failure are only " + formatBytes(band(m_oom.liveByCategory, Category::Activations))
                    + ": smaller batches or checkpointing cannot make room");
            d.summary = "Weights, gradients and optimizer state alone need " + formatBytes(fixedState)
                + "; the card cannot hold them, whatever the batch.";
            MemoryBudget projected = m_fixes.budget;
            CategoryBytes bands = *projected.bands;
            bands[static_cast<size_t>(Category::OptimizerState)] = projectedState;
            bands[static_cast<size_t>(Category::Gradients)] = std::max(grads, inFirstOptimizer ? params : 0);
            projected.bands = bands;
            projected.liveBytes = 0;
            for (const uint64_t bytes : bands)
                projected.liveBytes += bytes;
            projected.request = 0;
            FixContext fixes = m_fixes;
            fixes.budget = projected;
            appendFixes(d.fixes, { FixKind::Optimizer8bit, FixKind::Zero, FixKind::Offload, FixKind::Lora }, fixes);
            m_out.push_back(std::move(d));
            return;
        }

        const bool stateAppearedEarlier = m_profile.firstOptimizerStateEvent >= 0 && m_oom.step >= 0
            && m_profile.firstOptimizerStateStep >= 0 && m_profile.firstOptimizerStateStep == m_oom.step - 1
            && m_profile.firstOptimizerStateStep <= firstTrainingStep();
        if (!inFirstOptimizer && !stateAppearedEarlier)
            return;
        Diagnosis d = makeDiagnosis("optimizer_step2", stateAppearedEarlier ? 0.8 : 0.75, {});
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
                "the OOM is in the first optimizer.step(), while Adam allocates its state (" + formatBytes(state)
                    + " so far)",
                m_oom.eventIndex);
        }
        evidence(d, "live at the failure: " + bandsText());
        d.summary = "Step 1 fit; Adam's state, created at the first optimizer.step(), is the extra "
            + formatBytes(std::max(state, projectedState)) + " that the next steps cannot hold.";
        appendFixes(d.fixes,
            { FixKind::OptimizerForeach, FixKind::Optimizer8bit, FixKind::MicroBatch, FixKind::Bf16, FixKind::Zero },
            m_fixes);
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
        m_out.push_back(std::move(d));
    }

    void evalAccumulation()
    {
        if (m_oom.phase != Phase::Eval && m_profile.evalRetainedCount == 0)
            return;
        const uint64_t live = m_fixes.budget.liveBytes;
        const bool retains = m_profile.evalRetainedCount >= 3 && safeRatio(m_profile.evalRetainedBytes, live) >= 0.15;
        if (m_oom.phase != Phase::Eval && !retains)
            return;
        double confidence = m_oom.phase == Phase::Eval ? (retains ? 0.85 : 0.5) : 0.45;
        Diagnosis d = makeDiagnosis("eval_accumulation", confidence, {});
        evidence(d, "the OOM is in evaluation (" + where() + ")", m_oom.eventIndex);
        if (m_profile.evalRetainedCount > 0)
            evidence(d,
                std::to_string(m_profile.evalRetainedCount)
                    + " allocations made during evaluation are still live at the failure: "
                    + formatBytes(m_profile.evalRetainedBytes) + ", " + percentText(m_profile.evalRetainedBytes, live)
                    + " of live memory",
                m_profile.firstEvalRetainedEvent);
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

    void leak()
    {
        std::vector<const StepProfile*> training;
        for (const auto& step : m_profile.steps) {
            if (step.step >= firstTrainingStep() && !step.hasEval)
                training.push_back(&step);
        }
        // Compare steps after the first: step 1 still creates gradients and optimizer state.
        if (training.size() < 4)
            return;
        std::vector<uint64_t> starts;
        for (size_t i = 1; i < training.size(); ++i)
            starts.push_back(training[i]->startDynamic());
        uint64_t minStep = UINT64_MAX;
        for (size_t i = 1; i < starts.size(); ++i) {
            if (starts[i] <= starts[i - 1])
                return;
            minStep = std::min(minStep, starts[i] - starts[i - 1]);
        }
        const uint64_t growth = starts.back() - starts.front();
        if (growth < MiB || safeRatio(minStep, growth) < 0.05)
            return;
        Diagnosis d = makeDiagnosis("leak", starts.size() >= 4 ? 0.85 : 0.7, {});
        evidence(d,
            "memory live at the start of each step grows: " + formatBytes(starts.front()) + " at step "
                + std::to_string(training[1]->step) + " to " + formatBytes(starts.back()) + " at step "
                + std::to_string(training.back()->step) + " (" + formatSignedBytes(static_cast<int64_t>(growth))
                + " over " + std::to_string(starts.size() - 1)
                + " steps), counting activations, temporaries and unknown",
            training.back()->firstEvent);
        evidence(d, "every step starts higher than the one before (at least " + formatBytes(minStep) + " more)",
            training[2]->firstEvent);
        d.summary = "Something keeps about " + formatBytes(growth / (starts.size() - 1))
            + " per step alive; the run fails once that adds up.";
        FixContext fixes = m_fixes;
        fixes.caseSavingBytes = growth;
        appendFixes(d.fixes, { FixKind::ReleaseReferences }, fixes);
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
        Diagnosis d = makeDiagnosis("memory_fraction_cap", 0.6, {});
        evidence(d,
            "the driver reported " + formatBytes(m_oom.deviceFreeBytes) + " free at the OOM, more than the "
                + formatBytes(m_oom.requestedBytes) + " requested: only a per-process limit refuses that",
            m_oom.eventIndex);
        d.summary = "The card had room for the request; a per-process memory fraction refused it.";
        appendFixes(d.fixes, { FixKind::MemoryFraction }, m_fixes);
        m_out.push_back(std::move(d));
    }

    void otherProcess()
    {
        if (!m_context.message || !m_context.message->total)
            return;
        const uint64_t total = *m_context.message->total;
        const uint64_t mine = m_oom.reservedBytes + m_oom.deviceFreeBytes;
        if (mine >= total)
            return;
        const uint64_t outside = total - mine;
        const uint64_t explained = m_context.message->selfNonPyTorchBytes.value_or(0) + GiB;
        if (outside <= explained || safeRatio(outside - explained, total) < 0.15)
            return;
        Diagnosis d
            = makeDiagnosis("other_process", 0.45 + 0.35 * clamp01(safeRatio(outside - explained, total) / 0.5), {});
        evidence(d,
            formatBytes(outside) + " of the " + formatBytes(total) + " card was neither PyTorch's cache ("
                + formatBytes(m_oom.reservedBytes) + ") nor free (" + formatBytes(m_oom.deviceFreeBytes)
                + ") at the OOM",
            m_oom.eventIndex);
        d.summary = formatBytes(outside) + " of the card was held outside this run's cache.";
        appendFixes(d.fixes, { FixKind::StopOtherProcess, FixKind::ChooseGpu }, m_fixes);
        m_out.push_back(std::move(d));
    }

    // No specific cause measured: the working set simply outgrew the card; rank the ladder by bands.
    void workingSet()
    {
        Diagnosis d = makeDiagnosis("capacity", 0.5, {});
        d.title = "Live tensors fill the card";
        evidence(d, "at the OOM in " + where() + ": " + bandsText(), m_oom.eventIndex);
        evidence(d,
            "the " + formatBytes(m_oom.requestedBytes) + " request found " + formatBytes(m_oom.deviceFreeBytes)
                + " free on the card and " + formatBytes(m_fixes.budget.fragmentedBytes) + " unused in the cache");
        d.summary = "No single cause stands out: the live tensors outgrew the card. The projected savings below are "
                    "measured from the bands.";
        appendLadder(d.fixes, m_fixes);
        m_out.push_back(std::move(d));
    }

    const SnapshotAnalysis& m_analysis;
    const DeviceAnalysis& m_device;
    OomAnalysis m_oom;
    const SnapshotDiagnosisContext& m_context;
    DeviceProfile m_profile;
    FixContext m_fixes;
    std::optional<uint64_t> m_capacity;
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
    sortDiagnoses(result);
    return result;
}

} // namespace oomlens
