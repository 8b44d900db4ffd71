#pragma once

#include <QString>
#include <QStringList>

namespace oomlens {

// Whether a file is a memory snapshot, judged by its container (pickle opcodes, gzip, ZIP, JSON
// keys) without decoding it: how the CLI and the app tell the rank files of a job from text.
bool isSnapshotFile(const QString& path);

// The snapshot files directly inside `folder`, by name: a job's output directory.
QStringList snapshotFilesInFolder(const QString& folder);

} // namespace oomlens
