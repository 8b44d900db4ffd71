#include "core/analysis/phaseruns.h"

namespace oomlens {

void buildPhaseRuns(DeviceAnalysis& device)
{
    device.phaseRuns.clear();
    device.stepStarts.clear();
    int32_t currentStep = -1;
    for (const PhaseSpan& span : device.phaseSpans) {
        // A step change splits a span but not a run; an Unknown span ends the run before it.
        if (span.phase != Phase::Unknown) {
            if (!device.phaseRuns.empty() && device.phaseRuns.back().phase == span.phase
                && device.phaseRuns.back().lastEvent == span.firstEvent - 1)
                device.phaseRuns.back().lastEvent = span.lastEvent;
            else
                device.phaseRuns.push_back({ span.firstEvent, span.lastEvent, span.phase });
        }
        // Events of no known step keep the step before them current.
        if (span.step >= 0 && span.step != currentStep) {
            currentStep = span.step;
            device.stepStarts.push_back({ span.firstEvent, span.step });
        }
    }
}

} // namespace oomlens
