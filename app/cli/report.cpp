#include "app/cli/report.h"

#include "app/cli/commandline.h"
#include "app/cli/inputs.h"
#include "app/cli/qtlists.h"
#include "core/caseanalysis.h"
#include "core/report/htmlreport.h"
#include "opening/jobfiles.h"

#include <QDateTime>
#include <QSaveFile>

#include <cstdio>
#include <optional>

namespace oomlens::cli {

int runReport(const QStringList& arguments)
{
    CommandLine commandLine("report INPUT... -o report.html [--device N] [--rules FILE]",
        QStringLiteral("Writes the case as one self-contained HTML report."));
    QCommandLineParser& parser = commandLine.parser();
    const QCommandLineOption output({ QStringLiteral("o"), QStringLiteral("output") },
        QStringLiteral("Write the report to FILE ('-' for standard output)."), QStringLiteral("FILE"));
    const QCommandLineOption device(QStringLiteral("device"),
        QStringLiteral("Describe snapshot device N (default: the device of the OOM event)."), QStringLiteral("N"));
    const QCommandLineOption rules(QStringLiteral("rules"),
        QStringLiteral("Category rules (JSON or YAML; first match wins)."), QStringLiteral("FILE"));
    parser.addOptions({ output, device, rules });
    parser.addPositionalArgument(QStringLiteral("INPUT"), caseInputsHelp(), QStringLiteral("INPUT..."));
    if (const std::optional<int> stop = commandLine.parse(arguments))
        return *stop;

    AnalysisOptions options;
    if (!commandLine.readDevice(device, options.device))
        return 2;
    if (const std::optional<int> stop = commandLine.readRules(rules, options))
        return *stop;
    const QString outputPath = parser.value(output);
    if (outputPath.isEmpty())
        return commandLine.usageError(QStringLiteral("no output file: add -o report.html"));
    const QStringList inputs = parser.positionalArguments();
    if (inputs.isEmpty())
        return commandLine.usageError(QStringLiteral("no input files"));

    // Several snapshot files are the ranks of one job (opening/jobfiles.h): the report opens with
    // the job section, then describes the failing rank (with the text inputs given beside the ranks).
    const Opened opened = openCommandLine(inputs, options);
    const int failures = opened.failedInputs();
    // A job's report has its job section even when the failing rank's snapshot is elsewhere.
    const bool nothingRead
        = opened.job ? failures == qsizetype(expandFolders(toStdStrings(inputs)).size()) : !opened.anyReadable();
    if (nothingRead) {
        std::fprintf(stderr, "oomlens: no input could be read; no report written\n");
        return 1;
    }
    const Case& loaded = opened.loaded->input;
    const CaseAnalysis& analysis = opened.loaded->analysis;
    report::ReportOptions reportOptions;
    reportOptions.generatedAt = QDateTime::currentDateTimeUtc().toString(Qt::ISODate).toStdString();
    if (opened.job)
        reportOptions.job = &*opened.job;
    const std::string html = report::buildHtmlReport(loaded, analysis, reportOptions);

    if (outputPath == QLatin1String("-")) {
        std::fwrite(html.data(), 1, html.size(), stdout);
        std::fflush(stdout);
        return failures > 0 ? 1 : 0;
    }
    // QSaveFile: a failed write never leaves half a report where the old one was.
    QSaveFile file(outputPath);
    if (!file.open(QIODevice::WriteOnly)
        || file.write(html.data(), static_cast<qint64>(html.size())) != static_cast<qint64>(html.size())
        || !file.commit()) {
        std::fprintf(stderr, "oomlens: cannot write %s: %s\n", qPrintable(outputPath), qPrintable(file.errorString()));
        return 1;
    }
    return failures > 0 ? 1 : 0;
}

} // namespace oomlens::cli
