#include "core/diagnosis/diagnosisid.h"

#include "core/nametable.h"

namespace oomlens {

namespace {

constexpr NameTable<DiagnosisId, 18> diagnosisIdNames { {
    { DiagnosisId::Fragmentation, "fragmentation" },
    { DiagnosisId::FirstBackward, "first_backward" },
    { DiagnosisId::OptimizerStep2, "optimizer_step2" },
    { DiagnosisId::LongestBatch, "longest_batch" },
    { DiagnosisId::EvalAccumulation, "eval_accumulation" },
    { DiagnosisId::Leak, "leak" },
    { DiagnosisId::Capacity, "capacity" },
    { DiagnosisId::OtherProcess, "other_process" },
    { DiagnosisId::MemoryFractionCap, "memory_fraction_cap" },
    { DiagnosisId::LargeAllocation, "large_allocation" },
    { DiagnosisId::HostMemory, "host_memory" },
    { DiagnosisId::PendingFrees, "pending_frees" },
    { DiagnosisId::CommunicationBuffers, "communication_buffers" },
    { DiagnosisId::GraphCapture, "graph_capture" },
    { DiagnosisId::ColocatedEngine, "colocated_engine" },
    { DiagnosisId::KvCacheBudget, "kv_cache_budget" },
    { DiagnosisId::EngineBatch, "engine_batch" },
    { DiagnosisId::WorkingSet, "working_set" },
} };

} // namespace

std::string_view diagnosisIdName(DiagnosisId id)
{
    return nameIn(diagnosisIdNames, id);
}

std::string diagnosisIdText(DiagnosisId id)
{
    return std::string(diagnosisIdName(id));
}

std::optional<DiagnosisId> diagnosisIdFromName(std::string_view name)
{
    return valueNamed(diagnosisIdNames, name);
}

} // namespace oomlens
