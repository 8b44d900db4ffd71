#pragma once

// The fuzz targets, shared by the libFuzzer executables (fuzz/fuzz_*.cpp, clang) and the seed and
// crash regression test (tests/parsers/tst_fuzzregression.cpp, any compiler). Each takes raw bytes,
// runs one parser path and returns the invariant the input broke, or an empty string. A crash,
// sanitizer report or escaping exception is a finding too: these functions never catch what the
// product would not catch itself.
//
// Header-only so that both builds compile the very same code without a library of their own.

#include "core/caseanalysis.h"
#include "core/jsonexport.h"
#include "core/planner/gpucards.h"
#include "core/planner/hfconfig.h"
#include "core/planner/kvcache.h"
#include "core/planner/modelspec.h"
#include "core/planner/planjson.h"
#include "core/planner/planresult.h"
#include "core/planner/plantext.h"
#include "core/planner/trainingsetup.h"
#include "core/report/htmlreport.h"
#include "core/textreport.h"
#include "parsers/categoryrulesparser.h"
#include "parsers/inputloader.h"
#include "parsers/pickle/picklevalue.h"
#include "parsers/pickle/snapshotcontainer.h"
#include "parsers/sidecarreader.h"
#include "parsers/snapshotreader.h"
#include "parsers/text/textlines.h"
#include "parsers/text/textparser.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace oomlens::fuzz {

// Separates the inputs of one case in the `case` target: a snapshot and the message beside it.
inline constexpr std::string_view nextInput("\x1e\x1e\x1e\x1e", 4);

// libFuzzer only notices crashes: a broken invariant must become one.
inline void abortOn(const std::string& problem)
{
    if (problem.empty())
        return;
    std::fprintf(stderr, "oomlens fuzz: invariant broken: %s\n", problem.c_str());
    std::abort();
}

inline std::string_view bytesOf(const uint8_t* data, size_t size)
{
    return std::string_view(reinterpret_cast<const char*>(data), size);
}

// Every error the product shows is one line that says something.
inline std::string checkErrorLine(const std::string& error, const char* where)
{
    if (error.empty())
        return std::string(where) + ": empty error message";
    if (error.find('\n') != std::string::npos)
        return std::string(where) + ": error message spans several lines: " + error;
    return {};
}

// Everything the text parsers find goes into the JSON contract, which must serialize: strict
// UTF-8, no exception from dump().
inline std::string checkTextFindings(const TextFindings& findings)
{
    for (const OomMessage& message : findings.oomMessages) {
        if (!text::isValidUtf8(message.text))
            return "OOM message text is not valid UTF-8";
        (void)oomMessageToJson(message).dump();
    }
    for (const MemorySummary& summary : findings.summaries)
        (void)memorySummaryToJson(summary).dump();
    return {};
}

inline std::string textTarget(const uint8_t* data, size_t size)
{
    const std::string_view bytes = bytesOf(data, size);
    const TextFindings findings = parseText(bytes);
    const InputKind kind = classifyText(bytes, findings);
    if (kind == InputKind::Snapshot)
        return "text classified as a snapshot";
    return checkTextFindings(findings);
}

inline SnapshotReadOptions nativeOnly()
{
    SnapshotReadOptions options;
    options.decoder = SnapshotDecoder::Native;
    // The embedded interpreter is the oracle, not the code under test, and far too slow here.
    options.allowFallback = false;
    return options;
}

inline std::string checkReadResult(const SnapshotReadResult& result)
{
    if (result.snapshot && !result.error.empty())
        return "readSnapshot returned both a snapshot and an error: " + result.error;
    if (!result.snapshot)
        return checkErrorLine(result.error, "readSnapshot");
    if (result.usedDecoder != SnapshotDecoder::Native)
        return "readSnapshot fell back to Python although fallback was disabled";
    return {};
}

// The native unpickler and the snapshot model builder, behind the reader's own error handling.
inline std::string pickleTarget(const uint8_t* data, size_t size)
{
    return checkReadResult(readSnapshot(bytesOf(data, size), nativeOnly()));
}

// Sniffing and unwrapping (gzip, ZIP, JSON, memory_viz HTML) without decoding the payload.
inline std::string containerTarget(const uint8_t* data, size_t size)
{
    const std::string_view bytes = bytesOf(data, size);
    const pickle::ContainerKind kind = pickle::sniffContainer(bytes);
    try {
        const pickle::Unwrapped unwrapped = pickle::unwrapSnapshot(bytes, nullptr);
        const char* begin = unwrapped.payload.data();
        const char* end = begin + unwrapped.payload.size();
        const bool inInput = begin >= bytes.data() && end <= bytes.data() + bytes.size();
        const bool inStorage = unwrapped.storage && begin >= unwrapped.storage->data()
            && end <= unwrapped.storage->data() + unwrapped.storage->size();
        if (!unwrapped.payload.empty() && !inInput && !inStorage)
            return "unwrapped payload points outside both the input and its storage";
        if (kind == pickle::ContainerKind::Pickle && unwrapped.container != "pickle")
            return "sniffed a pickle, unwrapped a " + unwrapped.container;
        if (kind == pickle::ContainerKind::Gzip && unwrapped.container != "gzip")
            return "sniffed gzip, unwrapped a " + unwrapped.container;
    } catch (const pickle::DecodeError& e) {
        return checkErrorLine(e.what(), "unwrapSnapshot");
    }
    return {};
}

// The whole diagnose path: inputs detected and read as the CLI reads them, the case analysed,
// and every output rendered: JSON, text and the HTML report. Inputs are separated by `nextInput`.
inline std::string caseTarget(const uint8_t* data, size_t size)
{
    std::string_view rest = bytesOf(data, size);
    Case input;
    for (int n = 0; n < 4 && !rest.empty(); ++n) {
        const size_t cut = rest.find(nextInput);
        const std::string_view part = rest.substr(0, cut);
        rest = cut == std::string_view::npos ? std::string_view() : rest.substr(cut + nextInput.size());
        addInput(input, "input" + std::to_string(n), part, nativeOnly());
        if (const auto& error = input.inputs.back().error) {
            if (auto problem = checkErrorLine(*error, "addInput"); !problem.empty())
                return problem;
        }
    }
    if (auto problem = checkTextFindings(input.text); !problem.empty())
        return problem;
    const CaseAnalysis analysis = analyzeCase(input);
    if (analysis.snapshots.size() != input.snapshots.size())
        return "analyzeCase returned " + std::to_string(analysis.snapshots.size()) + " analyses for "
            + std::to_string(input.snapshots.size()) + " snapshots";
    (void)caseToJson(input, analysis).dump(2);
    (void)caseToText(input, analysis);
    // The report promises no script at all: input text (frame names, messages) must arrive escaped.
    const std::string html = report::buildHtmlReport(input, analysis);
    if (html.find("<script") != std::string::npos || html.find("<SCRIPT") != std::string::npos)
        return "the HTML report contains a <script> element";
    if (!text::isValidUtf8(html))
        return "the HTML report is not valid UTF-8";
    return {};
}

// The first input of a multi-part fuzz input and the rest (empty when there is no separator).
inline std::pair<std::string_view, std::string_view> splitFirst(std::string_view bytes)
{
    const size_t cut = bytes.find(nextInput);
    if (cut == std::string_view::npos)
        return { bytes, {} };
    return { bytes.substr(0, cut), bytes.substr(cut + nextInput.size()) };
}

// A plan must serialize and print whatever it was asked: JSON without an exception from dump()
// (strict UTF-8: the model name comes from the input), text that says something.
inline std::string checkPlan(const planner::PlanResult& plan)
{
    (void)planner::planToJson(plan).dump();
    if (planner::planToText(plan).empty())
        return "planToText printed nothing";
    return {};
}

// The capture sidecar (NAME.oomlens.json, product.md section 5): parsed on its own, then read as the
// CLI reads it, by content, beside the snapshot that may follow after `nextInput`, into the JSON.
inline std::string sidecarTarget(const uint8_t* data, size_t size)
{
    const auto [sidecarBytes, snapshotBytes] = splitFirst(bytesOf(data, size));
    const SidecarParseResult parsed = parseCaptureSidecar(sidecarBytes, "fuzz.oomlens.json");
    if (parsed.sidecar && !parsed.error.empty())
        return "parseCaptureSidecar returned both a sidecar and an error: " + parsed.error;
    if (!parsed.sidecar) {
        if (auto problem = checkErrorLine(parsed.error, "parseCaptureSidecar"); !problem.empty())
            return problem;
    }
    Case input;
    if (!snapshotBytes.empty())
        addInput(input, "fuzz.pickle", snapshotBytes, nativeOnly());
    addInput(input, "fuzz.oomlens.json", sidecarBytes, nativeOnly());
    for (const auto& item : input.inputs) {
        if (item.error) {
            if (auto problem = checkErrorLine(*item.error, "addInput"); !problem.empty())
                return problem;
        }
    }
    const CaseAnalysis analysis = analyzeCase(input);
    (void)caseToJson(input, analysis).dump(2);
    (void)caseToText(input, analysis);
    return {};
}

// Category rules (`--rules FILE`, JSON or YAML): parsed, then applied to the snapshot after
// `nextInput` (every regex runs against every distinct frame), with the category names in the JSON.
inline std::string rulesTarget(const uint8_t* data, size_t size)
{
    const auto [rulesBytes, snapshotBytes] = splitFirst(bytesOf(data, size));
    std::string error;
    std::optional<CategoryRules> rules = parseCategoryRules(rulesBytes, &error);
    if (!rules)
        return checkErrorLine(error, "parseCategoryRules");
    if (snapshotBytes.empty())
        return {};
    AnalysisOptions options;
    options.rules = std::make_shared<const CategoryRules>(std::move(*rules));
    Case input;
    addInput(input, "fuzz.pickle", snapshotBytes, nativeOnly());
    const CaseAnalysis analysis = analyzeCase(input, options);
    (void)caseToJson(input, analysis).dump(2);
    return {};
}

// A Hugging Face config.json: the model read from it, a plan for it with the default set-up and
// on every common card, and the same bytes as an input of a case (how `diagnose` meets it).
inline std::string configTarget(const uint8_t* data, size_t size)
{
    const std::string_view bytes = bytesOf(data, size);
    (void)planner::looksLikeHfConfig(bytes);
    const planner::HfConfigResult config = planner::modelFromHfConfig(bytes);
    if (config.model && !config.error.empty())
        return "modelFromHfConfig returned both a model and an error: " + config.error;
    if (!config.model)
        return checkErrorLine(config.error, "modelFromHfConfig");
    const planner::TrainingSetup setup;
    if (auto problem = checkPlan(planner::makePlan(*config.model, setup, std::nullopt)); !problem.empty())
        return problem;
    if (auto problem = checkPlan(planner::makePlan(*config.model, setup, planner::commonCards().front()));
        !problem.empty())
        return problem;
    Case input;
    addInput(input, "config.json", bytes, nativeOnly());
    (void)caseToJson(input, analyzeCase(input)).dump(2);
    return {};
}

// `oomlens plan` flags: one "name value" per line, read with the same bounds and the same name
// tables as opening/planrequest.cpp (a count is 1 to 1e15, "1.3e9" reads; an int at most 2^30;
// --zero and --lora-rank may be 0), then planned, printed and serialized. Flags the CLI rejects
// end the input quietly, as the CLI stops with its usage error.
inline std::string planFlagsTarget(const uint8_t* data, size_t size)
{
    std::string_view rest = bytesOf(data, size);
    planner::ModelSpec model;
    model.name = "custom";
    planner::TrainingSetup setup;
    std::optional<planner::GpuCard> card;
    // strtod needs a terminated string; the value is copied (it is one line of a short input).
    const auto readNumber = [](std::string_view text, double minimum, double maximum, double& into) {
        const std::string copy(text);
        char* end = nullptr;
        const double value = std::strtod(copy.c_str(), &end);
        if (copy.empty() || end != copy.c_str() + copy.size() || !(value >= minimum) || !(value <= maximum))
            return false;
        into = value;
        return true;
    };
    const auto readInt = [&](std::string_view text, int minimum, int& into) {
        double value = 0;
        if (!readNumber(text, minimum, double(1u << 30), value))
            return false;
        into = static_cast<int>(value);
        return true;
    };
    while (!rest.empty()) {
        const size_t newline = rest.find('\n');
        const std::string_view line = rest.substr(0, newline);
        rest = newline == std::string_view::npos ? std::string_view() : rest.substr(newline + 1);
        const size_t space = line.find(' ');
        const std::string_view name = line.substr(0, space);
        const std::string_view value = space == std::string_view::npos ? std::string_view() : line.substr(space + 1);
        bool ok = true;
        double count = 0;
        if (name == "model") {
            const auto preset = planner::modelPreset(value);
            ok = preset.has_value();
            if (ok)
                model = *preset;
        } else if (name == "params") {
            ok = readNumber(value, 1, 1e15, count);
            if (ok)
                model.parameters = static_cast<uint64_t>(count);
        } else if (name == "layers") {
            ok = readInt(value, 1, model.layers);
        } else if (name == "hidden") {
            ok = readInt(value, 1, model.hidden);
        } else if (name == "heads") {
            ok = readInt(value, 1, model.heads);
        } else if (name == "kv-heads") {
            ok = readInt(value, 1, model.kvHeads);
        } else if (name == "vocab") {
            ok = readInt(value, 1, model.vocab);
        } else if (name == "ffn") {
            ok = readInt(value, 1, model.ffn);
        } else if (name == "batch") {
            ok = readInt(value, 1, setup.microBatch);
        } else if (name == "seq") {
            ok = readInt(value, 1, setup.sequence);
        } else if (name == "accumulation") {
            ok = readInt(value, 1, setup.gradientAccumulation);
        } else if (name == "gpus") {
            ok = readInt(value, 1, setup.gpusPerNode);
        } else if (name == "nodes") {
            ok = readInt(value, 1, setup.nodes);
        } else if (name == "zero") {
            ok = readInt(value, 0, setup.zeroStage);
        } else if (name == "lora-rank") {
            ok = readInt(value, 0, setup.loraRank);
        } else if (name == "precision") {
            const auto parsed = planner::precisionFromName(value);
            ok = parsed.has_value();
            if (ok)
                setup.precision = *parsed;
        } else if (name == "optimizer") {
            const auto parsed = planner::optimizerFromName(value);
            ok = parsed.has_value();
            if (ok)
                setup.optimizer = *parsed;
        } else if (name == "attention") {
            const auto parsed = planner::attentionFromName(value);
            ok = parsed.has_value();
            if (ok)
                setup.attention = *parsed;
        } else if (name == "offload") {
            const auto parsed = planner::offloadFromName(value);
            ok = parsed.has_value();
            if (ok)
                setup.offload = *parsed;
        } else if (name == "lora-targets") {
            const auto parsed = planner::loraTargetsFromName(value);
            ok = parsed.has_value();
            if (ok)
                setup.loraTargets = *parsed;
        } else if (name == "checkpointing") {
            ok = planner::readCheckpointing(value, setup);
        } else if (name == "qlora") {
            setup.quantizedBase = true;
        } else if (name == "tp") {
            ok = readInt(value, 1, setup.parallel.tensor);
        } else if (name == "cp") {
            ok = readInt(value, 1, setup.parallel.context);
        } else if (name == "pp") {
            ok = readInt(value, 1, setup.parallel.pipeline);
        } else if (name == "vpp") {
            ok = readInt(value, 1, setup.parallel.virtualStages);
        } else if (name == "microbatches") {
            ok = readInt(value, 1, setup.parallel.microbatches);
        } else if (name == "ep") {
            ok = readInt(value, 1, setup.parallel.expert);
        } else if (name == "sequence-parallel") {
            setup.parallel.sequenceParallel = true;
        } else if (name == "distributed-optimizer") {
            setup.parallel.distributedOptimizer = true;
        } else if (name == "inference") {
            setup.inference = true;
        } else if (name == "kv-dtype") {
            const auto parsed = planner::kvDtypeFromName(value);
            ok = setup.inference && parsed.has_value();
            if (ok)
                setup.kvDtype = *parsed;
        } else if (name == "weight-dtype") {
            const auto parsed = planner::weightFormatFromName(value);
            ok = setup.inference && parsed.has_value();
            if (ok)
                setup.weights = *parsed;
        } else if (name == "gpu-memory-utilization") {
            ok = setup.inference && readNumber(value, -1e300, 1e300, setup.gpuMemoryUtilization);
        } else if (name == "card") {
            card = planner::cardFromText(value);
            ok = card.has_value();
        }
        if (!ok)
            return {};
    }
    // The checks the command line makes before it plans, in its order (opening/planrequest.cpp).
    if (!model.sizeProblem().empty() || model.totalParameters() == 0 || !planner::setupProblem(setup).empty())
        return {};
    return checkPlan(planner::makePlan(model, setup, card));
}

} // namespace oomlens::fuzz
