#pragma once

#include <optional>
#include <string>
#include <string_view>

namespace oomlens {

// The causes of product.md §3. The JSON, the report and every printed line spell them with
// diagnosisIdName ("optimizer_step2"); the code compares the enum, so a misspelt id cannot compile.
enum class DiagnosisId {
    Fragmentation,
    FirstBackward,
    OptimizerStep2,
    LongestBatch,
    EvalAccumulation,
    Leak,
    Capacity,
    OtherProcess,
    MemoryFractionCap,
    LargeAllocation,
    HostMemory,
    // Wave 3 (product.md §3): what distributed training and CUDA graphs add.
    PendingFrees,
    CommunicationBuffers,
    GraphCapture,
    ColocatedEngine,
    // What an inference engine adds (core/serving/): its KV cache cannot hold what it was asked to
    // serve, or too many tokens were in flight at once (warm-up, prefill, the profile run).
    KvCacheBudget,
    EngineBatch,
    WorkingSet,
};

std::string_view diagnosisIdName(DiagnosisId id);
// For string concatenation in evidence and rank reasons.
std::string diagnosisIdText(DiagnosisId id);
std::optional<DiagnosisId> diagnosisIdFromName(std::string_view name);

} // namespace oomlens
