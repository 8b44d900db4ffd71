#include "app/cli/report.h"

#include "app/cli/inputs.h"
#include "core/caseanalysis.h"
#include "core/report/htmlreport.h"

#include <QDateTime>
#include <QSaveFile>

#include <cstdio>

namespace oomlens::cli {

namespace {

int usageError(const char* message)
{
    std::fprintf(stderr, "oomlens report: %s\nusage: oomlens report INPUT... -o report.html [--device N]\n", message);
    return 2;
}

} // namespace

int runReport(const QStringList& arguments)
{
    QStringList inputs;
    QString output;
    AnalysisOptions options;
    for (qsizetype i = 0; i < arguments.size(); ++i) {
        const QString& argument = arguments[i];
        if (argument == QLatin1String("-o") || argument == QLatin1String("--output")) {
            if (i + 1 >= arguments.size())
                return usageError("-o needs a file name");
            output = arguments[++i];
        } else if (argument.startsWith(QLatin1String("--output="))) {
            output = argument.mid(9);
        } else if (argument == QLatin1String("--device")) {
            bool ok = false;
            const int device = i + 1 < arguments.size() ? arguments[++i].toInt(&ok) : -1;
            if (!ok || device < 0)
                return usageError("--device needs a device number (0, 1, ...)");
            options.device = device;
        } else if (argument == QLatin1String("--")) {
            inputs += arguments.mid(i + 1);
            break;
        } else if (argument.startsWith(QLatin1Char('-')) && argument != QLatin1String("-")) {
            return usageError(qPrintable(QStringLiteral("unknown option ") + argument));
        } else {
            inputs.append(argument);
        }
    }
    if (output.isEmpty())
        return usageError("no output file: add -o report.html");
    if (inputs.isEmpty())
        return usageError("no input files");

    Case loaded;
    const int failures = loadInputs(inputs, loaded);
    if (failures == inputs.size()) {
        std::fprintf(stderr, "oomlens: no input could be read; no report written\n");
        return 1;
    }
    const CaseAnalysis analysis = analyzeCase(loaded, options);
    report::ReportOptions reportOptions;
    reportOptions.generatedAt = QDateTime::currentDateTimeUtc().toString(Qt::ISODate).toStdString();
    const std::string html = report::buildHtmlReport(loaded, analysis, reportOptions);

    if (output == QLatin1String("-")) {
        std::fwrite(html.data(), 1, html.size(), stdout);
        std::fflush(stdout);
        return failures > 0 ? 1 : 0;
    }
    // QSaveFile: a failed write never leaves half a report where the old one was.
    QSaveFile file(output);
    if (!file.open(QIODevice::WriteOnly)
        || file.write(html.data(), static_cast<qint64>(html.size())) != static_cast<qint64>(html.size())
        || !file.commit()) {
        std::fprintf(stderr, "oomlens: cannot write %s: %s\n", qPrintable(output), qPrintable(file.errorString()));
        return 1;
    }
    return failures > 0 ? 1 : 0;
}

} // namespace oomlens::cli
