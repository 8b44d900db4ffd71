#pragma once

#include "core/diagnosis.h"
#include "core/diagnosis/snapshotdiagnosis.h"

#include <string>
#include <vector>

namespace oomlens::test {

// The snapshot's diagnoses for a TraceBuilder trace, ranked; with OOMLENS_DEBUG_DIAG set in the
// environment they are also printed, to read a failing test's reasoning.
std::vector<Diagnosis> diagnoseTrace(const std::string& trace, const SnapshotDiagnosisContext& context = {});

// Whether any evidence line of `d` contains `needle`.
bool hasEvidence(const Diagnosis& d, const std::string& needle);

} // namespace oomlens::test
