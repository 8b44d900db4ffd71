#include "app/cli/inputs.h"

#include "app/cli/errorlines.h"
#include "opening/inputrequests.h"

#include <string>

namespace oomlens::cli {

int printFailures(const std::vector<InputFailure>& failures)
{
    int failed = 0;
    for (const InputFailure& failure : failures) {
        if (!failure.warningOnly)
            ++failed;
        printErrorLine(failureLine(failure, FailureReader::CommandLine));
    }
    return failed;
}

Opened openCommandLine(const std::vector<std::string>& given, const AnalysisOptions& options)
{
    OpenOptions openOptions;
    openOptions.analysis = options;
    Opened opened = openInputs(requestsFor(given), openOptions);
    printFailures(opened.failures);
    return opened;
}

int loadInputs(const std::vector<std::string>& paths, Case& into)
{
    std::vector<LoadRequest> requests;
    for (const std::string& path : paths)
        requests.push_back(requestFor(path));
    return printFailures(readInputs(into, requests));
}

LoadedSnapshot loadSnapshotInput(const std::string& path, const AnalysisOptions& options)
{
    OpenedSnapshot opened = openSnapshot(requestFor(path), options);
    printFailures(opened.failures);
    const int status = opened.analysis ? 0 : 1;
    return { std::move(opened.input), std::move(opened.analysis), status };
}

std::string caseInputsHelp()
{
    return "Snapshot, OOM message, traceback, memory_summary(), nvidia-smi output or a whole log; "
           "'-' reads standard input; a folder stands for every file in it. Several snapshot files, or rank "
           "summaries from `oomlens summarize`, are the ranks of one job: "
           "the job summary comes first, then the failing rank's diagnosis.";
}

} // namespace oomlens::cli
