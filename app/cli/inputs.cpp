#include "app/cli/inputs.h"

#include "app/cli/errorlines.h"

#include <cstdio>
#include <iostream>
#include <iterator>
#include <string>

namespace oomlens::cli {

namespace {

QByteArray readStdin()
{
    std::freopen(nullptr, "rb", stdin);
    const std::string text(std::istreambuf_iterator<char>(std::cin), std::istreambuf_iterator<char>());
    return QByteArray(text.data(), qsizetype(text.size()));
}

} // namespace

QList<LoadRequest> inputRequests(const QStringList& paths)
{
    QList<LoadRequest> requests;
    for (const QString& path : paths) {
        if (path == QLatin1String("-"))
            requests.append(LoadRequest::pasted(readStdin(), QStringLiteral("-")));
        else
            requests.append(LoadRequest::file(path));
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

Opened openCommandLine(const QStringList& paths, const AnalysisOptions& options)
{
    OpenOptions openOptions;
    openOptions.analysis = options;
    Opened opened = openInputs(inputRequests(paths), openOptions);
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
        printErrorLine(noSuchDeviceError(path));
        loaded.status = 1;
    }
    return loaded;
}

QString caseInputsHelp()
{
    return QStringLiteral("Snapshot, OOM message, traceback, memory_summary(), nvidia-smi output or a whole log; "
                          "'-' reads standard input. Several snapshot files (or a folder of them), or rank summaries "
                          "from `oomlens summarize`, are the ranks of one job: "
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
