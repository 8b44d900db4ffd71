#include "views/comparecomputation.h"

#include "core/compare/timenormalisedoverlay.h"

namespace oomlens {

namespace {

// The file a candidate's snapshot came from, for the side's `source`.
std::string sourceOf(const CompareCandidate& candidate)
{
    if (!candidate.loaded)
        return {};
    for (const CaseInput& input : candidate.loaded->input.inputs) {
        if (input.snapshotIndex == candidate.snapshotIndex)
            return input.path;
    }
    return {};
}

} // namespace

ComputedComparison computeComparison(const CompareRequest& request)
{
    ComputedComparison computed;
    const SnapshotAnalysis* a = request.a.analysis();
    const SnapshotAnalysis* b = request.windows ? a : request.b.analysis();
    if (!a || !b || !a->primary() || !b->primary()) {
        computed.problem = QStringLiteral("Pick two snapshots to compare.");
        return computed;
    }
    CompareOptions options;
    options.sourceA = sourceOf(request.a);
    options.sourceB = request.windows ? options.sourceA : sourceOf(request.b);
    Comparison comparison;
    if (request.windows) {
        for (const StepWindow& window : { request.first, request.second }) {
            // The spin boxes can cross while the user types; say so rather than compare nothing.
            const std::string problem = window.firstStep > window.lastStep ? "its first step comes after its last"
                                                                           : windowProblem(*a->primary(), window);
            if (!problem.empty()) {
                computed.problem = QStringLiteral("Steps %1–%2 cannot be compared: %3")
                                       .arg(window.firstStep)
                                       .arg(window.lastStep)
                                       .arg(QString::fromStdString(problem));
                return computed;
            }
        }
        comparison = compareWindows(*a, request.first, request.second, options);
        computed.reportCase = request.a.loaded;
    } else {
        options.labelA = "A";
        options.labelB = "B";
        comparison = compareSnapshots(*a, *b, options);
        computed.reportCase = request.b.loaded;
    }
    const DeviceAnalysis* deviceA = a->device(comparison.a.device);
    const DeviceAnalysis* deviceB = b->device(comparison.b.device);
    if (deviceA && deviceB)
        computed.timeNormalised = timeNormalisedOverlay(comparison, *deviceA, *deviceB);
    computed.comparison = std::make_shared<const Comparison>(std::move(comparison));
    return computed;
}

} // namespace oomlens
