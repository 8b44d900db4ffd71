#pragma once

#include "core/planner/gpucards.h"
#include "core/planner/memoryplan.h"
#include "core/planner/plancalibration.h"
#include "core/planner/planladder.h"
#include "core/planner/servingplan.h"

#include <optional>
#include <vector>

namespace oomlens::planner {

struct CardFit
{
    GpuCard card;
    bool fits = false;
    int maxMicroBatch = -1; // -1: activations not modelled
};

// Everything `oomlens plan` and the What-if view show for one model and set-up: the formula,
// and with a measured run its calibration and the projections built on it.
struct PlanResult
{
    ModelSpec model;
    TrainingSetup setup;
    std::string setupProblem; // non-empty: nothing else is filled
    MemoryPlan formula;
    std::optional<PlanCalibration> calibration;
    MemoryPlan shown; // the projection from the measurement when calibrated, else the formula
    std::optional<GpuCard> card;
    std::optional<bool> fits; // against `card`
    // A paged optimizer that does not fit resident: does the rest fit once its state is paged
    // out to host memory? Unset without a card or without paged state.
    std::optional<bool> fitsWithPaging;
    int maxMicroBatch = -1; // against `card`; -1 without a card or without activations
    int maxSequence = -1;
    std::vector<CardFit> cards; // the common cards, smallest first
    std::vector<LadderRung> ladder; // when it does not fit `card`
    std::optional<ServingFit> serving; // --inference against `card`: vLLM's budget and the KV tokens that fit

    // The same pricing the result was built with (projected when calibrated).
    PlanTotal total() const;
};

// The bytes a plan may use on a card: all of it for training, vLLM's gpu_memory_utilization of it when serving.
uint64_t usableBytes(const TrainingSetup& setup, uint64_t capacityBytes);

// `measured`: the device of a snapshot taken from a run of exactly this set-up.
PlanResult makePlan(const ModelSpec& model, const TrainingSetup& setup, const std::optional<GpuCard>& card,
    const DeviceAnalysis* measured = nullptr);
// A what-if of a measured run: `calibration` was made against the run's own set-up, and
// everything here (bands, fit, largest micro-batch, ladder) is projected from it.
PlanResult makeProjectedPlan(const ModelSpec& model, const TrainingSetup& setup, const std::optional<GpuCard>& card,
    const std::optional<PlanCalibration>& calibration);

} // namespace oomlens::planner
