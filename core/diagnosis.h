#pragma once

#include "core/diagnosis/diagnosisid.h"
#include "core/diagnosis/fixkind.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace oomlens {

// Where a piece of evidence points, so the GUI can move its time cursor there.
struct EvidenceLink
{
    int snapshotIndex = -1; // index into Case::snapshots; -1 for text-only evidence
    int device = 0;
    int64_t eventIndex = -1; // index in that device's trace
    int64_t timeUs = 0;
};

struct Evidence
{
    std::string text; // "activations 11.2 GiB of 14.0 GiB live at the OOM in backward of step 1"
    std::optional<EvidenceLink> link;
};

struct Fix
{
    FixKind kind = FixKind::MicroBatch; // the JSON and the plan spell it fixId(kind): "micro_batch", "bf16", ...
    std::string title;
    std::string detail;
    std::string snippet; // code or config, shown in a code block
    std::optional<int64_t> projectedSavingBytes;
    std::optional<bool> fitsAfter; // known only when the capacity and the bands are known
    bool changesExperiment = false;

    std::string id() const { return std::string(fixId(kind)); }
};

// What the ranking step (core/diagnosis/ranking.h) weighs besides confidence: how fast the
// diagnosis' cause consumes memory and whether its first fix makes the whole run fit to the end
// of the phase that failed, not only the one request that failed.
struct RunOutlook
{
    uint64_t growthPerUnitBytes = 0; // what the cause adds per `unit`; 0 for a one-off
    std::string unit; // "step", "evaluation batch"
    // The first fix removes the growth itself (stops the leak, moves outputs off the GPU).
    bool leadingFixStopsGrowth = false;
    // The first fix frees only memory that comes back every step (activations, temporaries, cache);
    // it cannot shrink the state training keeps (weights, gradients, optimizer state).
    bool leadingFixFreesOnlyDynamic = false;
    // It raises what the process may hold (another process gone, a limit lifted) by unknown bytes.
    bool leadingFixRaisesCeiling = false;
    // The first fix makes a fixed amount usable once (split cache blocks recovered); it fits the
    // run only when that covers what the failing phase still has to allocate (RunFacts).
    std::optional<uint64_t> leadingFixFreesOnceBytes;
    // Those bytes stay free for the whole failing phase: memory that serves nobody in it leaves the
    // card (an idle inference engine put to sleep during the trainer's update), where a split cache
    // recovered once is split again by the phase's own allocations. Such a fix fits the run when it
    // covers what the phase still has to allocate, whatever makes the phase need it.
    bool leadingFixFreesForThePhase = false;
    std::optional<bool> leadingFixFitsRun; // set by the ranking step; nullopt when it cannot tell
    std::string rankReason; // the numbers that decided leadingFixFitsRun
};

struct Diagnosis
{
    DiagnosisId id = DiagnosisId::WorkingSet; // the catalogue's fallback until a rule names its cause
    std::string title;
    double confidence = 0.0; // 0..1, calibrated to how much evidence there is
    std::string summary; // one or two sentences in plain words
    std::vector<Evidence> evidence;
    std::vector<Fix> fixes; // ladder order
    std::optional<RunOutlook> outlook; // measured diagnoses only
};

} // namespace oomlens
