#include "parsers/ranksummaryfiles.h"

#include "parsers/filemapping.h"
#include "parsers/inputfile.h"
#include "parsers/snapshotfiles.h"
#include "parsers/text/textlines.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <stdexcept>

namespace oomlens {

namespace {

// A summary names its key within its first 4 KB (core/job/ranksummaryfile.cpp).
constexpr qint64 sniffBytes = 4096;

} // namespace

bool isRankSummaryFile(const QString& path)
{
    QFile file(path);
    if (!QFileInfo(path).isFile() || !file.open(QIODevice::ReadOnly))
        return false;
    const QByteArray head = file.read(sniffBytes);
    return looksLikeRankSummary(std::string_view(head.constData(), static_cast<size_t>(head.size())));
}

RankSummaryRead readRankSummaryFile(const std::string& path)
{
    RankSummaryRead result;
    std::string error;
    const std::optional<QByteArray> bytes = readSmallFile(QString::fromStdString(path), maxStreamBytes, &error);
    if (!bytes) {
        result.error = "cannot read the summary (" + error + ")";
        return result;
    }
    try {
        result.summary
            = summarizedRankFromJson(std::string_view(bytes->constData(), static_cast<size_t>(bytes->size())));
        result.summary->rank.summaryFile = path;
    } catch (const std::exception& e) {
        result.error = text::sanitizedUtf8(e.what()); // a parse error quotes the file's bytes
    }
    return result;
}

SnapshotIdentity identifySnapshotFile(const std::string& path)
{
    SnapshotIdentity identity;
    identity.path = path;
    QFile file(QString::fromStdString(path));
    if (!file.open(QIODevice::ReadOnly))
        return identity;
    identity.sizeBytes = static_cast<uint64_t>(file.size());
    if (std::optional<FileMapping> mapping = mapWholeFile(file)) {
        identity.hash = snapshotContentHash(mapping->bytes);
    } else {
        const QByteArray bytes = file.readAll();
        identity.sizeBytes = static_cast<uint64_t>(bytes.size());
        identity.hash = snapshotContentHash(std::string_view(bytes.constData(), static_cast<size_t>(bytes.size())));
    }
    return identity;
}

QStringList jobFilesInFolder(const QString& folder)
{
    QStringList files;
    const QDir directory(folder);
    for (const QString& name : directory.entryList(QDir::Files, QDir::Name)) {
        const QString file = directory.filePath(name);
        if (isSnapshotFile(file) || isRankSummaryFile(file))
            files.append(file);
    }
    return files;
}

} // namespace oomlens
