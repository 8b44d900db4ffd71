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
#include "core/report/htmlreport.h"
#include "core/textreport.h"
#include "parsers/inputloader.h"
#include "parsers/pickle/picklevalue.h"
#include "parsers/pickle/snapshotcontainer.h"
#include "parsers/snapshotreader.h"
#include "parsers/text/textlines.h"
#include "parsers/text/textparser.h"

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>

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

} // namespace oomlens::fuzz
