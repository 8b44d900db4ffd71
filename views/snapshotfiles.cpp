#include "views/snapshotfiles.h"

#include "parsers/ranksummaryfiles.h"

namespace oomlens {

QStringList jobRankFiles(const QStringList& paths)
{
    bool summaries = false;
    for (const QString& path : paths) {
        const bool summary = isRankSummaryFile(path);
        if (!summary && !isSnapshotFile(path))
            return {};
        summaries = summaries || summary;
    }
    // A rank summary (`oomlens summarize`) means nothing but as a rank of a job, even alone.
    return paths.size() >= 2 || (summaries && !paths.isEmpty()) ? paths : QStringList();
}

} // namespace oomlens
