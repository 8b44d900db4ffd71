#pragma once

#include "core/snapshot.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace oomlens {

enum class SnapshotDecoder { Native, Python };

struct SnapshotReadOptions
{
    // Called now and then with bytes consumed so far and the total; cheap to call.
    std::function<void(uint64_t done, uint64_t total)> progress;
    const std::atomic_bool* cancel = nullptr;
    SnapshotDecoder decoder = SnapshotDecoder::Native;
    // Fall back to the embedded-Python decoder when the native one meets something it does
    // not support (never for safety refusals or truncation).
    bool allowFallback = true;
};

struct SnapshotReadResult
{
    std::shared_ptr<const Snapshot> snapshot; // null on error
    std::string error; // one line, with the byte offset where it applies
    bool cancelled = false;
    SnapshotDecoder usedDecoder = SnapshotDecoder::Native;
};

// True when the bytes look like a snapshot in any container we read (pickle, gzip,
// torch.save ZIP, JSON conversion, memory_viz HTML), judged by content only.
bool looksLikeSnapshot(std::string_view bytes);

// Decodes a snapshot in any supported container. Never executes code from the input.
SnapshotReadResult readSnapshot(std::string_view bytes, const SnapshotReadOptions& options = {});

} // namespace oomlens
