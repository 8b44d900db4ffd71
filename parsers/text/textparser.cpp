#include "parsers/text/textparser.h"

#include "core/analysis/tracebackphase.h"
#include "parsers/text/allocconfparser.h"
#include "parsers/text/hostmemoryparser.h"
#include "parsers/text/launcherranks.h"
#include "parsers/text/memorylog.h"
#include "parsers/text/nvidiasmiparser.h"
#include "parsers/text/oommessage.h"
#include "parsers/text/parametercount.h"
#include "parsers/text/servinglog.h"
#include "parsers/text/summaryparser.h"
#include "parsers/text/textlines.h"
#include "parsers/text/tracebackparser.h"
#include "parsers/text/trainingrecipe.h"

#include <algorithm>
#include <map>

namespace oomlens {

namespace {

using text::TracebackBlock;

constexpr size_t chainGapLines = 3;

// The traceback that follows a "During handling of the above exception" line right after `line`.
std::optional<size_t> chainedBlockAfter(const text::TracebackScan& scan, size_t line)
{
    for (size_t separator : scan.chainSeparators) {
        if (separator <= line || separator > line + chainGapLines)
            continue;
        for (size_t b = 0; b < scan.blocks.size(); ++b) {
            const TracebackBlock& block = scan.blocks[b];
            if (block.firstLine > separator && block.firstLine <= separator + chainGapLines
                && !block.info.frames.empty())
                return b;
        }
    }
    return std::nullopt;
}

// The traceback that ends right before a separator which itself ends right before `line`.
std::optional<size_t> chainedBlockBefore(const text::TracebackScan& scan, size_t line)
{
    for (size_t separator : scan.chainSeparators) {
        if (separator >= line || separator + chainGapLines + 1 < line)
            continue;
        for (size_t b = 0; b < scan.blocks.size(); ++b) {
            const TracebackBlock& block = scan.blocks[b];
            if (block.terminator && *block.terminator < separator && *block.terminator + chainGapLines >= separator)
                return b;
        }
    }
    return std::nullopt;
}

constexpr size_t printedAfterGapLines = 3;

// The traceback that starts within a few lines after `line` (a header, a cut header or none) and
// never reaches its exception line: the paste ends inside it.
std::optional<size_t> tracebackPrintedAfter(const text::TracebackScan& scan, size_t line, const std::vector<char>& used)
{
    for (size_t b = 0; b < scan.blocks.size(); ++b) {
        const TracebackBlock& block = scan.blocks[b];
        if (used[b] || block.firstLine <= line || block.firstLine > line + printedAfterGapLines + 1)
            continue;
        if (!block.terminator && !block.info.frames.empty())
            return b;
        return std::nullopt;
    }
    return std::nullopt;
}

void adoptPhaseIfUnknown(TracebackInfo& info, const TracebackInfo& other)
{
    if (info.phase != Phase::Unknown || other.phase == Phase::Unknown)
        return;
    info.phase = other.phase;
    info.phaseEvidence = other.phaseEvidence + " (in the chained exception's traceback)";
}

void linkTracebacks(const text::TextLines& lines, std::vector<text::FoundOom>& ooms, const text::TracebackScan& scan,
    std::vector<char>& used)
{
    std::map<size_t, size_t> oomAtLine;
    for (size_t m = 0; m < ooms.size(); ++m) {
        oomAtLine[ooms[m].firstLine] = m;
        for (size_t repeat : ooms[m].repeatLines)
            oomAtLine.emplace(repeat, m);
    }
    // 1. CPython order: frames, then the exception line that is the message.
    for (size_t b = 0; b < scan.blocks.size(); ++b) {
        const TracebackBlock& block = scan.blocks[b];
        if (!block.terminator)
            continue;
        const auto it = oomAtLine.find(*block.terminator);
        if (it == oomAtLine.end() || ooms[it->second].message.traceback)
            continue;
        OomMessage& message = ooms[it->second].message;
        message.traceback = block.info;
        used[b] = 1;
        if (const auto next = chainedBlockAfter(scan, *block.terminator)) {
            message.traceback->chained = true;
            adoptPhaseIfUnknown(*message.traceback, scan.blocks[*next].info);
            // The chain is one story: a cut handler traceback means the paste was cut.
            message.traceback->truncated = message.traceback->truncated || scan.blocks[*next].info.truncated;
            used[*next] = 1;
        }
        if (const auto previous = chainedBlockBefore(scan, block.firstLine)) {
            message.traceback->chained = true;
            adoptPhaseIfUnknown(*message.traceback, scan.blocks[*previous].info);
        }
    }
    for (text::FoundOom& found : ooms) {
        OomMessage& message = found.message;
        if (message.traceback)
            continue;
        // 2. The message printed alone, then "During handling ..." and the handler's traceback.
        if (const auto next = chainedBlockAfter(scan, found.lastLine)) {
            message.traceback = scan.blocks[*next].info;
            message.traceback->chained = true;
            used[*next] = 1;
            continue;
        }
        // 3. VS Code's debugger: "Exception has occurred: X", the message, then frames innermost first.
        const bool vscode
            = found.firstLine > 0 && trimmed(lines[found.firstLine - 1]).starts_with("Exception has occurred");
        if (vscode) {
            for (size_t b = 0; b < scan.blocks.size(); ++b) {
                const TracebackBlock& block = scan.blocks[b];
                if (used[b] || block.hasHeader || block.firstLine <= found.lastLine
                    || block.firstLine > found.lastLine + 2)
                    continue;
                TracebackInfo info = block.info;
                std::reverse(info.frames.begin(), info.frames.end());
                info.truncated
                    = !block.terminator && (info.frames.empty() || info.frames.front().function != "<module>");
                decideTracebackPhase(info);
                message.traceback = std::move(info);
                used[b] = 1;
                break;
            }
            continue;
        }
        // 4. The message printed before its traceback: pre-1.0 PyTorch's "THCudaCheck FAIL ... out of
        //    memory" comes from C before Python raises, and apps that catch the error (ComfyUI's
        //    "!!! Exception during processing !!!") print it and then the traceback. Only a traceback
        //    that starts right after and does not end in an exception of its own is this one's.
        if (const auto after = tracebackPrintedAfter(scan, found.lastLine, used)) {
            message.traceback = scan.blocks[*after].info;
            used[*after] = 1;
        }
    }
}

// The failures in `lines`: the OOM messages, each with its traceback, the progress lines, parameter
// counts and recipe the log printed before it, and the tracebacks that carry no message of their
// own. One rank's lines at a time when several ranks' interleave.
void findFailures(const text::TextLines& lines, TextFindings& findings)
{
    std::vector<text::FoundOom> ooms = text::findOomMessages(lines);
    std::vector<char> messageStarts(lines.size(), 0);
    for (const text::FoundOom& found : ooms) {
        messageStarts[found.firstLine] = 1;
        for (size_t repeat : found.repeatLines)
            messageStarts[repeat] = 1;
    }
    text::TracebackScan scan = text::findTracebacks(lines, messageStarts);
    for (text::TracebackBlock& block : scan.blocks)
        decideTracebackPhase(block.info);
    std::vector<char> used(scan.blocks.size(), 0);
    linkTracebacks(lines, ooms, scan, used);

    // What the log printed before each failure: its progress lines, parameter counts and recipe.
    const bool anyOom = !ooms.empty();
    const auto memoryLog = std::make_shared<const std::vector<MemoryLogPoint>>(
        anyOom ? text::findMemoryLog(lines) : std::vector<MemoryLogPoint> {});
    const std::vector<text::ParameterCount> parameterCounts
        = anyOom ? text::findParameterCounts(lines) : std::vector<text::ParameterCount> {};
    const std::vector<text::RecipeLine> recipeLines
        = anyOom ? text::findRecipeLines(lines) : std::vector<text::RecipeLine> {};
    for (text::FoundOom& found : ooms) {
        // findMemoryLog returns the points in line order: the ones before this message are a prefix.
        const auto end = std::partition_point(memoryLog->begin(), memoryLog->end(),
            [&](const MemoryLogPoint& point) { return point.sourceLine <= found.message.sourceLine; });
        found.message.memoryLog = MemoryLog(memoryLog, static_cast<size_t>(end - memoryLog->begin()));
        for (const text::ParameterCount& count : parameterCounts) {
            if (count.lineIndex >= found.firstLine)
                continue;
            // The last ones printed before the failure.
            if (count.trainable)
                found.message.trainableParameters = count.trainable;
            if (count.total)
                found.message.totalParameters = count.total;
        }
        found.message.recipe = text::recipeBefore(recipeLines, found.firstLine, found.message.traceback);
        // The frames decide; the message's own hint (XLA's peak-buffer ops) only where they cannot.
        if (found.message.traceback && found.message.traceback->phase != Phase::Unknown)
            found.message.phase = found.message.traceback->phase;
        if (const int rank = lines.rankOf(found.firstLine); rank >= 0)
            found.message.rank = rank;
        findings.oomMessages.push_back(std::move(found.message));
    }
    for (size_t b = 0; b < scan.blocks.size(); ++b) {
        if (used[b] || scan.blocks[b].info.frames.empty())
            continue;
        TracebackInfo info = scan.blocks[b].info;
        if ((scan.blocks[b].terminator && chainedBlockAfter(scan, *scan.blocks[b].terminator))
            || chainedBlockBefore(scan, scan.blocks[b].firstLine))
            info.chained = true;
        findings.tracebacks.push_back(std::move(info));
    }
}

// torchrun's closing summary names the rank it saw fail first:
//   Root Cause (first observed failure):
//   [0]:
//     rank      : 3 (local_rank: 3)
std::optional<int> firstObservedFailure(const text::TextLines& lines)
{
    for (size_t i = 0; i < lines.size(); ++i) {
        if (!contains(lines[i], "Root Cause (first observed failure)"))
            continue;
        for (size_t j = i + 1; j < lines.size() && j < i + 8; ++j) {
            const std::string_view line = trimmed(lines[j]);
            if (!line.starts_with("rank"))
                continue;
            const size_t colon = line.find(':');
            if (colon == std::string_view::npos || trimmed(line.substr(4, colon - 4)) != "")
                continue;
            const std::string_view value = trimmed(line.substr(colon + 1));
            int rank = 0;
            size_t n = 0;
            while (n < value.size() && n < 5 && value[n] >= '0' && value[n] <= '9')
                rank = rank * 10 + (value[n++] - '0');
            if (n > 0)
                return rank;
        }
    }
    return std::nullopt;
}

std::string rankList(const std::vector<int>& ranks)
{
    std::string text;
    for (size_t i = 0; i < ranks.size(); ++i) {
        if (i > 0)
            text += i + 1 == ranks.size() ? " and " : ", ";
        text += std::to_string(ranks[i]);
    }
    return text;
}

// A log where several ranks print at once ("[rank0]:", "[rank1]:" lines interleaved) is read one
// rank at a time, so that each message gets its own rank's traceback and progress lines, never a
// neighbour's. The failing rank's message comes first: torchrun's first observed failure when the
// log reaches its summary, else the first message printed. Lines without a prefix (the launcher's
// own) are read on their own.
void findFailuresByRank(const text::TextLines& lines, const std::vector<int>& ranks, TextFindings& findings)
{
    std::vector<std::vector<size_t>> byRank(ranks.size() + 1);
    for (size_t i = 0; i < lines.size(); ++i) {
        const int rank = lines.rankOf(i);
        const auto it = std::lower_bound(ranks.begin(), ranks.end(), rank);
        byRank[rank >= 0 && it != ranks.end() && *it == rank ? size_t(it - ranks.begin()) + 1 : 0].push_back(i);
    }
    for (const std::vector<size_t>& indices : byRank) {
        if (!indices.empty())
            findFailures(lines.subset(indices), findings);
    }
    const auto byLine = [](const auto& a, const auto& b) { return a.sourceLine < b.sourceLine; };
    std::stable_sort(findings.oomMessages.begin(), findings.oomMessages.end(), byLine);
    std::stable_sort(findings.tracebacks.begin(), findings.tracebacks.end(), byLine);

    std::vector<int> failed;
    for (const OomMessage& message : findings.oomMessages) {
        if (message.rank && std::find(failed.begin(), failed.end(), *message.rank) == failed.end())
            failed.push_back(*message.rank);
    }
    if (failed.empty())
        return;
    const std::optional<int> rootCause = firstObservedFailure(lines);
    int first = failed.front();
    if (rootCause && std::find(failed.begin(), failed.end(), *rootCause) != failed.end())
        first = *rootCause;
    // The failing rank's first message to the front; the rest keep their order.
    const auto firstMessage = std::find_if(findings.oomMessages.begin(), findings.oomMessages.end(),
        [&](const OomMessage& message) { return message.rank == first; });
    std::rotate(findings.oomMessages.begin(), firstMessage, firstMessage + 1);
    std::sort(failed.begin(), failed.end());
    findings.failedRanks.push_back(first);
    for (const int rank : failed) {
        if (rank != first)
            findings.failedRanks.push_back(rank);
    }
    if (failed.size() > 1) {
        OomMessage& message = findings.oomMessages.front();
        message.notes.push_back("ranks " + rankList(failed) + " ran out of memory; this is rank "
            + std::to_string(first) + "'s message, "
            + (rootCause && *rootCause == first ? "the first failure torchrun observed" : "the first one printed")
            + ", with its own traceback");
    }
}

// A traceback the scan could not tie to its message (a vLLM worker's "(VllmWorker rank=2 pid=…)
// ERROR" prefixes, frames printed far from the message) still shows where the run failed. When no
// message's own frames say, the messages take the phase of the first traceback that does: the phase
// failingPhase() reports, so the JSON's messages, the text and the diagnosis tell the same one.
void adoptStrayTracebackPhase(TextFindings& findings)
{
    const bool messageKnows = std::any_of(findings.oomMessages.begin(), findings.oomMessages.end(),
        [](const OomMessage& message) { return message.phase != Phase::Unknown; });
    const auto stray = std::find_if(findings.tracebacks.begin(), findings.tracebacks.end(),
        [](const TracebackInfo& traceback) { return traceback.phase != Phase::Unknown; });
    if (messageKnows || stray == findings.tracebacks.end())
        return;
    for (OomMessage& message : findings.oomMessages) {
        message.phase = stray->phase;
        message.notes.push_back("the phase is read from a traceback printed apart from the message"
            + (stray->phaseEvidence.empty() ? std::string() : " (" + stray->phaseEvidence + ")"));
    }
}

} // namespace

TextFindings parseText(std::string_view input)
{
    TextFindings findings;
    if (trimmed(input).empty())
        return findings;
    const text::TextLines lines(input);

    if (const std::vector<int> ranks = lines.ranks(); ranks.size() > 1)
        findFailuresByRank(lines, ranks, findings);
    else
        findFailures(lines, findings);
    adoptStrayTracebackPhase(findings);
    findings.summaries = text::findMemorySummaries(lines);
    findings.nvidiaSmi = text::findNvidiaSmiTables(lines);
    findings.allocConfs = text::findAllocConfs(lines);
    findings.launcherRanks = text::findLauncherRanks(input);
    findings.hostKills = text::findHostMemoryKills(lines);
    findings.serving = text::findServingRun(input, findings);
    return findings;
}

InputKind classifyText(std::string_view input, const TextFindings& findings)
{
    if (findings.empty())
        return InputKind::Unknown;
    const bool hasOom = !findings.oomMessages.empty();
    const bool hasSummary = !findings.summaries.empty();
    const bool hasSmi = !findings.nvidiaSmi.empty();
    const bool hasTraceback = !findings.tracebacks.empty() && !hasOom;
    const int kinds = int(hasOom) + int(hasSummary) + int(hasSmi) + int(hasTraceback);
    // An engine's start-up lines or its own failure message with nothing else: a serving log.
    if (kinds != 1)
        return InputKind::Log;

    // A whole training log that happens to hold one message is still a log: compare the lines
    // the findings explain with the lines there are.
    size_t explained = 20;
    for (const OomMessage& message : findings.oomMessages)
        explained += 3 + (message.traceback ? 3 * message.traceback->frames.size() : 0);
    for (const TracebackInfo& traceback : findings.tracebacks)
        explained += 2 + 3 * traceback.frames.size();
    explained += 35 * findings.summaries.size();
    for (const NvidiaSmiTable& table : findings.nvidiaSmi)
        explained += 15 + 2 * table.gpus.size() + table.processes.size();
    size_t nonEmpty = 0;
    size_t begin = 0;
    while (begin < input.size()) {
        size_t end = input.find('\n', begin);
        if (end == std::string_view::npos)
            end = input.size();
        if (!trimmed(input.substr(begin, end - begin)).empty())
            ++nonEmpty;
        begin = end + 1;
    }
    if (nonEmpty > 3 * explained)
        return InputKind::Log;
    if (hasOom)
        return InputKind::OomMessage;
    if (hasSummary)
        return InputKind::MemorySummary;
    if (hasSmi)
        return InputKind::NvidiaSmi;
    return InputKind::Traceback;
}

} // namespace oomlens
