#include "common/snapshotbytes.h"

#include <QtGlobal>

namespace oomlens::test {

std::shared_ptr<const Snapshot> readSnapshotBytes(const QByteArray& bytes, SnapshotDecoder decoder)
{
    SnapshotReadOptions options;
    options.decoder = decoder;
    options.allowFallback = false;
    const auto result = readSnapshot(view(bytes), options);
    if (!result.snapshot)
        qWarning("read failed: %s", result.error.c_str());
    return result.snapshot;
}

} // namespace oomlens::test
