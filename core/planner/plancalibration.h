#pragma once

#include "core/analysis/snapshotanalysis.h"
#include "core/planner/memoryplan.h"

#include <array>
#include <string>

namespace oomlens::planner {

// The formula against one measured run: a snapshot's categories at its peak, taken for the set-up
// the run used. Inputs count as activations and unknown as temporaries; the overhead is the
// allocator's measured slack (reserved - allocated at the peak) plus the planner's CUDA context,
// which no snapshot sees.
struct BandCalibration
{
    uint64_t formula = 0;
    uint64_t measured = 0;
    double ratio = 0; // measured / formula; 0 when the formula has nothing in this band
};

struct PlanCalibration
{
    std::array<BandCalibration, bandCount> bands {};
    uint64_t measuredPeakBytes = 0; // allocated at the peak
    uint64_t measuredReservedBytes = 0;
    std::string summary; // "the formula says 9.10 GiB of activations; this run measured 11.80 GiB (1.30x)"

    const BandCalibration& band(Band which) const { return bands[static_cast<size_t>(which)]; }
};

// The measured bands a snapshot gives, in the planner's bands.
BandBytes measuredBands(const DeviceAnalysis& device);

PlanCalibration calibratePlan(const MemoryPlan& formulaForRun, const DeviceAnalysis& measured);

// Why a model cannot be the measured run's, in words; empty when it can be or when the run shows
// no parameters. A parameter takes 0.5 bytes (4-bit weights) to 6 bytes (fp32 master weights
// beside a 16-bit working copy), so the parameters the formula gives this model at the run's
// set-up and those the run held cannot differ by more than 12x if it is the run's model (a
// wrong precision or sharding in the set-up stays inside that); beyond it, calibrating would
// scale every what-if by a ratio that measures the wrong model.
std::string modelMismatch(const MemoryPlan& formulaForRun, const DeviceAnalysis& measured);

// A what-if projected from the measurement: each band is the measured one scaled by what the
// formula says the change does to that band (measured x whatIf / run). Bands the run did not
// show, or that the formula had empty, take the formula's value; a band the formula has nothing
// for in the run nor in the what-if (activations of a model known only by its parameter count)
// keeps the measured bytes: nothing the formula knows changes it.
MemoryPlan projectFromMeasurement(const PlanCalibration& calibration, const MemoryPlan& formulaWhatIf);

} // namespace oomlens::planner
