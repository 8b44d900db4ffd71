#include "core/planner/planresult.h"

#include <algorithm>
#include <limits>

namespace oomlens::planner {

PlanTotal PlanResult::total() const
{
    if (!calibration)
        return formulaTotal(model);
    return [model = model, calibration = *calibration](const TrainingSetup& whatIf) {
        return projectFromMeasurement(calibration, planMemory(model, whatIf)).totalPerGpu;
    };
}

uint64_t usableBytes(const TrainingSetup& setup, uint64_t capacityBytes)
{
    if (!setup.inference)
        return capacityBytes;
    return static_cast<uint64_t>(static_cast<double>(capacityBytes) * setup.gpuMemoryUtilization);
}

namespace {

int clampToInt(uint64_t value)
{
    return static_cast<int>(std::min<uint64_t>(value, static_cast<uint64_t>(std::numeric_limits<int>::max())));
}

} // namespace

PlanResult makePlan(const ModelSpec& model, const TrainingSetup& setup, const std::optional<GpuCard>& card,
    const DeviceAnalysis* measured)
{
    std::optional<PlanCalibration> calibration;
    if (measured && setupProblem(setup).empty())
        calibration = calibratePlan(planMemory(model, setup), *measured);
    return makeProjectedPlan(model, setup, card, calibration);
}

PlanResult makeProjectedPlan(const ModelSpec& model, const TrainingSetup& setup, const std::optional<GpuCard>& card,
    const std::optional<PlanCalibration>& calibration)
{
    PlanResult result;
    result.model = model;
    result.setup = setup;
    result.card = card;
    result.setupProblem = setupProblem(setup);
    if (!result.setupProblem.empty())
        return result;
    result.formula = planMemory(model, setup);
    result.shown = result.formula;
    result.calibration = calibration;
    if (calibration)
        result.shown = projectFromMeasurement(*calibration, result.formula);
    const PlanTotal total = result.total();
    if (setup.inference) {
        // Serving: the KV cache that fits decides the batch and the context, exactly.
        for (const GpuCard& common : commonCards()) {
            const ServingFit fit = fitServing(result.shown, setup, common.capacityBytes);
            result.cards.push_back({ common, fit.fits, model.hasDimensions() ? clampToInt(fit.maxSequences) : -1 });
        }
        if (card) {
            result.serving = fitServing(result.shown, setup, card->capacityBytes);
            result.fits = result.serving->fits;
            if (model.hasDimensions()) {
                result.maxMicroBatch = clampToInt(result.serving->maxSequences);
                result.maxSequence = clampToInt(result.serving->maxContext);
            }
            result.ladder = climbLadder(model, setup, usableBytes(setup, card->capacityBytes), total);
        }
        return result;
    }
    for (const GpuCard& common : commonCards()) {
        CardFit fit { common, result.shown.totalPerGpu <= common.capacityBytes, -1 };
        fit.maxMicroBatch = maxMicroBatch(model, setup, common.capacityBytes, total);
        result.cards.push_back(fit);
    }
    if (card) {
        result.fits = result.shown.totalPerGpu <= card->capacityBytes;
        if (result.shown.pageableBytes > 0)
            result.fitsWithPaging = result.shown.totalPerGpu - result.shown.pageableBytes <= card->capacityBytes;
        result.maxMicroBatch = maxMicroBatch(model, setup, card->capacityBytes, total);
        result.maxSequence = maxSequence(model, setup, card->capacityBytes, total);
        result.ladder = climbLadder(model, setup, card->capacityBytes, total);
    }
    return result;
}

} // namespace oomlens::planner
