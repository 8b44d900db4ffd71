#pragma once

#include <QString>
#include <QStringList>

namespace oomlens {

// Whether a file is a memory snapshot, judged by its container (pickle opcodes, gzip, ZIP, JSON
// keys) without decoding it: how a drop or File ▸ Open tells the rank files of a job from text.
bool isSnapshotFile(const QString& path);

// The files when there are at least two and every one is a snapshot: the rank files of one job
// (the app opens them as a Job tab). Empty otherwise, and the files make one ordinary case.
QStringList jobRankFiles(const QStringList& paths);

// The snapshot files directly inside `folder`, by name: File ▸ Open Job Folder….
QStringList snapshotFilesInFolder(const QString& folder);

} // namespace oomlens
