#include "app/cli/inputs.h"

#include "core/job/jobsummarizer.h"
#include "parsers/inputloader.h"

#include <QDir>
#include <QFile>
#include <QFileInfo>

#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>

namespace oomlens::cli {

namespace {

std::string readStdin()
{
    std::freopen(nullptr, "rb", stdin);
    return std::string(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
}

// Sniffs the container only (pickle opcodes, gzip, ZIP directory, JSON keys): the pages it
// touches are the first few and, for a ZIP, the last; the rest of the file is never read here.
bool isSnapshotFile(const QString& path)
{
    if (path == QLatin1String("-") || QFileInfo(path).isDir())
        return false;
    QFile file(path);
    if (!file.open(QIODevice::ReadOnly) || file.size() == 0)
        return false;
    const qint64 size = file.size();
    if (uchar* mapped = file.map(0, size)) {
        const bool snapshot
            = looksLikeSnapshot(std::string_view(reinterpret_cast<const char*>(mapped), static_cast<size_t>(size)));
        file.unmap(mapped);
        return snapshot;
    }
    const QByteArray head = file.read(1 << 20);
    return looksLikeSnapshot(std::string_view(head.constData(), static_cast<size_t>(head.size())));
}

} // namespace

int loadInputs(const QStringList& paths, Case& into)
{
    int failures = 0;
    for (const QString& path : paths) {
        const size_t before = into.inputs.size();
        if (path == QLatin1String("-"))
            addInput(into, "-", readStdin());
        else
            addFile(into, path.toStdString());
        for (size_t i = before; i < into.inputs.size(); ++i) {
            if (into.inputs[i].error) {
                // A broken capture sidecar is a warning: the snapshot beside it was still read.
                if (into.inputs[i].kind != InputKind::Sidecar)
                    ++failures;
                std::fprintf(stderr, "oomlens: %s: %s\n", into.inputs[i].path.c_str(), into.inputs[i].error->c_str());
            }
        }
    }
    return failures;
}

QStringList expandFolders(const QStringList& paths)
{
    QStringList expanded;
    for (const QString& path : paths) {
        const QFileInfo info(path);
        if (path == QLatin1String("-") || !info.isDir()) {
            expanded.append(path);
            continue;
        }
        const QDir folder(path);
        QStringList snapshots;
        for (const QString& name : folder.entryList(QDir::Files, QDir::Name)) {
            const QString file = folder.filePath(name);
            if (isSnapshotFile(file))
                snapshots.append(file);
        }
        if (snapshots.isEmpty())
            expanded.append(path);
        else
            expanded.append(snapshots);
    }
    return expanded;
}

QStringList jobRankFiles(const QStringList& paths)
{
    QStringList snapshots;
    for (const QString& path : paths) {
        if (isSnapshotFile(path))
            snapshots.append(path);
    }
    return snapshots.size() >= 2 ? snapshots : QStringList();
}

Case loadRankFile(const std::string& path)
{
    Case rankCase;
    addFile(rankCase, path);
    return rankCase;
}

LoadedJob loadJob(const QStringList& paths, const QStringList& rankFiles, const AnalysisOptions& options)
{
    LoadedJob job;
    std::vector<std::string> files;
    for (const QString& path : rankFiles)
        files.push_back(path.toStdString());
    JobOptions jobOptions;
    jobOptions.analysis = options;
    job.summary = summarizeJob(files, loadRankFile, jobOptions);
    for (const RankSummary& rank : job.summary.ranks) {
        if (!rank.readable()) {
            ++job.failures;
            std::fprintf(stderr, "oomlens: %s: %s\n", rank.file.c_str(), rank.error.c_str());
        }
    }

    QStringList failingInputs;
    if (const RankSummary* failing = job.summary.failing())
        failingInputs.append(QString::fromStdString(failing->file));
    for (const QString& path : paths) {
        if (!rankFiles.contains(path))
            failingInputs.append(path);
    }
    job.failures += loadInputs(failingInputs, job.failingCase);
    return job;
}

} // namespace oomlens::cli
