#include "views/snapshotfiles.h"

#include "parsers/snapshotreader.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <string_view>

namespace oomlens {

bool isSnapshotFile(const QString& path)
{
    const QFileInfo info(path);
    if (!info.isFile() || info.size() == 0)
        return false;
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly))
        return false;
    // A map touches only the pages the sniffer reads (the first few, a ZIP's directory at the end).
    if (uchar* mapped = file.map(0, file.size())) {
        const bool snapshot = looksLikeSnapshot(
            std::string_view(reinterpret_cast<const char*>(mapped), static_cast<size_t>(file.size())));
        file.unmap(mapped);
        return snapshot;
    }
    const QByteArray head = file.read(1 << 20);
    return looksLikeSnapshot(std::string_view(head.constData(), static_cast<size_t>(head.size())));
}

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

QStringList snapshotFilesInFolder(const QString& folder)
{
    QStringList files;
    const QFileInfoList entries = QDir(folder).entryInfoList(QDir::Files | QDir::Readable, QDir::Name);
    for (const QFileInfo& entry : entries) {
        if (isSnapshotFile(entry.absoluteFilePath()))
            files << entry.absoluteFilePath();
    }
    return files;
}

} // namespace oomlens
