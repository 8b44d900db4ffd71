#include "opening/jobfiles.h"

#include "parsers/ranksummaryfiles.h"
#include "parsers/sidecarreader.h"
#include "parsers/snapshotfiles.h"

#include <QDir>
#include <QFileInfo>

#include <set>
#include <string>

namespace oomlens {

namespace {

// Everything a folder holds, by name: its files and subfolders, but hidden entries and the capture
// sidecars that are read with the snapshot beside them (NAME.oomlens.json).
QStringList folderEntries(const QString& folder)
{
    const QDir directory(folder);
    QStringList entries;
    std::set<std::string> sidecars;
    for (const QString& name : directory.entryList(QDir::Files | QDir::Dirs | QDir::NoDotAndDotDot, QDir::Name)) {
        const QString path = directory.filePath(name);
        entries.append(path);
        if (isSnapshotFile(path)) {
            for (std::string& sidecar : sidecarPathsFor(path.toStdString()))
                sidecars.insert(std::move(sidecar));
        }
    }
    entries.removeIf([&sidecars](const QString& path) { return sidecars.count(path.toStdString()) > 0; });
    return entries;
}

} // namespace

QStringList expandFolders(const QStringList& paths)
{
    QStringList expanded;
    for (const QString& path : paths) {
        const QStringList entries
            = path == QLatin1String("-") || !QFileInfo(path).isDir() ? QStringList() : folderEntries(path);
        if (entries.isEmpty())
            expanded.append(path);
        else
            expanded.append(entries);
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
