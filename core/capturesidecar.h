#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace oomlens {

// What the capture helper (python/oomlens_capture) records beside a snapshot because the snapshot
// itself lacks it: the card, the environment and the exception (product.md §5). It comes from
// `NAME.oomlens.json` beside `NAME.pickle`, or the same object in the snapshot's `user_metadata`.
// Every field is optional: a hand-written or older sidecar may carry any subset.
struct CaptureSidecar
{
    std::optional<std::string> deviceName; // "NVIDIA A100-SXM4-80GB"
    std::optional<uint64_t> totalMemoryBytes; // the card's capacity, torch.cuda.get_device_properties().total_memory
    std::optional<std::string> nvidiaSmi; // the text nvidia-smi printed at the failure
    std::optional<std::string> torchVersion;
    std::optional<std::string> cudaVersion;
    std::optional<std::string> allocConf; // PYTORCH_CUDA_ALLOC_CONF as it was set
    std::optional<int> rank;
    std::optional<int> worldSize;
    std::optional<std::string> exception; // str() of the OutOfMemoryError
    // Where it was read from: the sidecar file's path, or "SNAPSHOT (user_metadata)" when embedded.
    std::string sourcePath;
    // Index into Case::snapshots of the snapshot it describes, -1 when not known.
    int snapshotIndex = -1;
};

} // namespace oomlens
