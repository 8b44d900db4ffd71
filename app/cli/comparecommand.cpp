#include "app/cli/comparecommand.h"

#include "app/cli/commandline.h"
#include "app/cli/errorlines.h"
#include "app/cli/inputs.h"
#include "app/cli/reportfile.h"
#include "core/caseanalysis.h"
#include "core/compare/comparison.h"
#include "core/compare/comparisonjson.h"
#include "core/compare/comparisontext.h"
#include "core/report/htmlreport.h"

#include <QDateTime>

#include <cstdio>
#include <iostream>

namespace oomlens::cli {

namespace {

struct CompareOptionsOnCommandLine
{
    QCommandLineOption json { QStringLiteral("json"), QStringLiteral("Print one JSON object instead of text.") };
    QCommandLineOption window { QStringLiteral("window"),
        QStringLiteral("Compare two step windows of one snapshot: give it twice (STEP or FIRST:LAST, inclusive)."),
        QStringLiteral("STEP:STEP") };
    QCommandLineOption device { QStringLiteral("device"),
        QStringLiteral("Compare snapshot device N (default: the device of the OOM event)."), QStringLiteral("N") };
    QCommandLineOption report { { QStringLiteral("o"), QStringLiteral("report") },
        QStringLiteral("Also write the HTML report of B (of the run, for windows) with the comparison section ('-': "
                       "only the report, to standard output)."),
        QStringLiteral("FILE.html") };
    QCommandLineOption top { QStringLiteral("top"), QStringLiteral("Sites listed in the text (default 15)."),
        QStringLiteral("N") };
};

int writeReport(const QString& path, const Case& input, const AnalysisOptions& options, const Comparison& comparison)
{
    const CaseAnalysis analysis = analyzeCase(input, options);
    report::ReportOptions reportOptions;
    reportOptions.generatedAt = QDateTime::currentDateTimeUtc().toString(Qt::ISODate).toStdString();
    reportOptions.comparison = &comparison;
    return writeReportFile(path, report::buildHtmlReport(input, analysis, reportOptions)) ? 0 : 1;
}

} // namespace

int runCompare(const QStringList& arguments)
{
    CommandLine commandLine("compare A B [--json] [-o FILE.html] | compare A --window STEP:STEP --window STEP:STEP",
        QStringLiteral("Compares two snapshots (before and after a fix, two configurations) or two step windows of "
                       "one: the peaks, the categories at the peak and at the OOM, the allocation sites that grew or "
                       "shrank (matched by stack, category and phase, never by address), new and vanished sites, "
                       "and for windows what the first left alive."));
    const CompareOptionsOnCommandLine o;
    QCommandLineParser& parser = commandLine.parser();
    parser.addOptions({ o.json, o.window, o.device, o.report, o.top });
    parser.addPositionalArgument(QStringLiteral("A"), QStringLiteral("The first snapshot ('-' reads standard input)."));
    parser.addPositionalArgument(QStringLiteral("B"), QStringLiteral("The second snapshot (none with --window)."));
    if (const std::optional<int> stop = commandLine.parse(arguments))
        return *stop;

    AnalysisOptions analysisOptions;
    if (!commandLine.readDevice(o.device, analysisOptions.device))
        return 2;
    size_t topSites = 15;
    if (parser.isSet(o.top)) {
        bool ok = false;
        const uint count = parser.value(o.top).toUInt(&ok);
        if (!ok)
            return commandLine.usageError(QStringLiteral("--top needs a count, got '%1'").arg(parser.value(o.top)));
        topSites = count;
    }
    const QStringList paths = parser.positionalArguments();
    const QStringList windowTexts = parser.values(o.window);
    std::vector<StepWindow> windows;
    for (const QString& text : windowTexts) {
        const std::optional<StepWindow> window = parseStepWindow(text.toStdString());
        if (!window)
            return commandLine.usageError(
                QStringLiteral("--window needs STEP or FIRST:LAST (FIRST <= LAST), got '%1'").arg(text));
        windows.push_back(*window);
    }
    if (!windows.empty() && windows.size() != 2)
        return commandLine.usageError(QStringLiteral("--window is given twice: the first window, then the second"));
    if (windows.empty() && paths.size() != 2)
        return commandLine.usageError(paths.size() < 2
                ? QStringLiteral("give two snapshots, or one with --window twice")
                : QStringLiteral("give two snapshots, not %1").arg(paths.size()));
    if (!windows.empty() && paths.size() != 1)
        return commandLine.usageError(QStringLiteral("--window compares two windows of one snapshot; give one"));

    CompareOptions compareOptions;
    compareOptions.sourceA = paths.front().toStdString();
    compareOptions.sourceB = paths.back().toStdString();
    // One after the other: reading both at once measured 1.4x the peak memory (two decodes in flight) for
    // no speed-up this machine could show.
    const LoadedSnapshot a = loadSnapshotInput(paths.front(), analysisOptions);
    if (a.status != 0)
        return a.status;
    const LoadedSnapshot b = windows.empty() ? loadSnapshotInput(paths.back(), analysisOptions) : LoadedSnapshot {};
    if (b.status != 0)
        return b.status;

    Comparison comparison;
    if (!windows.empty()) {
        for (const StepWindow& window : windows) {
            const std::string problem = windowProblem(*a.analysis->primary(), window);
            if (!problem.empty())
                return commandLine.usageError(QString::fromStdString(problem));
        }
        comparison = compareWindows(*a.analysis, windows[0], windows[1], compareOptions);
    } else {
        comparison = compareSnapshots(*a.analysis, *b.analysis, compareOptions);
    }

    const QString reportPath = parser.value(o.report);
    if (reportPath == QLatin1String("-")) // the report is what goes to standard output
        return writeReport(reportPath, windows.empty() ? b.input : a.input, analysisOptions, comparison);
    if (parser.isSet(o.json))
        std::cout << comparisonToJson(comparison).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
                  << '\n';
    else
        std::cout << comparisonToText(comparison, topSites);
    std::cout.flush();
    if (!reportPath.isEmpty())
        return writeReport(reportPath, windows.empty() ? b.input : a.input, analysisOptions, comparison);
    return 0;
}

} // namespace oomlens::cli
