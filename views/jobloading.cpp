#include "views/jobloading.h"

#include "core/job/jobsummarizer.h"
#include "parsers/inputloader.h"

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
    // addFile reads the capture sidecar beside each rank too, where the rank number may come from.
    const RankLoader loadRank = [](const std::string& file) {
        Case rankCase;
        addFile(rankCase, file);
        return rankCase;
    };
    job.summary = summarizeJob(paths, loadRank, jobOptions);
    if (cancel) {
        job.cancelled = true;
        return job;
    }
    if (const RankSummary* failing = job.summary.failing()) {
        auto loaded = std::make_shared<LoadedCase>();
        addFile(loaded->input, failing->file);
        loaded->analysis = analyzeCase(loaded->input, options);
        loaded->title = QFileInfo(QString::fromStdString(failing->file)).fileName();
        job.failingCase = std::move(loaded);
    }
    return job;
}

} // namespace oomlens
