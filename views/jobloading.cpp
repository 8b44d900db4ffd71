#include "views/jobloading.h"

#include "parsers/inputloader.h"
#include "parsers/jobgathering.h"

#include <QFileInfo>

#include <memory>
#include <string>
#include <vector>

namespace oomlens {

LoadedJob loadJob(const QStringList& files, const AnalysisOptions& options, const std::atomic_bool& cancel,
    const std::function<void(size_t done, size_t total)>& progress)
{
    LoadedJob job;
    std::vector<std::string> paths;
    paths.reserve(static_cast<size_t>(files.size()));
    for (const QString& file : files)
        paths.push_back(file.toStdString());

    JobOptions jobOptions;
    jobOptions.analysis = options;
    jobOptions.progress = progress;
    jobOptions.cancel = &cancel;
    // Snapshots are summarized here, summaries read; the failing rank's snapshot is found.
    GatheredJob gathered = gatherJob(paths, jobOptions);
    job.summary = std::move(gathered.summary);
    if (cancel) {
        job.cancelled = true;
        return job;
    }
    if (!gathered.failingSnapshot.empty()) {
        auto loaded = std::make_shared<LoadedCase>();
        addFile(loaded->input, gathered.failingSnapshot);
        loaded->analysis = analyzeCase(loaded->input, options);
        loaded->title = QFileInfo(QString::fromStdString(gathered.failingSnapshot)).fileName();
        job.failingCase = std::move(loaded);
        job.failingSnapshot = gathered.failingSnapshot;
    } else if (!job.summary.failingSnapshotToCopy.empty()) {
        // The job still has its answer, and the report its job section; the rank's own part says
        // nothing until its snapshot is copied here (the notes say which file).
        auto loaded = std::make_shared<LoadedCase>();
        loaded->analysis = analyzeCase(loaded->input, options);
        loaded->title = QStringLiteral("%1 (snapshot not here)")
                            .arg(QFileInfo(QString::fromStdString(job.summary.failingSnapshotToCopy)).fileName());
        job.failingCase = std::move(loaded);
    }
    return job;
}

} // namespace oomlens
