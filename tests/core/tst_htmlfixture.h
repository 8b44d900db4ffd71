#pragma once

// A small scripted case for the HTML report tests: a snapshot built event by event, the
// per-device analysis the timeline engine would produce for it, an OOM message, a summary and
// diagnoses. Hostile strings (script tags, attribute breakers) sit in frame names, filenames,
// messages and evidence, where real inputs can carry them.

#include "core/case.h"
#include "core/caseanalysis.h"
#include "core/units.h"

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

namespace oomlens::test {

inline const std::string hostileScript = "<script>alert(1)</script>";
inline const std::string hostileAttribute = "\"><img src=x onerror=alert(1)>";

class ReportFixture
{
public:
    ReportFixture()
        : m_strings(std::make_shared<StringTable>())
        , m_frames(std::make_shared<FrameTable>())
    {
        m_device.device = 0;
        m_device.reasons = { "module forward frame", "torch/optim state init", "module .to() / _apply",
            "autograd engine frame", "no stack: allocated before the trace began" };
    }

    StackId stack(const std::vector<std::pair<std::string, std::string>>& nameAndFile)
    {
        std::vector<FrameId> ids;
        int line = 10;
        for (const auto& [name, file] : nameAndFile)
            ids.push_back(m_frames->intern({ m_strings->intern(file), m_strings->intern(name), line++ }));
        return m_frames->internStack(ids.data(), ids.size());
    }

    // A new segment; following allocations are placed in it until it is full.
    void segmentAlloc(uint64_t size)
    {
        const uint64_t address = segmentBase + m_segments.size() * segmentStride;
        m_segments.push_back({ address, size });
        m_bump = address;
        m_bumpEnd = address + size;
        m_reserved += size;
        push(TraceAction::SegmentAlloc, address, size, FrameTable::emptyStack());
    }

    // Returns the allocation's index.
    size_t alloc(uint64_t size, Category category, Phase phase, int32_t step, StackId where, uint16_t reason)
    {
        Allocation allocation;
        allocation.blockSize = (size + 511) / 512 * 512;
        if (m_bump + allocation.blockSize > m_bumpEnd)
            segmentAlloc(std::max<uint64_t>(allocation.blockSize, 20 * MiB));
        allocation.address = m_bump;
        m_bump += allocation.blockSize;
        allocation.requestedSize = size;
        allocation.allocEvent = push(TraceAction::Alloc, allocation.address, size, where);
        allocation.stack = where;
        allocation.category = category;
        allocation.phase = phase;
        allocation.step = step;
        allocation.reason = reason;
        m_device.allocations.push_back(allocation);
        return m_device.allocations.size() - 1;
    }

    // Alive before the trace began (the ring buffer started mid-run).
    size_t preexisting(uint64_t size, Category category, uint16_t reason)
    {
        Allocation allocation;
        allocation.address = preexistingBase + m_preexistingBytes;
        allocation.requestedSize = size;
        allocation.blockSize = size;
        allocation.category = category;
        allocation.reason = reason;
        m_preexistingBytes += size;
        m_device.allocations.push_back(allocation);
        m_device.traceTruncated = true;
        m_reserved += size;
        return m_device.allocations.size() - 1;
    }

    void free(size_t allocation)
    {
        Allocation& a = m_device.allocations[allocation];
        a.freeRequestedEvent = push(TraceAction::FreeRequested, a.address, a.requestedSize, a.stack);
        a.freeEvent = push(TraceAction::FreeCompleted, a.address, a.requestedSize, a.stack);
    }

    void oom(uint64_t request, uint64_t deviceFree, uint64_t largestFreeBlock, uint64_t freeInPool)
    {
        OomAnalysis analysis;
        analysis.requestedBytes = request;
        analysis.deviceFreeBytes = deviceFree;
        analysis.reservedBytes = m_reserved;
        analysis.largestFreeBlock = largestFreeBlock;
        analysis.freeInPoolBytes = freeInPool;
        analysis.eventIndex = push(TraceAction::Oom, deviceFree, request, FrameTable::emptyStack());
        m_pendingOoms.push_back(analysis);
    }

    void phase(Phase phase, int32_t step)
    {
        m_phase = phase;
        m_step = step;
    }

    // Fills in what the analysis would: the peak (first maximum), categories there, the OOMs.
    SnapshotAnalysis finish()
    {
        const auto events = static_cast<int64_t>(m_trace.events.size());
        std::vector<int64_t> delta(static_cast<size_t>(events) + 1, 0);
        uint64_t live = 0;
        for (const Allocation& a : m_device.allocations) {
            if (a.allocEvent < 0)
                live += a.requestedSize;
            else
                delta[static_cast<size_t>(a.allocEvent)] += static_cast<int64_t>(a.requestedSize);
            if (a.freeEvent >= 0)
                delta[static_cast<size_t>(a.freeEvent)] -= static_cast<int64_t>(a.requestedSize);
        }
        uint64_t best = live;
        int64_t bestEvent = -1;
        for (int64_t e = 0; e < events; ++e) {
            live = static_cast<uint64_t>(static_cast<int64_t>(live) + delta[static_cast<size_t>(e)]);
            if (live > best) {
                best = live;
                bestEvent = e;
            }
        }
        m_device.peakAllocatedBytes = best;
        m_device.peakEvent = bestEvent;
        m_device.categoriesAtPeak = categoriesAt(bestEvent);
        for (OomAnalysis oom : m_pendingOoms) {
            oom.liveByCategory = categoriesAt(oom.eventIndex);
            for (uint64_t bytes : oom.liveByCategory)
                oom.allocatedBytes += bytes;
            oom.phase = m_device.eventPhase[static_cast<size_t>(oom.eventIndex)];
            oom.step = m_device.eventStep[static_cast<size_t>(oom.eventIndex)];
            m_device.ooms.push_back(oom);
        }
        int32_t steps = 0;
        for (int32_t step : m_device.eventStep)
            steps = std::max(steps, step);
        m_device.stepCount = steps;
        dumpSegments();
        m_snapshot.traces.push_back(m_trace);
        m_snapshot.strings = m_strings;
        m_snapshot.frames = m_frames;
        m_snapshot.container = "pickle";
        m_snapshot.pickleProtocol = 4;
        SnapshotAnalysis analysis;
        analysis.snapshot = std::make_shared<const Snapshot>(m_snapshot);
        analysis.devices.push_back(m_device);
        analysis.primaryDevice = 0;
        return analysis;
    }

    Snapshot& snapshot() { return m_snapshot; }
    DeviceAnalysis& device() { return m_device; }

private:
    // The segments at the dump: every segment the run made, holding the allocations that are
    // still alive, with the gaps between them as free blocks.
    void dumpSegments()
    {
        std::vector<std::pair<uint64_t, uint64_t>> segments = m_segments;
        if (m_preexistingBytes > 0)
            segments.push_back({ preexistingBase, m_preexistingBytes });
        std::vector<const Allocation*> survivors;
        for (const Allocation& a : m_device.allocations) {
            if (a.freeEvent < 0)
                survivors.push_back(&a);
        }
        for (const auto& [address, size] : segments) {
            Segment segment;
            segment.address = address;
            segment.totalSize = size;
            segment.firstBlock = static_cast<uint32_t>(m_snapshot.blocks.size());
            std::vector<const Allocation*> alive;
            for (const Allocation* a : survivors) {
                if (a->address >= address && a->address < address + size)
                    alive.push_back(a);
            }
            std::sort(alive.begin(), alive.end(), [](auto* x, auto* y) { return x->address < y->address; });
            uint64_t cursor = address;
            const auto addBlock = [&](uint64_t at, uint64_t bytes, BlockState state, uint64_t requested) {
                Block block;
                block.address = at;
                block.size = bytes;
                block.requestedSize = requested;
                block.state = state;
                m_snapshot.blocks.push_back(block);
            };
            for (const Allocation* a : alive) {
                if (a->address > cursor)
                    addBlock(cursor, a->address - cursor, BlockState::Inactive, 0);
                addBlock(a->address, a->blockSize, BlockState::ActiveAllocated, a->requestedSize);
                segment.allocatedSize += a->blockSize;
                cursor = a->address + a->blockSize;
            }
            if (cursor < address + size)
                addBlock(cursor, address + size - cursor, BlockState::Inactive, 0);
            segment.blockCount = static_cast<uint32_t>(m_snapshot.blocks.size()) - segment.firstBlock;
            m_snapshot.segments.push_back(segment);
        }
    }

    static bool liveAfter(const Allocation& a, int64_t event)
    {
        return a.allocEvent <= event && (a.freeEvent < 0 || event < a.freeEvent);
    }

    int64_t push(TraceAction action, uint64_t address, uint64_t size, StackId where)
    {
        TraceEvent event;
        event.action = action;
        event.addr = address;
        event.size = size;
        event.stack = where;
        event.timeUs = 1'700'000'000'000'000 + static_cast<int64_t>(m_trace.events.size()) * 250;
        m_trace.events.push_back(event);
        m_device.eventPhase.push_back(m_phase);
        m_device.eventStep.push_back(m_step);
        return static_cast<int64_t>(m_trace.events.size()) - 1;
    }

    CategoryBytes categoriesAt(int64_t event) const
    {
        CategoryBytes bytes {};
        for (const Allocation& a : m_device.allocations) {
            if (liveAfter(a, event))
                bytes[static_cast<size_t>(a.category)] += a.requestedSize;
        }
        return bytes;
    }

    std::shared_ptr<StringTable> m_strings;
    std::shared_ptr<FrameTable> m_frames;
    Snapshot m_snapshot;
    DeviceTrace m_trace;
    DeviceAnalysis m_device;
    std::vector<OomAnalysis> m_pendingOoms;
    static constexpr uint64_t segmentBase = 0x7f0000000000;
    static constexpr uint64_t segmentStride = uint64_t(1) << 36;
    static constexpr uint64_t preexistingBase = 0x7e0000000000;
    std::vector<std::pair<uint64_t, uint64_t>> m_segments; // address, size
    uint64_t m_bump = 0;
    uint64_t m_bumpEnd = 0;
    uint64_t m_preexistingBytes = 0;
    uint64_t m_reserved = 0;
    Phase m_phase = Phase::Unknown;
    int32_t m_step = -1;
};

// A two-step training run with Adam that dies allocating activations in the backward of step 2,
// plus the text inputs a user would paste beside it.
inline std::pair<Case, CaseAnalysis> hostileTrainingCase()
{
    ReportFixture f;
    const StackId load = f.stack(
        { { "_apply", "torch/nn/modules/module.py" }, { "to", "torch/nn/modules/module.py" }, { "main", "train.py" } });
    const StackId forward = f.stack(
        { { "forward", "torch/nn/modules/linear.py" }, { hostileScript, "model.py" }, { "train_step", "train.py" } });
    const StackId backward
        = f.stack({ { "backward", "torch/autograd/__init__.py" }, { "train_step", hostileAttribute } });
    const StackId adam = f.stack(
        { { "_init_group", "torch/optim/adam.py" }, { "step", "torch/optim/adam.py" }, { "train_step", "train.py" } });

    f.preexisting(512 * MiB, Category::Inputs, 4);
    f.phase(Phase::Load, 0);
    f.segmentAlloc(2 * GiB);
    f.alloc(1 * GiB, Category::Parameters, Phase::Load, 0, load, 2);
    for (int32_t step = 1; step <= 2; ++step) {
        f.phase(Phase::Forward, step);
        const size_t a1 = f.alloc(768 * MiB, Category::Activations, Phase::Forward, step, forward, 0);
        const size_t a2 = f.alloc(256 * MiB + 4096, Category::Activations, Phase::Forward, step, forward, 0);
        f.phase(Phase::Backward, step);
        if (step == 2) {
            f.segmentAlloc(1 * GiB);
            const size_t grads = f.alloc(1 * GiB, Category::Gradients, Phase::Backward, step, backward, 3);
            (void)grads;
            f.oom(3 * GiB, 600 * MiB, 256 * MiB, 768 * MiB);
            break;
        }
        const size_t grads = f.alloc(1 * GiB, Category::Gradients, Phase::Backward, step, backward, 3);
        f.free(a2);
        f.free(a1);
        f.phase(Phase::Optimizer, step);
        f.segmentAlloc(2 * GiB);
        f.alloc(1 * GiB, Category::OptimizerState, Phase::Optimizer, step, adam, 1);
        f.alloc(1 * GiB, Category::OptimizerState, Phase::Optimizer, step, adam, 1);
        f.free(grads);
    }
    AllocatorSettings settings;
    settings.allocConf = "max_split_size_mb:128";
    settings.maxSplitSize = 128 * static_cast<int64_t>(MiB);
    f.snapshot().allocatorSettings = settings;

    Case input;
    input.inputs.push_back({ "logs/" + hostileAttribute + ".log", InputKind::Log, std::nullopt, -1 });
    input.inputs.push_back({ "snap" + hostileScript + ".pickle", InputKind::Snapshot, std::nullopt, 0 });
    input.inputs.push_back({ "broken.bin", InputKind::Unknown, "not a memory snapshot, and not text", -1 });

    OomMessage message;
    message.backend = "cuda";
    message.templateId = "T3";
    message.exception = "torch.OutOfMemoryError";
    message.device = 0;
    message.requestedBytes = 3 * GiB;
    message.totalBytes = 8 * GiB;
    message.freeBytes = 600 * MiB;
    message.allocatedBytes = 5 * GiB + 4096;
    message.reservedBytes = 7 * GiB;
    message.reservedUnallocatedBytes = 2 * GiB - 4096;
    message.processes.push_back({ int64_t(4242), 7 * GiB + 400 * MiB, true });
    message.torchVersionHint = "2.2-2.7";
    message.phase = Phase::Backward;
    message.text = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB. GPU 0 has a total capacity "
                   "of 8.00 GiB of which 600.00 MiB is free. "
        + hostileScript;
    TracebackInfo traceback;
    traceback.frames.push_back({ "train.py", 88, "main", "train_step(batch)" });
    traceback.frames.push_back({ hostileAttribute, 12, "train_step", "loss.backward()" });
    traceback.phase = Phase::Backward;
    traceback.phaseEvidence = "loss.backward() in train_step";
    message.traceback = traceback;
    input.text.oomMessages.push_back(message);

    MemorySummary summary;
    summary.device = 0;
    summary.ooms = 1;
    summary.allocRetries = 3;
    summary.unitEra = "KiB/MiB";
    summary.rows["allocated_memory"] = { 5 * GiB, 6 * GiB, 40 * GiB, 35 * GiB };
    summary.rows["gpu_reserved_memory"] = { 7 * GiB, 7 * GiB, 9 * GiB, 2 * GiB };
    summary.rows["allocations"] = { uint64_t(123), uint64_t(456), uint64_t(7890), uint64_t(7767) };
    input.text.summaries.push_back(summary);

    AllocConfSetting conf;
    conf.raw = "max_split_size_mb:128";
    conf.options["max_split_size_mb"] = "128";
    conf.source = "export";
    input.text.allocConfs.push_back(conf);

    NvidiaSmiTable smi;
    smi.driverVersion = "535.104.05";
    smi.cudaVersion = "12.2";
    smi.gpus.push_back({ 0, "NVIDIA GeForce RTX 3070 " + hostileScript, 7 * GiB + 500 * MiB, 8 * GiB });
    input.text.nvidiaSmi.push_back(smi);

    CaseAnalysis analysis;
    analysis.snapshots.push_back(f.finish());
    input.snapshots.push_back(analysis.snapshots.front().snapshot);

    Diagnosis diagnosis;
    diagnosis.id = "first_backward";
    diagnosis.title = "The first backward pass does not fit";
    diagnosis.confidence = 0.82;
    diagnosis.summary = "Forward fits, but gradients for " + hostileScript + " push step 2's backward over the card.";
    diagnosis.evidence.push_back({ "activations 1.00 GiB live at the OOM in backward of step 2", std::nullopt });
    diagnosis.evidence.push_back({ "largest stack: " + hostileAttribute, std::nullopt });
    Fix bf16;
    bf16.id = "bf16";
    bf16.title = "bf16 autocast";
    bf16.detail = "Halves the activations.";
    bf16.snippet = "with torch.autocast(\"cuda\", dtype=torch.bfloat16):\n    loss = model(x) < 1 && y > 2";
    bf16.projectedSavingBytes = 512 * static_cast<int64_t>(MiB);
    bf16.fitsAfter = false;
    diagnosis.fixes.push_back(bf16);
    Fix lora;
    lora.id = "lora";
    lora.title = "LoRA";
    lora.detail = "Train adapters instead of every weight.";
    lora.changesExperiment = true;
    diagnosis.fixes.push_back(lora);
    analysis.diagnoses.push_back(diagnosis);
    return { std::move(input), std::move(analysis) };
}

} // namespace oomlens::test
