#include "core/diagnosis/textrules.h"

#include "core/diagnosis/catalogue.h"
#include "core/units.h"

#include <algorithm>

namespace oomlens::textrules {

// The loop's own progress log. Memory that grows at every logged step while the batch stays the
// same is references kept across steps (0.7: the log is the user's, its figures may be peaks).
// A failing step whose sequence is at least twice any logged before it is the longest batch (0.7):
// attention buffers grow with its square.
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
    if (failing && longestBefore > 0 && *failing->sequenceLength >= 2 * longestBefore) {
        Diagnosis d = makeDiagnosis("longest_batch", 0.7, {});
        addEvidence(d,
            "the failing step " + std::to_string(failing->step) + " has sequence length "
                + std::to_string(*failing->sequenceLength) + ", "
                + std::to_string(*failing->sequenceLength / longestBefore) + "x the longest logged before it ("
                + std::to_string(longestBefore) + "): attention buffers grow with its square");
        d.summary = "One batch is much longer than the rest; the run fits its usual batches, not this one.";
        appendFixes(d.fixes,
            { FixKind::LengthBucketing, FixKind::Sdpa, FixKind::MicroBatch, FixKind::ShorterSequences }, fixes);
        out.add(std::move(d));
    }
}

} // namespace oomlens::textrules
