#pragma once

#include "core/analysis/cardreconciliation.h"
#include "core/analysis/cardtimeline.h"
#include "core/analysis/snapshotanalysis.h"
#include "core/case.h"
#include "core/diagnosis.h"
#include "core/serving/servingview.h"

#include <optional>
#include <string>
#include <vector>

namespace oomlens {

// Peak and headroom of one snapshot's primary device: what a healthy run reports instead of a
// diagnosis ("peak 14.2 GiB reserved on a 15.8 GiB card: 1.6 GiB to spare").
struct SnapshotHeadroom
{
    int snapshotIndex = 0;
    int32_t device = 0;
    uint64_t peakAllocatedBytes = 0;
    uint64_t peakReservedBytes = 0;
    int64_t peakEvent = -1;
    int64_t peakTimeUs = 0;
    std::optional<uint64_t> capacityBytes; // from a linked message or nvidia-smi; unknown otherwise
    std::optional<int64_t> headroomBytes; // capacity − peak reserved
    bool failed = false; // the snapshot holds an oom event
};

struct CaseAnalysis
{
    std::vector<SnapshotAnalysis> snapshots; // parallel to Case::snapshots
    std::vector<Diagnosis> diagnoses; // most likely first
    std::vector<SnapshotHeadroom> headroom; // one per snapshot
    // How the inputs fit together: which message is which oom event, and where they disagree
    // (another device, another run).
    std::vector<std::string> links;
    // The inference run the inputs show (engine, version, its budget and settings); nothing for
    // training and for inputs that show no engine. core/serving/servingdiagnosis.h.
    std::optional<ServingView> serving;
    // The allocator's, the process's and the card's view of the failing device, reconciled once
    // (core/analysis/cardreconciliation.h) for the overview, the report, `diagnose` and the JSON.
    CardReconciliation card;
    // What the card held outside PyTorch as a band over each snapshot's timeline, parallel to
    // snapshots: card's device on that snapshot, following its oom events (cardtimeline.h);
    // nothing where the card's total or the gap is unknown. Read through cardBandOn.
    std::vector<std::optional<CardTimelineBand>> cardBands;

    // The band over snapshot `snapshot`'s device `device`; null when it has none.
    const CardTimelineBand* cardBandOn(size_t snapshot, int32_t device) const;
};

CaseAnalysis analyzeCase(const Case& input, const AnalysisOptions& options = {});

// analyzeCase in its two stages, for a caller that shows the timeline before the diagnosis is
// ready (views/caseloader.h): first every snapshot's timeline (reconstruction, phases,
// categories, peak), parallel to Case::snapshots; then, from those, the diagnoses, headroom and
// links, the card's reconciliation and its bands. The second stage reads result.snapshots and
// writes only the other members.
std::vector<SnapshotAnalysis> analyzeSnapshots(const Case& input, const AnalysisOptions& options = {});
void diagnoseCase(const Case& input, CaseAnalysis& result);
// diagnoseCase's last stage: the card and its bands from the snapshots and the diagnoses. For an
// analysis assembled by hand (a test's fixture).
void reconcileCase(const Case& input, CaseAnalysis& result);

} // namespace oomlens
