#include "app/cli/inputs.h"

#include "app/cli/errorlines.h"
#include "opening/jobfiles.h"
#include "parsers/inputfile.h"

#include <algorithm>
#include <string>

namespace oomlens::cli {

namespace {

QStringList toQStringList(const std::vector<std::string>& words)
{
    QStringList list;
    for (const std::string& word : words)
        list.append(QString::fromStdString(word));
    return list;
}

// The INPUTs as requests: '-' is standard input, read here (as text named "-").
QList<LoadRequest> inputRequests(const std::vector<std::string>& paths)
{
    QList<LoadRequest> requests;
    for (const std::string& path : paths) {
        if (path != "-") {
            requests.append(LoadRequest::file(QString::fromStdString(path)));
            continue;
        }
        std::string error;
        if (const std::optional<QByteArray> text = readStandardInput(&error))
            requests.append(LoadRequest::pasted(*text, QString::fromStdString(path)));
        else
            requests.append(LoadRequest::unreadable(QString::fromStdString(path), QString::fromStdString(error)));
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

std::vector<std::string> expandInputFolders(const std::vector<std::string>& given)
{
    std::vector<std::string> paths;
    for (const QString& path : expandFolders(toQStringList(given)))
        paths.push_back(path.toStdString());
    return paths;
}

Opened openCommandLine(const std::vector<std::string>& given, const AnalysisOptions& options)
{
    OpenOptions openOptions;
    openOptions.analysis = options;
    QList<LoadRequest> requests = inputRequests(expandInputFolders(given));
    for (LoadRequest& request : requests)
        request.inFolder
            = request.isFile() && std::find(given.begin(), given.end(), request.path.toStdString()) == given.end();
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
