#include "app/cli/inputs.h"

#include "app/cli/errorlines.h"
#include "app/cli/qtlists.h"
#include "opening/jobfiles.h"
#include "parsers/inputfile.h"

#include <string>

namespace oomlens::cli {

std::vector<LoadRequest> inputRequests(const QStringList& paths)
{
    std::vector<LoadRequest> requests;
    for (const QString& path : paths) {
        if (path != QLatin1String("-")) {
            requests.push_back(LoadRequest::file(path.toStdString()));
            continue;
        }
        std::string error;
        if (std::optional<std::string> text = readStandardInput(&error))
            requests.push_back(LoadRequest::pasted(std::move(*text), path.toStdString()));
        else
            requests.push_back(LoadRequest::unreadable(path.toStdString(), error));
    }
    return requests;
}

int printFailures(const std::vector<InputFailure>& failures)
{
    int failed = 0;
    for (const InputFailure& failure : failures) {
        if (!failure.warningOnly)
            ++failed;
        printErrorLine(QStringLiteral("oomlens: %1: %2")
                           .arg(QString::fromStdString(failure.where()), QString::fromStdString(failure.reason)));
    }
    return failed;
}

Opened openCommandLine(const QStringList& given, const AnalysisOptions& options)
{
    OpenOptions openOptions;
    openOptions.analysis = options;
    std::vector<LoadRequest> requests = inputRequests(toQStringList(expandFolders(toStdStrings(given))));
    for (LoadRequest& request : requests)
        request.inFolder = request.isFile() && !given.contains(QString::fromStdString(request.path));
    Opened opened = openInputs(requests, openOptions);
    printFailures(opened.failures);
    return opened;
}

int loadInputs(const QStringList& paths, Case& into)
{
    return printFailures(readInputs(into, inputRequests(paths)));
}

LoadedSnapshot loadSnapshotInput(const QString& path, const AnalysisOptions& options)
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
        printErrorLine(QStringLiteral("oomlens: %1: %2")
                           .arg(path,
                               QString::fromStdString(
                                   noSuchDeviceReason(*loaded.input.snapshots.front(), options.device.value_or(0)))));
        loaded.status = 1;
    }
    return loaded;
}

QString caseInputsHelp()
{
    return QStringLiteral(
        "Snapshot, OOM message, traceback, memory_summary(), nvidia-smi output or a whole log; "
        "'-' reads standard input; a folder stands for every file in it. Several snapshot files, or rank "
        "summaries from `oomlens summarize`, are the ranks of one job: "
        "the job summary comes first, then the failing rank's diagnosis.");
}

QString notASnapshotError(const QString& path)
{
    return QStringLiteral("oomlens: %1: not a memory snapshot").arg(path);
}

QString noSuchDeviceError(const QString& path)
{
    return QStringLiteral("oomlens: %1: the snapshot has no such device").arg(path);
}

} // namespace oomlens::cli
