#include "core/diagnosis/textrules.h"

#include "core/diagnosis/catalogue.h"
#include "core/units.h"

#include <algorithm>
#include <functional>
#include <optional>

namespace oomlens::textrules {

namespace {

// "8x4096" -> 32768 tokens; a bare "16" (the batch size alone) says nothing of the length.
std::optional<uint64_t> batchTokens(const std::string& batch)
{
    const size_t x = batch.find('x');
    if (x == std::string::npos || x == 0 || x + 1 >= batch.size())
        return std::nullopt;
    uint64_t product = 1;
    size_t start = 0;
    while (start <= batch.size()) {
        const size_t end = std::min(batch.find('x', start), batch.size());
        if (end == start)
            return std::nullopt;
        uint64_t value = 0;
        for (size_t i = start; i < end; ++i) {
            if (batch[i] < '0' || batch[i] > '9' || value > (uint64_t(1) << 32))
                return std::nullopt;
            value = value * 10 + static_cast<uint64_t>(batch[i] - '0');
        }
        if (value == 0 || product > (uint64_t(1) << 62) / value)
            return std::nullopt;
        product *= value;
        start = end + 1;
    }
    return product;
}

// How the log names the figure it printed, for the evidence.
std::string metricWords(const std::string& metric)
{
    if (metric == "allocated")
        return "allocated memory (live tensors)";
    if (metric == "reserved")
        return "reserved memory (the allocator's cache)";
    if (metric == "peak_allocated")
        return "peak allocated memory";
    if (metric == "peak_reserved")
        return "peak reserved memory";
    if (metric == "peak_memory")
        return "peak memory figure";
    return "memory figure";
}

// The work one step does, as far as the line says: the same batch, sequence length and token count
// at every logged step means memory at the same point of each step should stay flat.
bool sameWorkload(const MemoryLogPoint& a, const MemoryLogPoint& b)
{
    return a.batch == b.batch && a.sequenceLength == b.sequenceLength && a.tokens == b.tokens;
}

// Memory that grows at every logged step while the work stays the same is references kept across
// steps (0.7: the log is the user's, its figures may be peaks). Only figures of one kind are compared:
// allocated and reserved grow differently, and a running peak rises with any new high.
void diagnoseGrowth(const OomFacts& f, const FixContext& fixes, Candidates& out)
{
    std::vector<const MemoryLogPoint*> sized;
    for (const auto& point : f.memoryLog) {
        if (point.bytes)
            sized.push_back(&point);
    }
    if (sized.empty())
        return;
    const std::string metric = sized.back()->bytesMetric;
    sized.erase(std::remove_if(sized.begin(), sized.end(),
                    [&metric](const MemoryLogPoint* point) { return point->bytesMetric != metric; }),
        sized.end());
    if (sized.size() < 3)
        return;
    bool growing = true;
    bool constant = true;
    for (size_t i = 1; i < sized.size(); ++i) {
        growing = growing && sized[i]->step > sized[i - 1]->step && *sized[i]->bytes > *sized[i - 1]->bytes;
        constant = constant && sameWorkload(*sized[i], *sized[0]);
    }
    const uint64_t first = *sized.front()->bytes;
    const uint64_t last = *sized.back()->bytes;
    if (!growing || !constant || last < first + first / 5)
        return;
    const int64_t steps = sized.back()->step - sized.front()->step;
    std::string workload;
    if (!sized.front()->batch.empty())
        workload += " with the same batch " + sized.front()->batch;
    if (sized.front()->sequenceLength)
        workload += (workload.empty() ? " with" : " and") + std::string(" the same sequence length ")
            + std::to_string(*sized.front()->sequenceLength);
    Diagnosis d = makeDiagnosis(DiagnosisId::Leak, 0.7, {});
    addEvidence(d,
        "the log's own " + metricWords(metric) + " grew at every one of " + std::to_string(sized.size())
            + " logged steps: " + formatBytes(first) + " at step " + std::to_string(sized.front()->step) + ", "
            + formatBytes(last) + " at step " + std::to_string(sized.back()->step) + " (+"
            + formatBytes((last - first) / static_cast<uint64_t>(std::max<int64_t>(steps, 1)) * 100) + " per 100 steps)"
            + workload + " (lines " + std::to_string(sized.front()->sourceLine) + "-"
            + std::to_string(sized.back()->sourceLine) + ")");
    d.summary = "Memory grows step after step at a constant batch: something keeps references across "
                "iterations (a loss kept with its graph, outputs appended to a list).";
    appendFixes(d.fixes, { FixKind::ReleaseReferences }, fixes);
    out.add(std::move(d));
}

struct LongestSeen
{
    const MemoryLogPoint* failing = nullptr; // the last logged point with the measure: the failing step
    uint64_t value = 0;
    uint64_t mostBefore = 0;
};

LongestSeen longestSeen(const MemoryLog& log, const std::function<std::optional<uint64_t>(const MemoryLogPoint&)>& size)
{
    LongestSeen seen;
    for (const auto& point : log) {
        const auto value = size(point);
        if (!value)
            continue;
        if (seen.failing)
            seen.mostBefore = std::max(seen.mostBefore, seen.value);
        seen.failing = &point;
        seen.value = *value;
    }
    return seen;
}

// A failing step whose batch is at least twice any logged before it is the longest batch (0.7):
// activations grow with its tokens, attention buffers with the square of its length. The length
// decides where the log prints it ("seq_len 4096", "padded to 4096 tokens"); else a printed token
// count ("ntokens 32768"); else the batch's shape ("batch 8x4096").
void diagnoseLongestBatch(const OomFacts& f, const FixContext& fixes, Candidates& out)
{
    struct Measure
    {
        std::function<std::optional<uint64_t>(const MemoryLogPoint&)> size;
        std::function<std::string(const LongestSeen&)> evidence;
    };
    const std::vector<Measure> measures {
        { [](const MemoryLogPoint& p) { return p.sequenceLength; },
            [](const LongestSeen& s) {
                return "the failing step " + std::to_string(s.failing->step) + " has sequence length "
                    + std::to_string(s.value) + ", " + std::to_string(s.value / s.mostBefore)
                    + "x the longest logged before it (" + std::to_string(s.mostBefore)
                    + "): attention buffers grow with its square (line " + std::to_string(s.failing->sourceLine) + ")";
            } },
        { [](const MemoryLogPoint& p) { return p.tokens; },
            [](const LongestSeen& s) {
                return "the failing step " + std::to_string(s.failing->step) + " has " + std::to_string(s.value)
                    + " tokens, " + std::to_string(s.value / s.mostBefore) + "x the most logged before it ("
                    + std::to_string(s.mostBefore) + "): activations grow with the tokens (line "
                    + std::to_string(s.failing->sourceLine) + ")";
            } },
        { [](const MemoryLogPoint& p) { return batchTokens(p.batch); },
            [](const LongestSeen& s) {
                return "the failing step " + std::to_string(s.failing->step) + " has a batch of " + s.failing->batch
                    + " (" + std::to_string(s.value) + " tokens), " + std::to_string(s.value / s.mostBefore)
                    + "x the most logged before it (" + std::to_string(s.mostBefore)
                    + "): activations grow with the tokens, attention buffers faster";
            } },
    };
    for (const Measure& measure : measures) {
        const LongestSeen seen = longestSeen(f.memoryLog, measure.size);
        if (!seen.failing || seen.mostBefore == 0)
            continue;
        if (seen.value < 2 * seen.mostBefore)
            return; // the log's best measure shows no outlier: a weaker one must not claim one
        Diagnosis d = makeDiagnosis(DiagnosisId::LongestBatch, 0.7, {});
        addEvidence(d, measure.evidence(seen));
        d.summary = "One batch is much longer than the rest; the run fits its usual batches, not this one.";
        appendFixes(d.fixes,
            { FixKind::LengthBucketing, FixKind::Sdpa, FixKind::MicroBatch, FixKind::ShorterSequences }, fixes);
        out.add(std::move(d));
        return;
    }
}

} // namespace

// The loop's own progress log, read for the two causes a log shows better than a message: growth
// at matching points of successive steps, and one batch far longer than the rest.
void diagnoseMemoryLog(const OomFacts& f, const FixContext& fixes, Candidates& out)
{
    diagnoseGrowth(f, fixes, out);
    diagnoseLongestBatch(f, fixes, out);
}

} // namespace oomlens::textrules
