#include "app/cli/inputs.h"

#include "app/cli/errorlines.h"
#include "opening/jobfiles.h"
#include "parsers/inputfile.h"

#include <algorithm>
#include <string>

namespace oomlens::cli {

namespace {

// The INPUTs as requests: '-' is standard input, read here (as text named "-").
std::vector<LoadRequest> inputRequests(const std::vector<std::string>& paths)
{
    std::vector<LoadRequest> requests;
    for (const std::string& path : paths) {
        if (path != "-") {
            requests.push_back(LoadRequest::file(path));
            continue;
        }
        std::string error;
        if (std::optional<std::string> text = readStandardInput(&error))
            requests.push_back(LoadRequest::pasted(std::move(*text), path));
        else
            requests.push_back(LoadRequest::unreadable(path, error));
    }
    return requests;
}

} // namespace

int printFailures(const std::vector<InputFailure>& failures)
{
    int failed = 0;
    for (const InputFailure& failure : failures) {
        if (!failure.warningOnly)
            ++failed;
        printErrorLine("oomlens: " + failure.where() + ": " + failure.reason);
    }
    return failed;
}

Opened openCommandLine(const std::vector<std::string>& given, const AnalysisOptions& options)
{
    OpenOptions openOptions;
    openOptions.analysis = options;
    std::vector<LoadRequest> requests = inputRequests(expandFolders(given));
    for (LoadRequest& request : requests)
        request.inFolder = request.isFile() && std::find(given.begin(), given.end(), request.path) == given.end();
    Opened opened = openInputs(requests, openOptions);
    printFailures(opened.failures);
    return opened;
}

int loadInputs(const std::vector<std::string>& paths, Case& into)
{
    return printFailures(readInputs(into, inputRequests(paths)));
}

LoadedSnapshot loadSnapshotInput(const std::string& path, const AnalysisOptions& options)
{
    LoadedSnapshot loaded;
    if (loadInputs({ path }, loaded.input) > 0) {
        loaded.status = 1;
        return loaded;
    }
    if (loaded.input.snapshots.empty()) {
        printErrorLine(notASnapshotError(path));
        loaded.status = 1;
        return loaded;
    }
    loaded.analysis = analyzeSnapshot(loaded.input.snapshots.front(), options);
    if (!loaded.analysis->primary()) {
        printErrorLine("oomlens: " + path + ": "
            + noSuchDeviceReason(*loaded.input.snapshots.front(), options.device.value_or(0)));
        loaded.status = 1;
    }
    return loaded;
}

std::string caseInputsHelp()
{
    return "Snapshot, OOM message, traceback, memory_summary(), nvidia-smi output or a whole log; "
           "'-' reads standard input; a folder stands for every file in it. Several snapshot files, or rank "
           "summaries from `oomlens summarize`, are the ranks of one job: "
           "the job summary comes first, then the failing rank's diagnosis.";
}

std::string notASnapshotError(const std::string& path)
{
    return "oomlens: " + path + ": not a memory snapshot";
}

std::string noSuchDeviceError(const std::string& path)
{
    return "oomlens: " + path + ": the snapshot has no such device";
}

} // namespace oomlens::cli
