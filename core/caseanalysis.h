#pragma once

// DRAFT interface (owned by the diagnosis work, issue 5): refine freely, keep the names.

#include "core/analysis/snapshotanalysis.h"
#include "core/case.h"
#include "core/diagnosis.h"

#include <vector>

namespace oomlens {

struct CaseAnalysis {
    std::vector<SnapshotAnalysis> snapshots; // parallel to Case::snapshots
    std::vector<Diagnosis> diagnoses;        // most likely first
};

CaseAnalysis analyzeCase(const Case& input, const AnalysisOptions& options = {});

} // namespace oomlens
