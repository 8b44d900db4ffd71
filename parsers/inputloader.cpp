#include "parsers/inputloader.h"

#include "core/backgroundrelease.h"
#include "core/job/ranksummaryfile.h"
#include "core/planner/hfconfig.h"
#include "parsers/filemapping.h"
#include "parsers/profilertimelinereader.h"
#include "parsers/sidecarinput.h"
#include "parsers/sidecarreader.h"
#include "parsers/text/textparser.h"

#include <QFile>
#include <QFileInfo>

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

} // namespace

void addInput(Case& target, const std::string& path, std::string_view bytes, const SnapshotReadOptions& options)
{
    CaseInput input;
    input.path = path;
    if (bytes.empty()) {
        input.error = "the input is empty";
        target.inputs.push_back(std::move(input));
        return;
    }
    if (looksLikeSnapshot(bytes)) {
        input.kind = InputKind::Snapshot;
        SnapshotReadResult result = readSnapshot(bytes, options);
        if (result.snapshot) {
            input.snapshotIndex = static_cast<int>(target.snapshots.size());
            target.snapshots.push_back(std::move(result.snapshot));
        } else {
            input.error = result.cancelled ? std::string("loading was cancelled") : result.error;
        }
        const int snapshotIndex = input.snapshotIndex;
        target.inputs.push_back(std::move(input));
        addEmbeddedSidecar(target, path, snapshotIndex);
        return;
    }
    if (looksLikeRankSummary(bytes)) {
        // The app and the CLI read summaries as the ranks of a job (opening/jobgathering.h); one
        // reaching a case's inputs came with files that are not rank files.
        input.error = "an oomlens rank summary (from `oomlens summarize`): open it with the job's other rank files, "
                      "not with a log or message";
        target.inputs.push_back(std::move(input));
        return;
    }
    // Before the config and text checks: a chrome trace is a JSON object, a raw timeline often gzip.
    if (sniffProfilerFile(bytes) != ProfilerFileKind::None) {
        input.kind = InputKind::ProfilerTimeline;
        ProfilerReadResult result = readProfilerFile(bytes, path);
        input.error = std::move(result.error);
        for (ProfilerTimeline& timeline : result.timelines)
            target.profilerTimelines.push_back(std::move(timeline));
        target.inputs.push_back(std::move(input));
        return;
    }
    if (looksLikeCaptureSidecar(bytes)) {
        addSidecar(target, path, bytes, -1);
        return;
    }
    // Configs are a few KB; a large JSON document is a log or a trace, not worth parsing whole.
    if (bytes.size() < (size_t(1) << 20) && looksLikeJsonObject(bytes)) {
        planner::HfConfigResult config = planner::modelFromHfConfig(bytes);
        // A config that names its architecture but lacks the dimensions is still a model config,
        // and the user wants to hear what is missing rather than "no OOM message found".
        const bool namesAModel = bytes.find("\"model_type\"") != std::string_view::npos
            || bytes.find("\"architectures\"") != std::string_view::npos;
        if (config.model || namesAModel) {
            input.kind = InputKind::ModelConfig;
            if (config.model)
                target.models.push_back(std::move(*config.model));
            else
                input.error = "a model config.json, but " + config.error;
            target.inputs.push_back(std::move(input));
            return;
        }
    }
    if (looksBinary(bytes)) {
        input.error
            = "not a memory snapshot, and not text: no OOM message, summary or log can be read from binary data";
        target.inputs.push_back(std::move(input));
        return;
    }
    if (bytes.size() > maxTextBytes) {
        input.error = "text input is larger than 512 MiB; cut the log down to the part around the error";
        target.inputs.push_back(std::move(input));
        return;
    }
    TextFindings findings = parseText(bytes);
    input.kind = classifyText(bytes, findings);
    if (findings.empty()) {
        input.error = "no OOM message, memory summary, traceback, nvidia-smi table or allocator setting found";
        target.inputs.push_back(std::move(input));
        return;
    }
    appendFindings(target.text, std::move(findings));
    target.inputs.push_back(std::move(input));
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

void addFile(Case& target, const std::string& path, const SnapshotReadOptions& options)
{
    const QFileInfo info(QString::fromStdString(path));
    QFile file(info.filePath());
    if (info.isDir() || !file.open(QIODevice::ReadOnly)) {
        CaseInput input;
        input.path = path;
        input.error = info.isDir() ? "is a folder, not a file"
            : !info.exists()       ? "no such file"
                                   : "cannot open the file (" + file.errorString().toStdString() + ")";
        target.inputs.push_back(std::move(input));
        return;
    }
    const size_t before = target.inputs.size();
    if (std::optional<FileMapping> mapping = mapWholeFile(file)) {
        addInput(target, path, mapping->bytes, options);
        releaseInBackground(std::move(mapping->owner));
    } else {
        // Pipes and special files cannot be mapped.
        const QByteArray bytes = file.readAll();
        addInput(target, path, std::string_view(bytes.constData(), static_cast<size_t>(bytes.size())), options);
    }
    if (target.inputs.size() > before && target.inputs[before].snapshotIndex >= 0)
        addSidecarBeside(target, path, target.inputs[before].snapshotIndex);
}

} // namespace oomlens
