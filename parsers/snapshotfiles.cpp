#include "parsers/snapshotfiles.h"

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

QStringList snapshotFilesInFolder(const QString& folder)
{
    QStringList files;
    const QDir directory(folder);
    for (const QString& name : directory.entryList(QDir::Files, QDir::Name)) {
        const QString file = directory.filePath(name);
        if (isSnapshotFile(file))
            files.append(file);
    }
    return files;
}

} // namespace oomlens
