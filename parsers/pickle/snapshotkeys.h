#pragma once

#include <array>
#include <cstdint>
#include <string_view>

namespace oomlens::pickle {

// Every dict key the snapshot format uses. SnapshotBuilder interns these first, so a key's
// StringId is its Key value and recognising a field is an integer comparison.
enum Key : uint32_t {
    KAction,
    KAddr,
    KSize,
    KStream,
    KTimeUs,
    KFrames,
    KCompileContext,
    KUserMetadata,
    KDeviceFree,
    KPoolId,
    KCppFrames,
    KCategory,
    KFilename,
    KLine,
    KName,
    KFxNodeOp,
    KFxNodeName,
    KFxOriginalTrace,
    KFxNodeInfo,
    KAddress,
    KRequestedSize,
    KState,
    KHistory,
    KRealSize,
    KDevice,
    KTotalSize,
    KAllocatedSize,
    KActiveSize,
    KSegmentType,
    KSegmentPoolId,
    KIsExpandable,
    KBlocks,
    KSegments,
    KDeviceTraces,
    KAllocatorSettings,
    KExternalAnnotations,
    KHostSegments,
    KHostTraces,
    KAllocConf,
    KMaxSplitSize,
    KGcThreshold,
    KExpandableSegments,
    KPinnedThreads,
    KReleaseLock,
    KPinnedHostRegister,
    KRoundup,
    KGraphCaptureReuse,
    KeyCount
};

inline constexpr std::array<std::string_view, KeyCount> keyNames = { "action", "addr", "size", "stream", "time_us",
    "frames", "compile_context", "user_metadata", "device_free", "pool_id", "cpp_frames", "category", "filename",
    "line", "name", "fx_node_op", "fx_node_name", "fx_original_trace", "fx_node_info", "address", "requested_size",
    "state", "history", "real_size", "device", "total_size", "allocated_size", "active_size", "segment_type",
    "segment_pool_id", "is_expandable", "blocks", "segments", "device_traces", "allocator_settings",
    "external_annotations", "host_segments", "host_traces", "PYTORCH_CUDA_ALLOC_CONF", "max_split_size",
    "garbage_collection_threshold", "expandable_segments", "pinned_num_register_threads", "release_lock_on_cudamalloc",
    "pinned_use_cuda_host_register", "roundup_power2_divisions", "graph_capture_record_stream_reuse" };

// Interned right after the keys, in this order.
inline constexpr uint32_t stateBase = KeyCount;
inline constexpr std::array<std::string_view, 4> stateNames
    = { "active_allocated", "active_pending_free", "inactive", "active_awaiting_free" };
inline constexpr uint32_t segmentTypeBase = stateBase + stateNames.size();
inline constexpr std::array<std::string_view, 2> segmentTypeNames = { "large", "small" };
inline constexpr uint32_t actionBase = segmentTypeBase + segmentTypeNames.size();

} // namespace oomlens::pickle
