#include "core/diagnosis/textrules.h"

#include "core/diagnosis/catalogue.h"
#include "core/units.h"

#include <algorithm>
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

} // namespace

// The loop's own progress log. Memory that grows at every logged step while the batch stays the
// same is references kept across steps (0.7: the log is the user's, its figures may be peaks).
// A failing step whose sequence is at least twice any logged before it is the longest batch (0.7):
// attention buffers grow with its square; where the log prints batch shapes instead ("batch 8x512"),
// twice the tokens of any batch before it reads the same.
void diagnoseMemoryLog(const OomFacts& f, const FixContext& fixes, Candidates& out)
{
    std::vector<const MemoryLogPoint*> sized;
    for (const auto& point : f.memoryLog) {
        if (point.bytes)
            sized.push_back(&point);
    }
    if (sized.size() >= 3) {
        bool growing = true;
        bool sameBatch = true;
        for (size_t i = 1; i < sized.size(); ++i) {
            growing = growing && sized[i]->step > sized[i - 1]->step && *sized[i]->bytes > *sized[i - 1]->bytes;
            sameBatch = sameBatch && sized[i]->batch == sized[0]->batch;
        }
        const uint64_t first = *sized.front()->bytes;
        const uint64_t last = *sized.back()->bytes;
        if (growing && sameBatch && last >= first + first / 5) {
            const int64_t steps = sized.back()->step - sized.front()->step;
            Diagnosis d = makeDiagnosis("leak", 0.7, {});
            addEvidence(d,
                "the log's own memory figure grew at every one of " + std::to_string(sized.size())
                    + " logged steps: " + formatBytes(first) + " at step " + std::to_string(sized.front()->step) + ", "
                    + formatBytes(last) + " at step " + std::to_string(sized.back()->step) + " (+"
                    + formatBytes((last - first) / static_cast<uint64_t>(std::max<int64_t>(steps, 1)) * 100)
                    + " per 100 steps)"
                    + (sized.front()->batch.empty() ? std::string() : " with the same batch " + sized.front()->batch));
            d.summary = "Memory grows step after step at a constant batch: something keeps references across "
                        "iterations (a loss kept with its graph, outputs appended to a list).";
            appendFixes(d.fixes, { FixKind::ReleaseReferences }, fixes);
            out.add(std::move(d));
        }
    }
    const MemoryLogPoint* failing = nullptr;
    uint64_t longestBefore = 0;
    for (const auto& point : f.memoryLog) {
        if (!point.sequenceLength)
            continue;
        if (failing)
            longestBefore = std::max(longestBefore, *failing->sequenceLength);
        failing = &point;
    }
    // Without a sequence length, a printed batch shape ("batch 8x4096") gives the tokens: what
    // activations scale with.
    const MemoryLogPoint* failingShape = nullptr;
    uint64_t mostTokensBefore = 0;
    for (const auto& point : f.memoryLog) {
        const auto tokens = batchTokens(point.batch);
        if (!tokens)
            continue;
        if (failingShape)
            mostTokensBefore = std::max(mostTokensBefore, *batchTokens(failingShape->batch));
        failingShape = &point;
    }
    const bool longer = failing && longestBefore > 0 && *failing->sequenceLength >= 2 * longestBefore;
    const bool moreTokens
        = !longer && failingShape && mostTokensBefore > 0 && *batchTokens(failingShape->batch) >= 2 * mostTokensBefore;
    if (longer || moreTokens) {
        Diagnosis d = makeDiagnosis("longest_batch", 0.7, {});
        if (longer)
            addEvidence(d,
                "the failing step " + std::to_string(failing->step) + " has sequence length "
                    + std::to_string(*failing->sequenceLength) + ", "
                    + std::to_string(*failing->sequenceLength / longestBefore) + "x the longest logged before it ("
                    + std::to_string(longestBefore) + "): attention buffers grow with its square");
        else
            addEvidence(d,
                "the failing step " + std::to_string(failingShape->step) + " has a batch of " + failingShape->batch
                    + " (" + std::to_string(*batchTokens(failingShape->batch)) + " tokens), "
                    + std::to_string(*batchTokens(failingShape->batch) / mostTokensBefore)
                    + "x the most logged before it (" + std::to_string(mostTokensBefore)
                    + "): activations grow with the tokens, attention buffers faster");
        d.summary = "One batch is much longer than the rest; the run fits its usual batches, not this one.";
        appendFixes(d.fixes,
            { FixKind::LengthBucketing, FixKind::Sdpa, FixKind::MicroBatch, FixKind::ShorterSequences }, fixes);
        out.add(std::move(d));
    }
}

} // namespace oomlens::textrules
