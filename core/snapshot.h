#pragma once

#include "core/ids.h"

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oomlens {

// Interned text: every filename, function name and annotation string is stored once.
// Real snapshots repeat the same few thousand frames millions of times.
class StringTable
{
public:
    StringId intern(std::string_view text);
    std::string_view get(StringId id) const;
    size_t size() const { return m_offsets.size(); }

private:
    std::string m_storage;
    std::vector<uint32_t> m_offsets; // start of each string in m_storage; end is the next start
    std::vector<uint32_t> m_lengths;
    std::vector<uint32_t> m_buckets; // open addressing over string ids + 1 (0 = empty)
    void grow();
};

struct Frame
{
    StringId filename;
    StringId name;
    int32_t line = 0;
    friend bool operator==(const Frame&, const Frame&) = default;
};

// Frames and stacks (lists of frames, innermost first, as PyTorch records them), interned.
class FrameTable
{
public:
    FrameId intern(const Frame& frame);
    const Frame& frame(FrameId id) const { return m_frames[id.value]; }
    size_t frameCount() const { return m_frames.size(); }

    StackId internStack(const FrameId* frames, size_t count);
    struct StackView
    {
        const FrameId* begin_;
        const FrameId* end_;
        const FrameId* begin() const { return begin_; }
        const FrameId* end() const { return end_; }
        size_t size() const { return static_cast<size_t>(end_ - begin_); }
        bool empty() const { return begin_ == end_; }
        FrameId operator[](size_t i) const { return begin_[i]; }
    };
    StackView stack(StackId id) const;
    size_t stackCount() const { return m_stackOffsets.empty() ? 0 : m_stackOffsets.size() - 1; }
    // The empty stack ("allocated before history was recorded"): always id 0.
    static constexpr StackId emptyStack() { return StackId(0); }

    FrameTable();

private:
    std::vector<Frame> m_frames;
    std::vector<uint32_t> m_frameBuckets;
    std::vector<FrameId> m_stackFrames;
    std::vector<uint32_t> m_stackOffsets; // stack i = m_stackFrames[off[i], off[i+1])
    std::vector<uint32_t> m_stackBuckets;
    void growFrames();
    void growStacks();
};

enum class BlockState : uint8_t { ActiveAllocated, ActivePendingFree, Inactive, Unknown };

struct Block
{
    uint64_t address = 0;
    uint64_t size = 0; // rounded, as the allocator holds it
    uint64_t requestedSize = 0; // what the caller asked for; 0 where the era lacks it
    BlockState state = BlockState::Unknown;
    StackId stack = FrameTable::emptyStack();
};

struct PoolId
{
    int64_t first = 0;
    int64_t second = 0;
    bool isDefault() const { return first == 0 && second == 0; }
    friend bool operator==(const PoolId&, const PoolId&) = default;
};

struct Segment
{
    int32_t device = 0;
    uint64_t address = 0;
    uint64_t totalSize = 0;
    uint64_t allocatedSize = 0;
    uint64_t activeSize = 0;
    uint64_t requestedSize = 0;
    int64_t stream = 0;
    bool isLargePool = true;
    bool isExpandable = false;
    PoolId pool;
    StackId stack = FrameTable::emptyStack();
    uint32_t firstBlock = 0; // index into Snapshot::blocks
    uint32_t blockCount = 0;
};

enum class TraceAction : uint8_t {
    Alloc,
    FreeRequested,
    FreeCompleted,
    SegmentAlloc,
    SegmentFree,
    SegmentMap,
    SegmentUnmap,
    Oom,
    Snapshot,
    UserDefined,
    Annotate,
    Free, // viewer-internal merge of free_requested+free_completed; tolerated
    Unknown
};

std::string_view traceActionName(TraceAction action);
TraceAction traceActionFromName(std::string_view name);

// One entry of device_traces[device]. Kept small: a 1M-event trace must fit in
// well under 100 bytes per event.
struct TraceEvent
{
    uint64_t addr = 0; // for Oom: device_free (the entry has no addr)
    uint64_t size = 0;
    int64_t stream = 0;
    int64_t timeUs = 0; // 0 where the era lacks time_us
    StackId stack = FrameTable::emptyStack();
    StringId compileContext; // invalid when absent or empty
    StringId userMetadata; // invalid when absent or empty
    TraceAction action = TraceAction::Unknown;
    // The entry's `pool_id` (newest PyTorch) as 1 + its index in Snapshot::entryPools; 0 when the
    // entry records none. An index, not the pair, so the event stays 48 bytes.
    uint16_t pool = 0;

    uint64_t deviceFree() const { return addr; } // meaningful for Oom only
};

struct DeviceTrace
{
    int32_t device = 0;
    std::vector<TraceEvent> events; // chronological (ring buffer already unrolled by PyTorch)
};

struct AllocatorSettings
{
    std::string allocConf; // PYTORCH_CUDA_ALLOC_CONF as recorded ('' if unset)
    int64_t maxSplitSize = -1; // -1: unlimited
    double garbageCollectionThreshold = 0.0;
    bool expandableSegments = false;
    bool releaseLockOnCudaMalloc = false;
    bool pinnedUseCudaHostRegister = false;
    int64_t pinnedNumRegisterThreads = 0;
    std::vector<std::pair<std::string, int64_t>> roundupPower2Divisions;
};

struct Annotation
{
    int32_t device = 0;
    int64_t timeUs = 0;
    std::vector<std::pair<std::string, std::string>> fields; // e.g. name=ProfilerStep#3, stage=START
};

// Pinned host memory: what PyTorch's CachingHostAllocator (pin_memory=True, DataLoader's pinning
// thread, non_blocking copies) holds in host RAM, written as `host_segments` and `host_traces`
// when history is recorded with record_pinned_host_memory=True (PyTorch 2.14+). Kept beside the
// devices, never among them: these bytes are host RAM and count toward no card.
struct PinnedHostMemory
{
    std::vector<Segment> segments; // one cudaHostAlloc'd (or registered) range each
    std::vector<Block> blocks; // the segments' blocks, contiguous per segment (Segment::firstBlock)
    std::vector<TraceEvent> events; // chronological, like a device's trace
};

// The decoded content of one memory snapshot, immutable once built.
struct Snapshot
{
    enum class Era : uint8_t {
        SegmentList, // ≤1.13 bare list of segments
        BlockHistory, // 1.13/2.0 blocks with `history`
        Traces, // 2.0+ dict with device_traces
    };
    Era era = Era::Traces;

    std::vector<Segment> segments; // flat across devices, in file order
    std::vector<Block> blocks; // all segments' blocks, contiguous per segment
    std::vector<DeviceTrace> traces; // index = device ordinal as in device_traces
    std::optional<AllocatorSettings> allocatorSettings;
    std::vector<Annotation> annotations;
    // The distinct `pool_id`s trace entries carry (TraceEvent::pool), in order of first use.
    std::vector<PoolId> entryPools;
    // Present when the file has `host_segments` or `host_traces`.
    std::optional<PinnedHostMemory> hostMemory;

    std::shared_ptr<const StringTable> strings;
    std::shared_ptr<const FrameTable> frames;

    std::string container; // "pickle", "gzip", "torch.save zip", "json", "memory_viz html"
    int pickleProtocol = 0; // 0 where not a pickle
    std::vector<std::string> warnings; // non-fatal oddities (unknown actions, broken invariants)

    // Devices present anywhere (segments or non-empty traces), ascending.
    std::vector<int32_t> devices() const;
    const DeviceTrace* trace(int32_t device) const;
    size_t totalTraceEvents() const;
    // The pool a trace entry records (alloc, free, segment_* entries of newest PyTorch); nullopt
    // where the entry carries no `pool_id` (PyTorch 2.11 and older).
    std::optional<PoolId> poolOf(const TraceEvent& event) const
    {
        if (event.pool == 0 || event.pool > entryPools.size())
            return std::nullopt;
        return entryPools[event.pool - 1u];
    }
};

} // namespace oomlens
