#include "opening/opening.h"

#include "parsers/filepaths.h"
#include "parsers/inputloader.h"

#include <algorithm>
#include <future>
#include <string>

namespace oomlens {

namespace {

bool cancelled(const OpenOptions& options)
{
    return options.cancel && *options.cancel;
}

uint64_t requestBytes(const LoadRequest& request)
{
    return request.isFile() ? fileSizeAt(request.path) : uint64_t(request.text.size());
}

// A file that failed as none of the inputs oomlens knows by their content (a picture, notes):
// a snapshot, a model config or a profiler timeline that fails is a broken input instead.
bool isNoInput(InputKind kind)
{
    return kind != InputKind::Snapshot && kind != InputKind::ModelConfig && kind != InputKind::ProfilerTimeline;
}

// "devices 0, 1 and 3": the devices a snapshot holds, as a reason names them.
std::string deviceList(const std::vector<int32_t>& devices)
{
    if (devices.empty())
        return "no device (neither segments nor trace events)";
    std::string text = devices.size() == 1 ? "device " : "devices ";
    for (size_t i = 0; i < devices.size(); ++i) {
        if (i > 0)
            text += i + 1 == devices.size() ? " and " : ", ";
        text += std::to_string(devices[i]);
    }
    return text;
}

// A device asked for (`--device N`) that a snapshot does not hold makes that input unreadable as
// asked, with the devices it does hold, rather than a snapshot that seems to show nothing.
void reportMissingDevices(Case& input, const std::vector<SnapshotAnalysis>& analyses, const AnalysisOptions& options,
    std::vector<InputFailure>& failures)
{
    if (!options.device)
        return;
    for (CaseInput& each : input.inputs) {
        if (each.error || each.snapshotIndex < 0 || size_t(each.snapshotIndex) >= analyses.size())
            continue;
        const SnapshotAnalysis& analysis = analyses[size_t(each.snapshotIndex)];
        if (analysis.primary() || !analysis.snapshot)
            continue;
        each.error = noSuchDeviceReason(*analysis.snapshot, *options.device);
        failures.push_back({ each.path, *each.error, false, {} });
    }
}

} // namespace

std::string noSuchDeviceReason(const Snapshot& snapshot, int32_t device)
{
    return "the snapshot has no device " + std::to_string(device) + "; it holds " + deviceList(snapshot.devices());
}

int Opened::failedInputs() const
{
    return int(std::count_if(
        failures.begin(), failures.end(), [](const InputFailure& failure) { return !failure.warningOnly; }));
}

bool Opened::anyReadable() const
{
    return loaded && std::any_of(loaded->input.inputs.begin(), loaded->input.inputs.end(), [](const CaseInput& input) {
        return !input.error;
    });
}

std::vector<InputFailure> readInputs(Case& into, const std::vector<LoadRequest>& requests, const OpenOptions& options)
{
    // Progress is in bytes across all inputs: reading dominates, the analysis gets the last 10%.
    uint64_t totalBytes = 0;
    for (const LoadRequest& request : requests)
        totalBytes += requestBytes(request);
    totalBytes = std::max<uint64_t>(totalBytes, 1);
    uint64_t doneBefore = 0;
    int lastPermille = -1;
    const auto report = [&](uint64_t done, const std::string& text) {
        const int permille = int(900.0 * double(std::min(done, totalBytes)) / double(totalBytes));
        if (permille != lastPermille && options.progress) {
            lastPermille = permille;
            options.progress(permille, text);
        }
    };

    std::vector<InputFailure> failures;
    for (const LoadRequest& request : requests) {
        if (cancelled(options))
            break;
        const std::string name = request.isFile() ? fileNameOf(request.path) : std::string("pasted text");
        const std::string text = "Reading " + name + "…";
        report(doneBefore, text);
        SnapshotReadOptions readOptions;
        readOptions.cancel = options.cancel;
        if (options.progress)
            readOptions.progress = [&](uint64_t done, uint64_t) { report(doneBefore + done, text); };
        const size_t before = into.inputs.size();
        if (!request.error.empty()) {
            CaseInput input;
            input.path = request.textName;
            input.error = request.error;
            into.inputs.push_back(std::move(input));
        } else if (request.isFile()) {
            addFile(into, request.path, readOptions);
        } else {
            addInput(into, request.textName, request.text, readOptions);
        }
        doneBefore += requestBytes(request);
        for (size_t i = before; i < into.inputs.size(); ++i) {
            const CaseInput& input = into.inputs[i];
            if (!input.error)
                continue;
            if (request.inFolder && isNoInput(input.kind))
                failures.push_back({ input.path, "not read: " + *input.error, true, {} });
            else
                failures.push_back({ input.path, *input.error, input.kind == InputKind::Sidecar, {} });
        }
    }
    return failures;
}

OpenedSnapshot openSnapshot(const LoadRequest& request, const AnalysisOptions& options)
{
    OpenedSnapshot opened;
    opened.failures = readInputs(opened.input, { request });
    const std::string path = request.isFile() ? request.path : request.textName;
    if (std::any_of(opened.failures.begin(), opened.failures.end(), [](const auto& f) { return !f.warningOnly; }))
        return opened;
    if (opened.input.snapshots.empty()) {
        opened.failures.push_back(notASnapshot(path));
        return opened;
    }
    const std::shared_ptr<const Snapshot>& snapshot = opened.input.snapshots.front();
    opened.analysis = analyzeSnapshot(snapshot, options);
    if (!opened.analysis->primary()) {
        opened.failures.push_back({ path, noSuchDeviceReason(*snapshot, options.device.value_or(0)), false, {} });
        opened.analysis.reset();
    }
    return opened;
}

Opened openCase(const AnalyzedCasePtr& base, const std::vector<LoadRequest>& requests, const std::string& title,
    const OpenOptions& options)
{
    Opened opened;
    auto loaded = std::make_shared<AnalyzedCase>();
    if (base)
        loaded->input = base->input;
    loaded->title = base ? base->title : title;

    opened.failures = readInputs(loaded->input, requests, options);
    if (cancelled(options)) {
        opened.cancelled = true;
        return opened;
    }
    if (options.progress)
        options.progress(900, "Analyzing…");
    AnalysisOptions analysis = options.analysis;
    if (!analysis.cancel)
        analysis.cancel = options.cancel; // a cancel stops the analysis too, not only the reading
    loaded->analysis.snapshots = analyzeSnapshots(loaded->input, analysis);
    reportMissingDevices(loaded->input, loaded->analysis.snapshots, analysis, opened.failures);
    if (cancelled(options)) {
        opened.cancelled = true;
        return opened;
    }
    uint64_t events = 0;
    for (const auto& snapshot : loaded->input.snapshots)
        events += snapshot ? snapshot->totalTraceEvents() : 0;
    const bool staged
        = options.timelineFirst && !base && !loaded->analysis.snapshots.empty() && events >= options.timelineFirstFrom;
    if (staged) {
        // The first stage is handed over on a thread of its own while this one diagnoses: the
        // app builds the timeline's series there, and both only read the snapshots' analysis (the
        // diagnosis writes the case's other members). On a big trace either takes a few hundred
        // milliseconds that the second core would otherwise spend idle.
        auto first = std::async(std::launch::async, [&loaded, &options] { options.timelineFirst(loaded); });
        if (options.progress)
            options.progress(950, "Diagnosing…");
        diagnoseCase(loaded->input, loaded->analysis);
        first.get(); // its exception, if any, is this opening's
    } else {
        diagnoseCase(loaded->input, loaded->analysis);
    }
    if (cancelled(options)) {
        opened.cancelled = true;
        return opened;
    }
    opened.loaded = std::move(loaded);
    if (options.progress)
        options.progress(1000, "Done");
    return opened;
}

} // namespace oomlens
