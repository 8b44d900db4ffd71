#include "core/snapshotbackend.h"

#include "core/case.h"
#include "core/snapshot.h"

#include <array>
#include <optional>

namespace oomlens {

namespace {

struct BackendNames
{
    std::string_view name;
    std::string_view label;
    std::string_view memoryModule;
};

constexpr std::array<BackendNames, 4> names { {
    { "cuda", "CUDA", "torch.cuda.memory" },
    { "xpu", "Intel XPU", "torch.xpu.memory" },
    { "npu", "Ascend NPU", "torch_npu.npu.memory" },
    { "neuron", "AWS Neuron", "torch.neuron.memory" },
} };

const BackendNames& namesOf(SnapshotBackend backend)
{
    return names[static_cast<size_t>(backend)];
}

// A path component: "torch_npu/" at the start or after a separator, so "my_torch_npu_tools/"
// does not count.
bool hasDirectory(std::string_view path, std::string_view directory)
{
    for (size_t at = path.find(directory); at != std::string_view::npos; at = path.find(directory, at + 1)) {
        const size_t end = at + directory.size();
        const bool startsComponent = at == 0 || path[at - 1] == '/' || path[at - 1] == '\\';
        const bool endsComponent = end == path.size() || path[end] == '/' || path[end] == '\\';
        if (startsComponent && endsComponent)
            return true;
    }
    return false;
}

bool contains(std::string_view text, std::string_view part)
{
    return text.find(part) != std::string_view::npos;
}

// The backend a frame's code belongs to, when it belongs to one other than CUDA. Python frames:
// the vendor's package (torch_npu, torch_neuronx, intel_extension_for_pytorch) or torch's own
// torch/xpu. C++ frames (stacks="all"): the caching allocator that made the block.
std::optional<SnapshotBackend> backendOfFrame(std::string_view filename, std::string_view name)
{
    if (hasDirectory(filename, "torch_npu") || contains(name, "c10_npu::") || contains(name, "NPUCachingAllocator"))
        return SnapshotBackend::Npu;
    if (hasDirectory(filename, "torch_neuronx") || contains(name, "torch_neuronx::")
        || contains(name, "NeuronCachingAllocator"))
        return SnapshotBackend::Neuron;
    const bool torchXpu = contains(filename, "torch/xpu/") || contains(filename, "torch\\xpu\\");
    if (torchXpu || hasDirectory(filename, "intel_extension_for_pytorch") || contains(name, "c10::xpu::")
        || contains(name, "XPUCachingAllocator"))
        return SnapshotBackend::Xpu;
    return std::nullopt;
}

} // namespace

std::string_view snapshotBackendName(SnapshotBackend backend)
{
    return namesOf(backend).name;
}

std::string_view snapshotBackendLabel(SnapshotBackend backend)
{
    return namesOf(backend).label;
}

std::string_view snapshotMemoryModule(SnapshotBackend backend)
{
    return namesOf(backend).memoryModule;
}

SnapshotBackend snapshotBackendFromFrames(const Snapshot& snapshot)
{
    if (!snapshot.frames || !snapshot.strings)
        return SnapshotBackend::Cuda;
    // The interned frames, not the events: a few thousand distinct frames however long the trace.
    std::array<size_t, names.size()> votes {};
    for (size_t i = 0; i < snapshot.frames->frameCount(); ++i) {
        const Frame& frame = snapshot.frames->frame(FrameId(static_cast<uint32_t>(i)));
        if (const auto backend
            = backendOfFrame(snapshot.strings->get(frame.filename), snapshot.strings->get(frame.name)))
            ++votes[static_cast<size_t>(*backend)];
    }
    SnapshotBackend best = SnapshotBackend::Cuda;
    for (size_t b = 1; b < votes.size(); ++b) {
        if (votes[b] > votes[static_cast<size_t>(best)])
            best = static_cast<SnapshotBackend>(b);
    }
    return best;
}

SnapshotBackend snapshotBackend(const Snapshot& snapshot, const std::vector<OomMessage>& messages)
{
    if (const SnapshotBackend fromFrames = snapshotBackendFromFrames(snapshot); fromFrames != SnapshotBackend::Cuda)
        return fromFrames;
    for (const OomMessage& message : messages) {
        if (message.backend == Backend::Xpu)
            return SnapshotBackend::Xpu;
        if (message.backend == Backend::Npu)
            return SnapshotBackend::Npu;
    }
    return SnapshotBackend::Cuda;
}

SnapshotBackend snapshotBackendOf(const Case& input, size_t index)
{
    if (index >= input.snapshots.size() || !input.snapshots[index])
        return SnapshotBackend::Cuda;
    return snapshotBackend(*input.snapshots[index], input.text.oomMessages);
}

} // namespace oomlens
