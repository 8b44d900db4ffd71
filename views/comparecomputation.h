#pragma once

#include "core/compare/comparison.h"
#include "opening/analyzedcase.h"

#include <QString>

#include <memory>

namespace oomlens {

// One snapshot of an open case, as the Compare view's pickers list it.
struct CompareCandidate
{
    QString label; // the case's tab title, with the snapshot's number when the case has several
    AnalyzedCasePtr loaded;
    int snapshotIndex = 0; // into loaded->analysis.snapshots
    const SnapshotAnalysis* analysis() const
    {
        return loaded && snapshotIndex >= 0 && size_t(snapshotIndex) < loaded->analysis.snapshots.size()
            ? &loaded->analysis.snapshots[size_t(snapshotIndex)]
            : nullptr;
    }
};

// What the user picked: two snapshots, or two step windows of the first one.
struct CompareRequest
{
    CompareCandidate a;
    CompareCandidate b; // ignored when comparing windows
    bool windows = false;
    StepWindow first;
    StepWindow second;
};

// A comparison ready to show: core's Comparison, the time-normalised overlay for the axis toggle,
// and the case whose report carries the comparison section (B's, or the one run's).
struct ComputedComparison
{
    std::shared_ptr<const Comparison> comparison; // null when `problem` says why not
    ComparisonTimeline timeNormalised;
    AnalyzedCasePtr reportCase;
    QString problem;
};

// Synchronous; the Compare view runs it on the thread pool (a big pair takes a moment).
ComputedComparison computeComparison(const CompareRequest& request);

} // namespace oomlens
