#include "opening/jobfiles.h"

#include "parsers/ranksummaryfiles.h"
#include "parsers/snapshotfiles.h"

#include <QFileInfo>

namespace oomlens {

QStringList expandFolders(const QStringList& paths)
{
    QStringList expanded;
    for (const QString& path : paths) {
        if (path == QLatin1String("-") || !QFileInfo(path).isDir()) {
            expanded.append(path);
            continue;
        }
        const QStringList rankFiles = jobFilesInFolder(path);
        if (rankFiles.isEmpty())
            expanded.append(path);
        else
            expanded.append(rankFiles);
    }
    return expanded;
}

QStringList jobRankFiles(const QStringList& paths)
{
    QStringList rankFiles;
    bool summaries = false;
    for (const QString& path : paths) {
        if (path == QLatin1String("-"))
            continue;
        if (isRankSummaryFile(path)) {
            summaries = true;
            rankFiles.append(path);
        } else if (isSnapshotFile(path)) {
            rankFiles.append(path);
        }
    }
    // A rank summary means nothing but as a rank of a job, even alone.
    return rankFiles.size() >= 2 || summaries ? rankFiles : QStringList();
}

QStringList besideRanks(const QStringList& paths, const QStringList& rankFiles)
{
    QStringList beside;
    for (const QString& path : paths) {
        if (!rankFiles.contains(path))
            beside.append(path);
    }
    return beside;
}

} // namespace oomlens
