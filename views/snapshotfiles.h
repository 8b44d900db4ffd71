#pragma once

#include "parsers/snapshotfiles.h"

#include <QStringList>

namespace oomlens {

// The files when every one is a snapshot or a rank summary (`oomlens summarize`) and there are at
// least two, or a summary among them: the rank files of one job (the app opens them as a Job tab).
// Empty otherwise, and the files make one ordinary case.
QStringList jobRankFiles(const QStringList& paths);

} // namespace oomlens
