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
                           .arg(QString::fromStdString(failure.path), QString::fromStdString(failure.reason)));
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

QString notASnapshotError(const QString& path)
{
    return QStringLiteral("oomlens: %1: not a memory snapshot").arg(path);
}

QString noSuchDeviceError(const QString& path)
{
    return QStringLiteral("oomlens: %1: the snapshot has no such device").arg(path);
}

} // namespace oomlens::cli
