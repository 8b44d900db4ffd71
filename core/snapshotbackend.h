#pragma once

// Which PyTorch backend wrote a memory snapshot. The format is CUDA's caching allocator's, and the
// allocators modelled on it write the same keys: Intel XPU (`torch.xpu.memory._snapshot`), Ascend
// NPU (torch_npu's `torch_npu.npu.memory._snapshot`), AWS Neuron (torch-neuronx's native backend).
// Nothing in the file names its producer, so it is told from the content: the frames the stacks
// recorded (torch_npu's and torch-neuronx's Python packages, torch/xpu, the C++ allocators'
// namespaces) and, beside the snapshot, an OOM message naming the device ("XPU out of memory").
// The JSON, the text output, the report and the app name the backend, and the advice on recording
// a history names its module, so an XPU run is not told to call torch.cuda.

#include "core/backend.h"

#include <string_view>
#include <vector>

namespace oomlens {

struct Case;
struct OomMessage;
struct Snapshot;

enum class SnapshotBackend : unsigned char { Cuda, Xpu, Npu, Neuron };

// "cuda", "xpu", "npu", "neuron": the JSON's `backend` of a snapshot.
std::string_view snapshotBackendName(SnapshotBackend backend);
// "CUDA", "Intel XPU", "Ascend NPU", "AWS Neuron": how the text, the report and the app say it.
std::string_view snapshotBackendLabel(SnapshotBackend backend);
// The Python module whose _record_memory_history/_dump_snapshot record this backend's history.
std::string_view snapshotMemoryModule(SnapshotBackend backend);

// From the frames alone; Cuda when no frame names another backend (or the stacks were not recorded).
SnapshotBackend snapshotBackendFromFrames(const Snapshot& snapshot);
// From the frames, else from the OOM messages of the same case (a snapshot and the message its
// run printed come from one device); Cuda when neither names another backend.
SnapshotBackend snapshotBackend(const Snapshot& snapshot, const std::vector<OomMessage>& messages);
// The backend of the case's snapshot `index` (Case::snapshots).
SnapshotBackend snapshotBackendOf(const Case& input, size_t index);

} // namespace oomlens
