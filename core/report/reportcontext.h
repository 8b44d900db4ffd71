#pragma once

#include "core/analysis/allocationannotations.h"
#include "core/analysis/cardreconciliation.h"
#include "core/analysis/cardtimeline.h"
#include "core/presentation/historywords.h"
#include "core/report/htmlreport.h"
#include "core/snapshotbackend.h"

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace oomlens::report {

// One snapshot as the report shows it: the device its section is about and that device's history.
struct ShownSnapshot
{
    size_t index = 0; // into CaseAnalysis::snapshots and Case::snapshots
    const SnapshotAnalysis* analysis = nullptr;
    // The primary device, else the first with segments or trace events; null when there is none
    // (or the snapshot itself is missing).
    const DeviceAnalysis* device = nullptr;
    TraceHistory history; // of `device`; empty when there is none
    // The notes _annotate_tensor attached to `device`'s allocations; empty when there are none.
    AllocationAnnotations annotations;
    // Who wrote it (core/snapshotbackend.h): its frames, else the case's OOM message; named in the
    // heading when not CUDA, and the history advice speaks its module.
    SnapshotBackend backend = SnapshotBackend::Cuda;
    std::string path; // the input it was read from; empty when none names it
};

// What the report's sections read, derived once before the first is written: every section is a
// free function over this (reportsections.h), so none recomputes what another already did.
struct ReportContext
{
    ReportContext(const Case& reportedCase, const CaseAnalysis& caseAnalysis, const ReportOptions& reportOptions);

    const Case& input;
    const CaseAnalysis& analysis;
    const ReportOptions& options;
    // A report of a plan alone (`oomlens plan --report`): no inputs, so no diagnosis or inputs.
    bool planOnly = false;
    std::string title;
    // The card's capacity from the first OOM message or nvidia-smi table that gives it.
    std::optional<uint64_t> capacityBytes;
    // Allocator, process and card figures side by side: the analysis' (CaseAnalysis::card).
    const CardReconciliation& card;
    // Why the capture section is written (what the snapshots lack); empty leaves it out.
    std::string captureAdviceReason;
    std::vector<ShownSnapshot> snapshots; // one per CaseAnalysis::snapshots entry
};

} // namespace oomlens::report
