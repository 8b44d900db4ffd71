#pragma once

#include "core/case.h"
#include "core/caseanalysis.h"
#include "core/snapshotbackend.h"

#include <nlohmann/json.hpp>

namespace oomlens {

// The `diagnose --json` document, exactly as product.md §5 defines it. Keys may be added,
// never renamed: scripts depend on them.
nlohmann::ordered_json caseToJson(const Case& input, const CaseAnalysis& analysis);

// `listedBefore`: the memory log an earlier message of the same text already listed; only the points
// after it are printed.
nlohmann::ordered_json oomMessageToJson(const OomMessage& message, const MemoryLog& listedBefore = {});
nlohmann::ordered_json memorySummaryToJson(const MemorySummary& summary);
// `backend`: who wrote the snapshot (core/snapshotbackend.h), the entry's "backend".
nlohmann::ordered_json snapshotToJson(const SnapshotAnalysis& analysis, const SnapshotHeadroom* headroom = nullptr,
    SnapshotBackend backend = SnapshotBackend::Cuda);
nlohmann::ordered_json diagnosisToJson(const Diagnosis& diagnosis);

} // namespace oomlens
