#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>

namespace oomlens::pickle {

enum class ContainerKind { None, Pickle, Gzip, TorchZip, Json, MemoVizHtml };

// Judged by content only: a pickle (PROTO 2..5), gzip around any of these, a torch.save ZIP with
// a data.pkl, a JSON conversion of the snapshot dict/list, or a _memory_viz HTML page with its
// base64 pickle. Text that merely mentions snapshots is not claimed.
ContainerKind sniffContainer(std::string_view bytes);

struct Unwrapped
{
    // Owns the payload when it had to be inflated or decoded. On the heap so that `payload` stays
    // valid when an Unwrapped moves: a short std::string keeps its characters inside the object.
    std::unique_ptr<std::string> storage;
    std::string_view payload; // the pickle or JSON text
    std::string container; // "pickle", "gzip", "torch.save zip", "json", "memory_viz html"
    bool json = false;
};

// Finds the snapshot payload inside its container. Throws DecodeError (Format, or Cancelled).
Unwrapped unwrapSnapshot(std::string_view bytes, const std::atomic_bool* cancel);

// Limit on inflated size: a gzip bomb stops here with an error instead of exhausting memory.
inline constexpr uint64_t maxInflatedBytes = uint64_t(8) << 30;

} // namespace oomlens::pickle
