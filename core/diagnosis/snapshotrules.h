#pragma once

#include "core/diagnosis/snapshotevidence.h"

#include <vector>

// The snapshot's rules, one per cause (snapshot<cause>.cpp). Each reads the measured evidence and
// adds its diagnosis to out when the evidence supports it, with the numbers that decided it; which
// rules run, in which order, and how the candidates are then ranked is snapshotdiagnosis.cpp's.
namespace oomlens::snapshotrules {

void fragmentation(const SnapshotEvidence& e, std::vector<Diagnosis>& out);
// Also records an attention request as memory growing with seq² in e.fixes: the ladders of the
// rules after it project SDPA's saving from that.
void largeAllocation(SnapshotEvidence& e, std::vector<Diagnosis>& out);
void firstBackward(const SnapshotEvidence& e, std::vector<Diagnosis>& out);
// The state training keeps either exceeds what the process could hold (capacity) or fits and the
// optimizer's first step tipped it (optimizer_step2): one measurement decides between the two.
void capacityOrOptimizerStep2(const SnapshotEvidence& e, std::vector<Diagnosis>& out);
void longestBatch(const SnapshotEvidence& e, std::vector<Diagnosis>& out);
void evalAccumulation(const SnapshotEvidence& e, std::vector<Diagnosis>& out);
void leak(const SnapshotEvidence& e, std::vector<Diagnosis>& out);
// One tensor re-made larger every step (torch.cat on a queue never trimmed): a leak by size that
// the step-start comparison cannot see in a short trace. Adds a leak only where leak() found none.
void growingTensor(const SnapshotEvidence& e, std::vector<Diagnosis>& out);
void memoryFraction(const SnapshotEvidence& e, std::vector<Diagnosis>& out);
void otherProcess(const SnapshotEvidence& e, std::vector<Diagnosis>& out);
// What distributed training and CUDA graphs add (snapshotdistributed.cpp).
void pendingFrees(const SnapshotEvidence& e, std::vector<Diagnosis>& out);
void communicationBuffers(const SnapshotEvidence& e, std::vector<Diagnosis>& out);
void graphCapture(const SnapshotEvidence& e, std::vector<Diagnosis>& out);
void workingSet(const SnapshotEvidence& e, std::vector<Diagnosis>& out);
// A trainer and an inference engine (its KV cache, its weights) share the card: both sides'
// memory at the failure, and the fixes that move one of them out of the failing phase.
void colocatedEngine(const SnapshotEvidence& e, std::vector<Diagnosis>& out);

} // namespace oomlens::snapshotrules
