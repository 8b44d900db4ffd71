#include "app/cli/diagnose.h"

#include "app/cli/commandline.h"
#include "app/cli/inputs.h"
#include "core/caseanalysis.h"
#include "core/job/jobjson.h"
#include "core/job/jobtext.h"
#include "core/jsonexport.h"
#include "core/textbrief.h"
#include "core/textreport.h"

#include <cstdio>
#include <iostream>
#include <optional>

namespace oomlens::cli {

int runDiagnose(const std::vector<std::string>& arguments)
{
    CommandLine commandLine("diagnose [--full | --json] [--device N] [--rules FILE] INPUT...",
        "Analyzes the inputs as one case and prints the verdict, its evidence and the first fix that "
        "makes the run fit; --full prints everything found.");
    OptionParser& parser = commandLine.parser();
    const Option json("json", "Print one JSON object instead of text.");
    const Option device("device", "Describe snapshot device N (default: the device of the OOM event).", "N");
    const Option rules("rules", "Category rules (JSON or YAML; first match wins).", "FILE");
    const Option full("full", "Print every input's figures, every diagnosis and the whole ladder of fixes.");
    parser.addOptions({ json, full, device, rules });
    parser.addPositionalArgument("INPUT", caseInputsHelp(), "INPUT...");
    if (const std::optional<int> stop = commandLine.parse(arguments))
        return *stop;

    AnalysisOptions options;
    if (!commandLine.readDevice(device, options.device))
        return 2;
    if (const std::optional<int> stop = commandLine.readRules(rules, options))
        return *stop;
    const std::vector<std::string>& paths = parser.positionalArguments();
    if (paths.empty())
        return commandLine.usageError("no INPUT given (use '-' to read standard input)");
    const bool asJson = parser.isSet(json);

    // Several snapshot files are the ranks of one job (opening/jobfiles.h): each is summarized by
    // the worker pool and only the failing rank is diagnosed in full, with the text inputs given
    // beside the ranks.
    const Opened opened = openCommandLine(paths, options);
    const std::optional<JobSummary>& job = opened.job;
    const Case& input = opened.loaded->input;
    const CaseAnalysis& analysis = opened.loaded->analysis;
    if (asJson) {
        nlohmann::ordered_json document = caseToJson(input, analysis);
        if (job)
            addJobToJson(document, *job);
        // A string that is not UTF-8 (a hostile snapshot's frame name) must not abort the whole
        // document: dump() throws on it unless told to write U+FFFD instead.
        std::cout << document.dump(2, ' ', false, nlohmann::ordered_json::error_handler_t::replace) << '\n';
    } else {
        if (job)
            std::cout << jobToText(*job) << '\n' << failingRankHeading(*job) << "\n\n";
        // The failing rank's snapshot is on the cluster and nothing else was given: the heading
        // and the notes said what to copy; an empty case's "nothing shows a failure" would not fit.
        const bool nothingToDiagnose = job && !job->failingSnapshotToCopy.empty() && input.inputs.empty();
        if (!nothingToDiagnose)
            std::cout << (parser.isSet(full) ? caseToText(input, analysis) : caseToBriefText(input, analysis));
    }
    std::cout.flush();
    return opened.failedInputs() > 0 ? 1 : 0;
}

} // namespace oomlens::cli
