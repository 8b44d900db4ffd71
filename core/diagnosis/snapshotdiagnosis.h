#pragma once

#include "core/analysis/snapshotanalysis.h"
#include "core/diagnosis.h"
#include "core/diagnosis/oomfacts.h"
#include "core/planner/kvcache.h"

#include <optional>
#include <string>
#include <vector>

namespace oomlens {

// What the rest of the case says about this snapshot's failure.
struct SnapshotDiagnosisContext
{
    int snapshotIndex = 0;
    std::optional<OomFacts> message; // the OOM message linked to this snapshot's oom event
    bool expandableSegmentsOn = false; // from text settings; the snapshot's own settings are read too
    bool asyncAllocator = false;
    int gpuCount = 0; // ranks the text shows ([rankN]: prefixes, nvidia-smi); 0 unknown
    std::string gpuCountEvidence;
    // The card's total memory when something other than the snapshot tells it: the linked
    // message's "total capacity", nvidia-smi, a capture sidecar. A snapshot records none.
    std::optional<uint64_t> cardTotalBytes;
    std::string cardTotalSource; // "the OOM message", "nvidia-smi", "the capture sidecar"
    // One token's KV cache for the model a config.json among the inputs describes (bf16, one GPU
    // assumed: the inputs do not say the engine's dtype or tensor parallelism), for the colocated
    // engine's evidence: tokens its KV cache holds, tokens a smaller share gives up.
    std::optional<planner::KvCacheShape> kvShape;
    std::string kvShapeSource; // "Qwen2.5-7B's config.json"
};

// Diagnoses from measured evidence: which phase and step failed, which band grew, step-over-step
// growth, per-batch activation sizes, the allocator state at the oom event. Every evidence line
// that points at a moment carries an EvidenceLink. A snapshot without an oom event yields none.
std::vector<Diagnosis> diagnoseSnapshot(const SnapshotAnalysis& analysis, const SnapshotDiagnosisContext& context);

// The card's size as far as this snapshot and the linked message tell: the message's total
// (or allowed) when linked, else reserved + free at the oom event (a lower bound).
std::optional<uint64_t> snapshotCapacity(const DeviceAnalysis& device, const SnapshotDiagnosisContext& context);

} // namespace oomlens
