#pragma once

#include "parsers/snapshotfiles.h"

#include <QStringList>

namespace oomlens {

// The files when there are at least two and every one is a snapshot: the rank files of one job
// (the app opens them as a Job tab). Empty otherwise, and the files make one ordinary case.
QStringList jobRankFiles(const QStringList& paths);

} // namespace oomlens
