#pragma once

#include "core/snapshot.h"
#include "parsers/snapshotreader.h"

#include <QByteArray>

#include <memory>
#include <string_view>

namespace oomlens::test {

inline std::string_view view(const QByteArray& bytes)
{
    return std::string_view(bytes.constData(), static_cast<size_t>(bytes.size()));
}

// Decodes a snapshot file's bytes with one decoder and no fallback to the other; null (with the
// reader's message as a warning) when it does not read.
std::shared_ptr<const Snapshot> readSnapshotBytes(
    const QByteArray& bytes, SnapshotDecoder decoder = SnapshotDecoder::Native);

} // namespace oomlens::test
