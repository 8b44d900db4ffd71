#include "opening/jobgathering.h"

#include "core/job/jobassembly.h"
#include "core/job/ranksummary.h"
#include "core/units.h"
#include "parsers/filepaths.h"
#include "parsers/inputloader.h"
#include "parsers/ranksummaryfiles.h"

#include <algorithm>
#include <optional>
#include <unordered_set>

namespace oomlens {

namespace {

struct SummaryEntry
{
    SummarizedRank summarized;
    std::string givenSnapshot; // the same snapshot given here too, when it was
};

// Drops the summaries that describe a snapshot already described, and the snapshots given
// directly that a summary describes (remembering where that snapshot lies). One rank is one rank
// file: the same bytes under another rank's name are another rank (ranks replaying the same
// batches), so the summaries give the job the snapshots give. Each summary claims at most one
// snapshot, the one at its recorded path first.
void removeDuplicates(std::vector<SummaryEntry>& summaries, std::vector<std::string>& snapshots)
{
    std::vector<SummaryEntry> unique;
    for (SummaryEntry& entry : summaries) {
        const bool seen = std::any_of(unique.begin(), unique.end(),
            [&](const SummaryEntry& kept) { return sameSnapshot(kept.summarized, entry.summarized); });
        if (!seen)
            unique.push_back(std::move(entry));
    }
    summaries = std::move(unique);

    struct Given
    {
        std::string absolute;
        std::optional<SnapshotIdentity> identity; // read only when some summary names its size
        bool claimed = false;
    };
    std::vector<Given> given;
    for (const std::string& snapshot : snapshots) {
        Given file { absoluteFilePath(snapshot), std::nullopt, false };
        const uint64_t size = fileSizeAt(snapshot);
        if (std::any_of(summaries.begin(), summaries.end(),
                [&](const SummaryEntry& entry) { return entry.summarized.snapshot.sizeBytes == size; }))
            file.identity = identifySnapshotFile(snapshot);
        given.push_back(std::move(file));
    }
    for (const bool atRecordedPath : { true, false }) {
        for (size_t i = 0; i < given.size(); ++i) {
            if (given[i].claimed || !given[i].identity)
                continue;
            for (SummaryEntry& entry : summaries) {
                if (!entry.givenSnapshot.empty() || (atRecordedPath && entry.summarized.rank.file != given[i].absolute))
                    continue;
                if (describesSnapshot(entry.summarized, given[i].absolute, *given[i].identity)) {
                    entry.givenSnapshot = snapshots[i];
                    given[i].claimed = true;
                    break;
                }
            }
        }
    }
    std::vector<std::string> remaining;
    for (size_t i = 0; i < given.size(); ++i) {
        if (!given[i].claimed)
            remaining.push_back(snapshots[i]);
    }
    snapshots = std::move(remaining);
}

// Where the snapshot a summary describes can be opened here: given on the command line, at the
// path it was summarized under (a shared file system, or the same layout copied), or under its
// own name beside the summary (copied next to it). Each is checked to be the same file.
std::optional<std::string> reachableSnapshot(const SummaryEntry& entry)
{
    if (!entry.givenSnapshot.empty())
        return entry.givenSnapshot;
    const SnapshotIdentity& recorded = entry.summarized.snapshot;
    const std::string beside = pathInFolder(folderOf(entry.summarized.rank.summaryFile), fileNameOf(recorded.path));
    for (const std::string& candidate : { recorded.path, beside }) {
        if (!isRegularFile(candidate) || fileSizeAt(candidate) != recorded.sizeBytes)
            continue;
        if (identifySnapshotFile(candidate).sameContent(recorded))
            return candidate;
    }
    return std::nullopt;
}

void findFailingSnapshot(GatheredJob& job, const std::vector<SummaryEntry>& summaries)
{
    const RankSummary* failing = job.summary.failing();
    if (!failing)
        return;
    if (failing->summaryFile.empty()) {
        job.failingSnapshot = failing->file;
        return;
    }
    for (const SummaryEntry& entry : summaries) {
        if (entry.summarized.rank.summaryFile != failing->summaryFile)
            continue;
        if (const std::optional<std::string> path = reachableSnapshot(entry)) {
            job.failingSnapshot = *path;
            return;
        }
        const SnapshotIdentity& snapshot = entry.summarized.snapshot;
        job.summary.failingSnapshotToCopy = snapshot.path;
        // First: without it the rank's diagnosis below is missing, and this says how to get it.
        job.summary.notes.insert(job.summary.notes.begin(),
            "the failing rank's snapshot is not here: copy " + snapshot.path + " (" + formatBytes(snapshot.sizeBytes)
                + ") from where it was summarized and put it beside " + failing->summaryFile
                + " (or give its path) for the rank's full diagnosis");
        return;
    }
}

} // namespace

Case loadRankFile(const std::string& path)
{
    Case rankCase;
    addFile(rankCase, path); // with the capture sidecar beside it, where the rank may be written
    return rankCase;
}

GatheredJob gatherJob(const std::vector<std::string>& files, const JobOptions& options)
{
    std::vector<std::string> snapshots;
    std::vector<SummaryEntry> summaries;
    std::vector<RankSummary> unreadableSummaries;
    std::unordered_set<std::string> seen; // a file named twice is one rank file
    for (const std::string& file : files) {
        if (!seen.insert(absoluteFilePath(file)).second)
            continue;
        if (!isRankSummaryFile(file)) {
            snapshots.push_back(file);
            continue;
        }
        RankSummaryRead read = readRankSummaryFile(file);
        if (read.summary) {
            summaries.push_back({ std::move(*read.summary), {} });
        } else {
            RankSummary rank = unreadableRank(file, std::move(read.error));
            rank.summaryFile = file;
            unreadableSummaries.push_back(std::move(rank));
        }
    }
    removeDuplicates(summaries, snapshots);

    std::vector<RankSummary> ranks = summarizeRankFiles(snapshots, loadRankFile, options);
    for (const SummaryEntry& entry : summaries)
        ranks.push_back(entry.summarized.rank);
    for (RankSummary& rank : unreadableSummaries)
        ranks.push_back(std::move(rank));

    GatheredJob job;
    job.summary = assembleJob(std::move(ranks));
    job.summary.workers = snapshots.empty() ? 0 : jobWorkerCount(snapshots.size(), options.maxWorkers);
    job.summary.fromSummaries = summaries.size();
    findFailingSnapshot(job, summaries);
    return job;
}

} // namespace oomlens
