#include "core/job/jobsummarizer.h"

#include "core/caseanalysis.h"
#include "core/job/jobassembly.h"
#include "core/job/ranksummary.h"

#include <algorithm>
#include <exception>
#include <new>
#include <thread>

namespace oomlens {

namespace {

RankSummary summarizeFile(const std::string& file, const RankLoader& load, const AnalysisOptions& options)
{
    try {
        // The case and its analysis are the decoded state; both die at the end of this scope,
        // before the worker takes the next file.
        const Case rankCase = load(file);
        const CaseAnalysis analysis = analyzeCase(rankCase, options);
        return summarizeRank(file, rankCase, analysis);
    } catch (const std::bad_alloc&) {
        return unreadableRank(file, "out of memory while reading the rank's snapshot");
    } catch (const std::exception& e) {
        return unreadableRank(file, std::string("cannot summarize the rank: ") + e.what());
    }
}

} // namespace

size_t jobWorkerCount(size_t files, size_t maxWorkers)
{
    const size_t cores = std::max<size_t>(1, std::thread::hardware_concurrency());
    const size_t limit = maxWorkers == 0 ? cores : maxWorkers;
    return std::max<size_t>(1, std::min(limit, files));
}

std::vector<RankSummary> summarizeRankFiles(
    const std::vector<std::string>& files, const RankLoader& load, const JobOptions& options)
{
    std::vector<RankSummary> ranks(files.size());
    std::atomic_size_t next { 0 };
    std::atomic_size_t done { 0 };
    const auto work = [&] {
        for (size_t i = next++; i < files.size(); i = next++) {
            if (options.cancel && options.cancel->load())
                ranks[i] = unreadableRank(files[i], "loading was cancelled");
            else
                ranks[i] = summarizeFile(files[i], load, options.analysis);
            if (options.rankDone)
                options.rankDone(i, ranks[i]);
            const size_t finished = ++done;
            if (options.progress)
                options.progress(finished, files.size());
        }
    };

    const size_t workers = jobWorkerCount(files.size(), options.maxWorkers);
    {
        // The calling thread is one of the workers: a job of one file spawns no thread.
        std::vector<std::jthread> pool;
        pool.reserve(workers - 1);
        for (size_t w = 1; w < workers; ++w)
            pool.emplace_back(work);
        work();
    }
    return ranks;
}

JobSummary summarizeJob(const std::vector<std::string>& files, const RankLoader& load, const JobOptions& options)
{
    JobSummary job = assembleJob(summarizeRankFiles(files, load, options));
    job.workers = jobWorkerCount(files.size(), options.maxWorkers);
    return job;
}

} // namespace oomlens
