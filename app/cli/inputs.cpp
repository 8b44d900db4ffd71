#include "app/cli/inputs.h"

#include "app/cli/errorlines.h"
#include "core/job/jobsummarizer.h"
#include "parsers/inputloader.h"
#include "parsers/snapshotfiles.h"

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
                printErrorLine(QStringLiteral("oomlens: %1: %2")
                                   .arg(QString::fromStdString(into.inputs[i].path),
                                       QString::fromStdString(*into.inputs[i].error)));
            }
        }
    }
    return failures;
}

QString notASnapshotError(const QString& path)
{
    return QStringLiteral("oomlens: %1: not a memory snapshot").arg(path);
}

QString noSuchDeviceError(const QString& path)
{
    return QStringLiteral("oomlens: %1: the snapshot has no such device").arg(path);
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
        const QStringList snapshots = snapshotFilesInFolder(path);
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
        if (path != QLatin1String("-") && isSnapshotFile(path))
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
            printErrorLine(QStringLiteral("oomlens: %1: %2")
                               .arg(QString::fromStdString(rank.file), QString::fromStdString(rank.error)));
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
