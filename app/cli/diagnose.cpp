#include "app/cli/diagnose.h"

#include "app/cli/inputs.h"
#include "core/caseanalysis.h"
#include "core/jsonexport.h"
#include "core/textreport.h"

#include <cstdio>
#include <iostream>

namespace oomlens::cli {

int runDiagnose(const QStringList& arguments)
{
    bool asJson = false;
    AnalysisOptions options;
    QStringList paths;
    for (int i = 0; i < arguments.size(); ++i) {
        const QString& argument = arguments[i];
        if (argument == QLatin1String("--json")) {
            asJson = true;
        } else if (argument == QLatin1String("--device") || argument == QLatin1String("--rules")) {
            if (i + 1 >= arguments.size()) {
                std::fprintf(stderr, "oomlens diagnose: %s needs a value\n", qPrintable(argument));
                return 2;
            }
            const QString value = arguments[++i];
            if (argument == QLatin1String("--rules")) {
                options.rulesPath = value.toStdString();
                continue;
            }
            bool ok = false;
            const int device = value.toInt(&ok);
            if (!ok || device < 0) {
                std::fprintf(
                    stderr, "oomlens diagnose: --device needs a device ordinal, got '%s'\n", qPrintable(value));
                return 2;
            }
            options.device = device;
        } else if (argument.startsWith(QLatin1String("--")) && argument.size() > 2) {
            std::fprintf(stderr, "oomlens diagnose: unknown option %s\n", qPrintable(argument));
            return 2;
        } else {
            paths.append(argument);
        }
    }
    if (paths.isEmpty()) {
        std::fputs("oomlens diagnose: no INPUT given (use '-' to read standard input)\n", stderr);
        return 2;
    }

    Case input;
    const int failures = loadInputs(paths, input);
    const CaseAnalysis analysis = analyzeCase(input, options);
    if (asJson) {
        // A string that is not UTF-8 (a hostile snapshot's frame name) must not abort the whole
        // document: dump() throws on it unless told to write U+FFFD instead.
        std::cout << caseToJson(input, analysis).dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace)
                  << '\n';
    } else {
        std::cout << caseToText(input, analysis);
    }
    std::cout.flush();
    return failures > 0 ? 1 : 0;
}

} // namespace oomlens::cli
