#include "parsers/inputloader.h"

#include "core/backgroundrelease.h"
#include "core/job/ranksummaryfile.h"
#include "core/planner/hfconfig.h"
#include "parsers/filemapping.h"
#include "parsers/inputfile.h"
#include "parsers/profilertimelinereader.h"
#include "parsers/sidecarinput.h"
#include "parsers/sidecarreader.h"
#include "parsers/text/textparser.h"

namespace oomlens {

namespace {

// Text logs beyond this are almost certainly not something a person pasted or copied;
// refusing keeps a stray multi-GB file from eating the machine.
constexpr size_t maxTextBytes = size_t(512) << 20;

bool looksBinary(std::string_view bytes)
{
    const size_t probe = std::min<size_t>(bytes.size(), 64 * 1024);
    size_t suspicious = 0;
    for (size_t i = 0; i < probe; ++i) {
        const auto c = static_cast<unsigned char>(bytes[i]);
        if (c == 0 || (c < 0x20 && c != '\n' && c != '\r' && c != '\t' && c != '\f' && c != 0x1b))
            ++suspicious;
    }
    return suspicious * 100 > probe; // more than 1% control bytes
}

bool looksLikeJsonObject(std::string_view bytes)
{
    const size_t start = bytes.find_first_not_of(" \t\r\n");
    return start != std::string_view::npos && bytes[start] == '{';
}

// An input that is read no further, with the one line that says why.
void refuse(Case& target, CaseInput& input, std::string error)
{
    input.error = std::move(error);
    target.inputs.push_back(std::move(input));
}

void addSnapshotInput(Case& target, CaseInput& input, std::string_view bytes, const SnapshotReadOptions& options)
{
    input.kind = InputKind::Snapshot;
    SnapshotReadResult result = readSnapshot(bytes, options);
    if (result.snapshot) {
        input.snapshotIndex = static_cast<int>(target.snapshots.size());
        target.snapshots.push_back(std::move(result.snapshot));
    } else {
        input.error = result.cancelled ? std::string("loading was cancelled") : result.error;
    }
    const int snapshotIndex = input.snapshotIndex;
    const std::string path = input.path;
    target.inputs.push_back(std::move(input));
    addEmbeddedSidecar(target, path, snapshotIndex);
}

void addProfilerInput(Case& target, CaseInput& input, std::string_view bytes)
{
    input.kind = InputKind::ProfilerTimeline;
    ProfilerReadResult result = readProfilerFile(bytes, input.path);
    input.error = std::move(result.error);
    for (ProfilerTimeline& timeline : result.timelines)
        target.profilerTimelines.push_back(std::move(timeline));
    target.inputs.push_back(std::move(input));
}

// A Hugging Face config.json; false when the JSON object is not one.
bool addModelConfigInput(Case& target, CaseInput& input, std::string_view bytes)
{
    planner::HfConfigResult config = planner::modelFromHfConfig(bytes);
    // A config that names its architecture but lacks the dimensions is still a model config,
    // and the user wants to hear what is missing rather than "no OOM message found".
    const bool namesAModel = bytes.find("\"model_type\"") != std::string_view::npos
        || bytes.find("\"architectures\"") != std::string_view::npos;
    if (!config.model && !namesAModel)
        return false;
    input.kind = InputKind::ModelConfig;
    if (config.model)
        target.models.push_back(std::move(*config.model));
    else
        input.error = "a model config.json, but " + config.error;
    target.inputs.push_back(std::move(input));
    return true;
}

void addTextInput(Case& target, CaseInput& input, std::string_view bytes)
{
    if (looksBinary(bytes))
        return refuse(target, input,
            "not a memory snapshot, and not text: no OOM message, summary or log can be read from binary data");
    if (bytes.size() > maxTextBytes)
        return refuse(
            target, input, "text input is larger than 512 MiB; cut the log down to the part around the error");
    TextFindings findings = parseText(bytes);
    input.kind = classifyText(bytes, findings);
    if (findings.empty())
        return refuse(
            target, input, "no OOM message, memory summary, traceback, nvidia-smi table or allocator setting found");
    appendFindings(target.text, std::move(findings));
    target.inputs.push_back(std::move(input));
}

} // namespace

void addInput(Case& target, const std::string& path, std::string_view bytes, const SnapshotReadOptions& options)
{
    CaseInput input;
    input.path = path;
    if (bytes.empty())
        return refuse(target, input, "the input is empty");
    if (looksLikeSnapshot(bytes))
        return addSnapshotInput(target, input, bytes, options);
    if (looksLikeRankSummary(bytes)) {
        // The app and the CLI read summaries as the ranks of a job (opening/jobgathering.h); one
        // reaching a case's inputs came with files that are not rank files.
        return refuse(target, input,
            "an oomlens rank summary (from `oomlens summarize`): open it with the job's other rank files, "
            "not with a log or message");
    }
    // Before the config and text checks: a chrome trace is a JSON object, a raw timeline often gzip.
    if (sniffProfilerFile(bytes) != ProfilerFileKind::None)
        return addProfilerInput(target, input, bytes);
    if (looksLikeCaptureSidecar(bytes))
        return addSidecar(target, path, bytes, -1);
    // Configs are a few KB; a large JSON document is a log or a trace, not worth parsing whole.
    if (bytes.size() < (size_t(1) << 20) && looksLikeJsonObject(bytes) && addModelConfigInput(target, input, bytes))
        return;
    addTextInput(target, input, bytes);
}

void appendFindings(TextFindings& into, TextFindings&& from)
{
    auto append = [](auto& to, auto& items) {
        to.insert(to.end(), std::make_move_iterator(items.begin()), std::make_move_iterator(items.end()));
    };
    append(into.oomMessages, from.oomMessages);
    append(into.summaries, from.summaries);
    append(into.nvidiaSmi, from.nvidiaSmi);
    append(into.allocConfs, from.allocConfs);
    append(into.tracebacks, from.tracebacks);
    append(into.launcherRanks, from.launcherRanks);
    append(into.failedRanks, from.failedRanks);
    append(into.hostKills, from.hostKills);
    if (!into.serving)
        into.serving = std::move(from.serving);
}

namespace {

// How many of each of a case's lists existed before one file was read: rollBack() forgets what
// that file added (a file that changed while it was read may have mixed old and new bytes).
struct CaseMark
{
    size_t inputs, snapshots, sidecars, models, timelines;
    size_t oomMessages, summaries, nvidiaSmi, allocConfs, tracebacks, launcherRanks, failedRanks, hostKills;
};

CaseMark markOf(const Case& target)
{
    const TextFindings& text = target.text;
    return { target.inputs.size(), target.snapshots.size(), target.sidecars.size(), target.models.size(),
        target.profilerTimelines.size(), text.oomMessages.size(), text.summaries.size(), text.nvidiaSmi.size(),
        text.allocConfs.size(), text.tracebacks.size(), text.launcherRanks.size(), text.failedRanks.size(),
        text.hostKills.size() };
}

void rollBack(Case& target, const CaseMark& mark)
{
    const auto cut = [](auto& items, size_t size) { items.erase(items.begin() + std::ptrdiff_t(size), items.end()); };
    cut(target.inputs, mark.inputs);
    cut(target.snapshots, mark.snapshots);
    cut(target.sidecars, mark.sidecars);
    cut(target.models, mark.models);
    cut(target.profilerTimelines, mark.timelines);
    TextFindings& text = target.text;
    cut(text.oomMessages, mark.oomMessages);
    cut(text.summaries, mark.summaries);
    cut(text.nvidiaSmi, mark.nvidiaSmi);
    cut(text.allocConfs, mark.allocConfs);
    cut(text.tracebacks, mark.tracebacks);
    cut(text.launcherRanks, mark.launcherRanks);
    cut(text.failedRanks, mark.failedRanks);
    cut(text.hostKills, mark.hostKills);
}

// A log still being written only grows: what was read is the log as it was when opened. Any
// other change (a snapshot rewritten, a file cut short or replaced) may have mixed old and new bytes.
bool changedWhileRead(const FileStamp& before, const std::optional<FileStamp>& after, InputKind kind)
{
    if (after == before)
        return false;
    const bool grew = after && after->inode == before.inode && after->size >= before.size;
    const bool text = kind != InputKind::Snapshot && kind != InputKind::ProfilerTimeline
        && kind != InputKind::ModelConfig && kind != InputKind::Sidecar;
    return !(grew && text);
}

void addUnreadable(Case& target, const std::string& path, std::string reason)
{
    CaseInput input;
    input.path = path;
    input.error = std::move(reason);
    target.inputs.push_back(std::move(input));
}

} // namespace

void addFile(Case& target, const std::string& path, const SnapshotReadOptions& options)
{
    InputFileBytes file = readInputFile(path);
    if (!file.error.empty()) {
        addUnreadable(target, path, std::move(file.error));
        return;
    }
    const CaseMark mark = markOf(target);
    addInput(target, path, file.bytes, options);
    releaseInBackground(std::move(file.owner));
    if (file.stamp && target.inputs.size() > mark.inputs
        && changedWhileRead(*file.stamp, fileStamp(path), target.inputs[mark.inputs].kind)) {
        rollBack(target, mark);
        addUnreadable(target, path,
            "the file changed while it was read (still being written?); read it again once it is complete");
        return;
    }
    if (target.inputs.size() > mark.inputs && target.inputs[mark.inputs].snapshotIndex >= 0)
        addSidecarBeside(target, path, target.inputs[mark.inputs].snapshotIndex);
}

} // namespace oomlens
