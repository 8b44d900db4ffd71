#include "app/cli/inputs.h"

#include "app/cli/errorlines.h"
#include "core/job/jobsummarizer.h"
#include "parsers/inputloader.h"
#include "parsers/jobgathering.h"
#include "parsers/ranksummaryfiles.h"
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
    GatheredJob gathered = gatherJob(files, jobOptions);
    job.summary = std::move(gathered.summary);
    for (const RankSummary& rank : job.summary.ranks) {
        if (!rank.readable()) {
            ++job.failures;
            // A summary's error is about the snapshot it names, or about the summary itself.
            const std::string file = rank.summaryFile.empty() || rank.file == rank.summaryFile
                ? rank.file
                : rank.file + " (summarized in " + rank.summaryFile + ")";
            printErrorLine(QStringLiteral("oomlens: %1: %2")
                               .arg(QString::fromStdString(file), QString::fromStdString(rank.error)));
        }
    }

    QStringList failingInputs;
    if (!gathered.failingSnapshot.empty())
        failingInputs.append(QString::fromStdString(gathered.failingSnapshot));
    for (const QString& path : paths) {
        if (!rankFiles.contains(path))
            failingInputs.append(path);
    }
    job.failures += loadInputs(failingInputs, job.failingCase);
    return job;
}

} // namespace oomlens::cli
