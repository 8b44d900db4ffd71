#include "views/snapshotfiles.h"

namespace oomlens {

QStringList jobRankFiles(const QStringList& paths)
{
    if (paths.size() < 2)
        return {};
    for (const QString& path : paths) {
        if (!isSnapshotFile(path))
            return {};
    }
    return paths;
}

} // namespace oomlens
