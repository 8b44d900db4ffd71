#pragma once

#include "core/analysis/snapshotanalysis.h"
#include "core/diagnosis.h"
#include "core/diagnosis/distributedevidence.h"
#include "core/diagnosis/fixladder.h"
#include "core/diagnosis/snapshotdiagnosis.h"
#include "core/diagnosis/stepprofile.h"
#include "core/diagnosis/trainingstate.h"
#include "core/units.h"

#include <optional>
#include <string>
#include <vector>

namespace oomlens {

// What every snapshot rule reads about one device's failure, measured once: the allocator's state
// at the oom event, the step profile, the card's size where something tells it, the state
// training keeps, and the fix context the rules' ladders are built from.
struct SnapshotEvidence
{
    SnapshotEvidence(const SnapshotAnalysis& analysis, const DeviceAnalysis& device, const OomAnalysis& oom,
        const SnapshotDiagnosisContext& context);

    const SnapshotAnalysis& analysis;
    const DeviceAnalysis& device;
    OomAnalysis oom;
    const SnapshotDiagnosisContext& context;
    DeviceProfile profile;
    FixContext fixes;
    std::optional<uint64_t> capacity;
    std::optional<uint64_t> cardTotal; // from the message, nvidia-smi or a capture sidecar
    std::string cardSource;
    bool implausiblySmall = false; // card unknown, and the process could hold less than any training GPU leaves
    // A per-process limit (set_per_process_memory_fraction) bounds what this process could hold
    // below its reserve plus the card's free memory: exact from the message's "allowed", else
    // bounded from above by the snapshot alone (see limitRefusedSegment). nullopt: no limit shown.
    std::optional<uint64_t> processLimit;
    bool processLimitExact = false; // from the message; else an upper bound
    // How fixes.budget.usableBytes was found, for evidence lines: "4.56 GiB reserved + 73.89 GiB free
    // on the card", "the 5.01 GiB limit the OOM message states".
    std::string usableText;
    TrainingState state;
    // Pending frees, the communication band, checkpointing, graphs' pools, other streams' cache.
    DistributedEvidence distributed;
    // Optimizer state that a step completed before the trace began created (earlierstep.h): the
    // trace's first step is not the run's. 0 when nothing shows one.
    uint64_t earlierStepStateBytes = 0;

    bool isTrainingRun() const;
    // The segment the allocator had to reserve for the failing request: 2 MiB for small requests,
    // 20 MiB for 1-10 MiB ones, the request rounded up to 2 MiB above that.
    uint64_t requestSegmentBytes() const;
    // The driver reported room for that segment (with a margin for a concurrent allocation), yet
    // the allocator refused it: only a per-process limit does that. The limit is then below
    // reserved + segment, since the allocator had already released its unused cache.
    bool limitRefusedSegment() const;
    // The first step that trains (step 0 is often a warm-up or a dataloader probe).
    int32_t firstTrainingStep() const;
    // A training step (with a backward) that completed before the failing one: proof that the
    // work fit once under the same limits. Null when the run failed in its first step.
    const StepProfile* completedStepBeforeFailure() const;

    // An evidence line on d, linked to a trace event when one is given.
    void evidence(Diagnosis& d, std::string text, int64_t event = -1) const;
    EvidenceLink link(int64_t event) const;
    std::string where() const; // "backward of step 3"
    std::string bandsText() const; // the live bands at the failure, largest first

    // What this process would gain if the memory held outside it came back: with the card's size
    // known, what neither its cache nor the free memory account for, less a CUDA context; with the
    // card unknown and the process holding implausibly little, at least what the smallest training
    // GPU would leave it. nullopt when nothing shows memory held outside.
    std::optional<uint64_t> heldOutsideBytes() const;

    bool isQuadraticStack(StackId stack) const;
    uint64_t quadraticBytesAtOom() const;

private:
    void projectState();
    void countGpus();
};

// A process that could hold less than this is not the whole of a training GPU: the smallest cards
// PyTorch still supports have 2 GiB, and a CUDA context takes a few hundred MiB of that.
inline constexpr uint64_t smallestPlausibleProcessBytes = GiB;

inline uint64_t band(const CategoryBytes& bands, Category category)
{
    return bands[static_cast<size_t>(category)];
}

uint64_t median(std::vector<uint64_t> values);
std::string times(double factor); // "2.5x"
// The outlook of a cause whose fixes shrink only what comes and goes with the batch.
RunOutlook dynamicOutlook();

} // namespace oomlens
