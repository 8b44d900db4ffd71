#include "opening/jobfiles.h"
#include "opening/jobgathering.h"
#include "opening/opening.h"
#include "parsers/filepaths.h"

#include <algorithm>

namespace oomlens {

namespace {

// What the failing rank's case is called: its snapshot, or the one still to be copied here.
std::string failingCaseTitle(const GatheredJob& gathered)
{
    if (!gathered.failingSnapshot.empty())
        return fileNameOf(gathered.failingSnapshot);
    if (!gathered.summary.failingSnapshotToCopy.empty())
        return fileNameOf(gathered.summary.failingSnapshotToCopy) + " (snapshot not here)";
    return {};
}

} // namespace

Opened openJob(
    const std::vector<std::string>& rankFiles, const std::vector<LoadRequest>& beside, const OpenOptions& options)
{
    JobOptions jobOptions;
    jobOptions.analysis = options.analysis;
    if (!jobOptions.analysis.cancel)
        jobOptions.analysis.cancel = options.cancel;
    jobOptions.progress = options.rankProgress;
    jobOptions.cancel = options.cancel;
    // Snapshots are summarized by the worker pool, summaries read; the failing rank's snapshot is found.
    GatheredJob gathered = gatherJob(rankFiles, jobOptions);
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
    std::vector<LoadRequest> failingInputs;
    if (!gathered.failingSnapshot.empty())
        failingInputs.push_back(LoadRequest::file(gathered.failingSnapshot));
    failingInputs.insert(failingInputs.end(), beside.begin(), beside.end());
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

JobInputs jobInputsAmong(const std::vector<LoadRequest>& requests)
{
    std::vector<std::string> files;
    for (const LoadRequest& request : requests) {
        if (request.isFile())
            files.push_back(request.path);
    }
    JobInputs inputs;
    inputs.rankFiles = jobRankFiles(files);
    if (!inputs.isJob())
        return inputs;
    for (const LoadRequest& request : requests) {
        if (!request.isFile()
            || std::find(inputs.rankFiles.begin(), inputs.rankFiles.end(), request.path) == inputs.rankFiles.end())
            inputs.beside.push_back(request);
    }
    return inputs;
}

Opened openInputs(const std::vector<LoadRequest>& requests, const OpenOptions& options)
{
    const JobInputs inputs = jobInputsAmong(requests);
    if (!inputs.isJob())
        return openCase(nullptr, requests, std::string(), options);
    return openJob(inputs.rankFiles, inputs.beside, options);
}

} // namespace oomlens
