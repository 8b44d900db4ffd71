#include "core/planner/plancalibration.h"

#include "core/units.h"

#include <cmath>
#include <cstdio>

namespace oomlens::planner {

namespace {

uint64_t category(const CategoryBytes& bytes, Category which)
{
    return bytes[static_cast<size_t>(which)];
}

// The formula's bands at the phase the measured peak fell in: a snapshot that peaked in the
// optimizer step has no activations to compare with.
const BandBytes& formulaBandsFor(const MemoryPlan& plan, const DeviceAnalysis& measured)
{
    Phase phase = Phase::Unknown;
    if (measured.peakEvent >= 0 && static_cast<size_t>(measured.peakEvent) < measured.eventPhase.size())
        phase = measured.eventPhase[static_cast<size_t>(measured.peakEvent)];
    if (phase == Phase::Optimizer)
        return plan.byPhase[static_cast<size_t>(PeakPhase::OptimizerStep)];
    if (phase == Phase::Forward)
        return plan.byPhase[static_cast<size_t>(PeakPhase::Forward)];
    if (phase == Phase::Backward)
        return plan.byPhase[static_cast<size_t>(PeakPhase::Backward)];
    return plan.perGpu;
}

} // namespace

BandBytes measuredBands(const DeviceAnalysis& device)
{
    const CategoryBytes& peak = device.categoriesAtPeak;
    BandBytes bands {};
    bands[static_cast<size_t>(Band::Parameters)] = category(peak, Category::Parameters);
    bands[static_cast<size_t>(Band::Gradients)] = category(peak, Category::Gradients);
    bands[static_cast<size_t>(Band::OptimizerState)] = category(peak, Category::OptimizerState);
    bands[static_cast<size_t>(Band::Activations)]
        = category(peak, Category::Activations) + category(peak, Category::Inputs);
    // Communication buffers (NCCL's, the gradient buckets') are transient from the planner's side.
    bands[static_cast<size_t>(Band::Temporaries)] = category(peak, Category::Temporaries)
        + category(peak, Category::Unknown) + category(peak, Category::Communication);
    bands[static_cast<size_t>(Band::KvCache)] = category(peak, Category::KvCache);
    const uint64_t slack = device.peakReservedBytes > device.peakAllocatedBytes
        ? device.peakReservedBytes - device.peakAllocatedBytes
        : 0;
    bands[static_cast<size_t>(Band::Overhead)] = slack + cudaContextBytes;
    return bands;
}

PlanCalibration calibratePlan(const MemoryPlan& formulaForRun, const DeviceAnalysis& measured)
{
    PlanCalibration calibration;
    calibration.measuredPeakBytes = measured.peakAllocatedBytes;
    calibration.measuredReservedBytes = measured.peakReservedBytes;
    const BandBytes& formula = formulaBandsFor(formulaForRun, measured);
    const BandBytes observed = measuredBands(measured);
    for (size_t i = 0; i < bandCount; ++i) {
        BandCalibration& band = calibration.bands[i];
        band.formula = formula[i];
        band.measured = observed[i];
        band.ratio = band.formula > 0 ? static_cast<double>(band.measured) / static_cast<double>(band.formula) : 0.0;
    }
    // Say it for the band that differs most in bytes, activations first when they were measured:
    // they are the part of the formula with the most assumptions.
    Band lead = Band::Activations;
    if (calibration.band(Band::Activations).measured == 0) {
        uint64_t widest = 0;
        for (size_t i = 0; i < static_cast<size_t>(Band::Overhead); ++i) {
            const BandCalibration& band = calibration.bands[i];
            const uint64_t gap
                = band.measured > band.formula ? band.measured - band.formula : band.formula - band.measured;
            if (band.measured > 0 && gap >= widest) {
                widest = gap;
                lead = static_cast<Band>(i);
            }
        }
    }
    const BandCalibration& shown = calibration.band(lead);
    std::string name(bandName(lead));
    for (char& c : name) {
        if (c == '_')
            c = ' ';
    }
    if (shown.measured == 0 && shown.formula == 0) {
        calibration.summary = "the snapshot shows no categorized memory at its peak to compare with";
    } else {
        calibration.summary = "the formula says " + formatBytes(shown.formula) + " of " + name + "; this run measured "
            + formatBytes(shown.measured) + (shown.ratio > 0 ? " (" + formatRatio(shown.ratio) + ")" : std::string());
    }
    return calibration;
}

std::string modelMismatch(const MemoryPlan& formulaForRun, const DeviceAnalysis& measured)
{
    // Storage per parameter: 4-bit weights (0.5 bytes) to fp32 master weights and a 16-bit copy (6).
    constexpr double widestOverNarrowest = 6.0 / 0.5;
    const uint64_t held = category(measured.categoriesAtPeak, Category::Parameters);
    const uint64_t formula = formulaForRun.perGpu[static_cast<size_t>(Band::Parameters)];
    if (held == 0 || formula == 0)
        return {};
    const double ratio = static_cast<double>(held) / static_cast<double>(formula);
    if (ratio <= widestOverNarrowest && ratio >= 1.0 / widestOverNarrowest)
        return {};
    return "at these settings the formula gives it " + formatBytes(formula) + " of parameters per GPU; the run held "
        + formatBytes(held) + " (" + formatRatio(ratio)
        + "), more than any precision explains (0.5 to 6 bytes a parameter), so it is not the run's model";
}

MemoryPlan projectFromMeasurement(const PlanCalibration& calibration, const MemoryPlan& formulaWhatIf)
{
    MemoryPlan projected = formulaWhatIf;
    BandBytes bands {};
    for (size_t i = 0; i < static_cast<size_t>(Band::Overhead); ++i) {
        const BandCalibration& band = calibration.bands[i];
        const uint64_t whatIf = formulaWhatIf.perGpu[i];
        if (band.measured > 0 && band.formula > 0) {
            const double scale = static_cast<double>(whatIf) / static_cast<double>(band.formula);
            bands[i] = static_cast<uint64_t>(std::llround(static_cast<double>(band.measured) * scale));
        } else if (band.formula == 0 && whatIf == 0) {
            bands[i] = band.measured;
        } else {
            bands[i] = whatIf;
        }
    }
    // The measured slack keeps its share of the tensors.
    const uint64_t measuredTensors = calibration.measuredPeakBytes;
    const BandCalibration& overhead = calibration.band(Band::Overhead);
    const uint64_t slack = overhead.measured > cudaContextBytes ? overhead.measured - cudaContextBytes : 0;
    const uint64_t tensors = bandTotal(bands);
    bands[static_cast<size_t>(Band::Overhead)] = measuredTensors > 0
        ? cudaContextBytes
            + static_cast<uint64_t>(
                static_cast<double>(slack) * static_cast<double>(tensors) / static_cast<double>(measuredTensors))
        : formulaWhatIf.perGpu[static_cast<size_t>(Band::Overhead)];
    projected.perGpu = bands;
    projected.totalPerGpu = bandTotal(bands);
    return projected;
}

} // namespace oomlens::planner
