#include "opening/jobfiles.h"
#include "opening/jobgathering.h"
#include "opening/opening.h"

#include <QFileInfo>

namespace oomlens {

namespace {

QString fileName(const std::string& path)
{
    return QFileInfo(QString::fromStdString(path)).fileName();
}

// What the failing rank's case is called: its snapshot, or the one still to be copied here.
QString failingCaseTitle(const GatheredJob& gathered)
{
    if (!gathered.failingSnapshot.empty())
        return fileName(gathered.failingSnapshot);
    if (!gathered.summary.failingSnapshotToCopy.empty())
        return QStringLiteral("%1 (snapshot not here)").arg(fileName(gathered.summary.failingSnapshotToCopy));
    return {};
}

} // namespace

std::string InputFailure::where() const
{
    return summarizedIn.empty() ? path : path + " (summarized in " + summarizedIn + ")";
}

Opened openJob(const QStringList& rankFiles, const QList<LoadRequest>& beside, const OpenOptions& options)
{
    std::vector<std::string> files;
    files.reserve(size_t(rankFiles.size()));
    for (const QString& file : rankFiles)
        files.push_back(file.toStdString());
    JobOptions jobOptions;
    jobOptions.analysis = options.analysis;
    if (!jobOptions.analysis.cancel)
        jobOptions.analysis.cancel = options.cancel;
    jobOptions.progress = options.rankProgress;
    jobOptions.cancel = options.cancel;
    // Snapshots are summarized by the worker pool, summaries read; the failing rank's snapshot is found.
    GatheredJob gathered = gatherJob(files, jobOptions);
    Opened opened;
    if (options.cancel && *options.cancel) {
        opened.cancelled = true;
        return opened;
    }
    for (const RankSummary& rank : gathered.summary.ranks) {
        if (rank.readable())
            continue;
        // A summary's error is about the snapshot it names, or about the summary itself.
        const bool aboutItsSnapshot = !rank.summaryFile.empty() && rank.file != rank.summaryFile;
        opened.failures.push_back(
            { rank.file, rank.error, false, aboutItsSnapshot ? rank.summaryFile : std::string() });
    }

    // The failing rank read in full, with the text given beside the ranks: the job's diagnosis.
    QList<LoadRequest> failingInputs;
    if (!gathered.failingSnapshot.empty())
        failingInputs.append(LoadRequest::file(QString::fromStdString(gathered.failingSnapshot)));
    failingInputs.append(beside);
    OpenOptions caseOptions = options;
    caseOptions.timelineFirst = {};
    Opened failing = openCase(nullptr, failingInputs, failingCaseTitle(gathered), caseOptions);
    opened.failures.insert(opened.failures.end(), failing.failures.begin(), failing.failures.end());
    opened.cancelled = failing.cancelled;
    opened.loaded = std::move(failing.loaded);
    opened.job = std::move(gathered.summary);
    opened.failingSnapshot = std::move(gathered.failingSnapshot);
    return opened;
}

Opened openInputs(const QList<LoadRequest>& requests, const OpenOptions& options)
{
    QStringList files;
    for (const LoadRequest& request : requests) {
        if (request.isFile())
            files.append(request.path);
    }
    const QStringList rankFiles = jobRankFiles(files);
    if (rankFiles.isEmpty())
        return openCase(nullptr, requests, QString(), options);
    QList<LoadRequest> beside;
    for (const LoadRequest& request : requests) {
        if (!request.isFile() || !rankFiles.contains(request.path))
            beside.append(request);
    }
    return openJob(rankFiles, beside, options);
}

} // namespace oomlens
