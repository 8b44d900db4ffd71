#include "app/cli/report.h"

#include "app/cli/commandline.h"
#include "app/cli/inputs.h"
#include "app/cli/reportfile.h"
#include "core/caseanalysis.h"
#include "core/report/htmlreport.h"
#include "opening/jobfiles.h"

#include <cstdio>
#include <optional>

namespace oomlens::cli {

int runReport(const std::vector<std::string>& arguments)
{
    CommandLine commandLine("report INPUT... -o report.html [--device N] [--rules FILE]",
        "Writes the case as one self-contained HTML report.");
    OptionParser& parser = commandLine.parser();
    const Option output({ "o", "output" }, "Write the report to FILE ('-' for standard output).", "FILE");
    const Option device("device", "Describe snapshot device N (default: the device of the OOM event).", "N");
    const Option rules("rules", "Category rules (JSON or YAML; first match wins).", "FILE");
    parser.addOptions({ output, device, rules });
    parser.addPositionalArgument("INPUT", caseInputsHelp(), "INPUT...");
    if (const std::optional<int> stop = commandLine.parse(arguments))
        return *stop;

    AnalysisOptions options;
    if (!commandLine.readDevice(device, options.device))
        return 2;
    if (const std::optional<int> stop = commandLine.readRules(rules, options))
        return *stop;
    const std::string outputPath = parser.value(output);
    if (outputPath.empty())
        return commandLine.usageError("no output file: add -o report.html");
    const std::vector<std::string>& inputs = parser.positionalArguments();
    if (inputs.empty())
        return commandLine.usageError("no input files");

    // Several snapshot files are the ranks of one job (opening/jobfiles.h): the report opens with
    // the job section, then describes the failing rank (with the text inputs given beside the ranks).
    const Opened opened = openCommandLine(inputs, options);
    const int failures = opened.failedInputs();
    // A job's report has its job section even when the failing rank's snapshot is elsewhere.
    const bool nothingRead
        = opened.job ? static_cast<size_t>(failures) == expandFolders(inputs).size() : !opened.anyReadable();
    if (nothingRead) {
        std::fprintf(stderr, "oomlens: no input could be read; no report written\n");
        return 1;
    }
    report::ReportOptions reportOptions;
    if (opened.job)
        reportOptions.job = &*opened.job;
    // A failed write never leaves half a report where the old one was; '-' is standard output.
    if (!writeReportFile(outputPath, opened.loaded->input, opened.loaded->analysis, reportOptions))
        return 1;
    return failures > 0 ? 1 : 0;
}

} // namespace oomlens::cli
