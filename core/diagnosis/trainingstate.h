#pragma once

#include "core/analysis/snapshotanalysis.h"
#include "core/textinputs.h"

#include <cstdint>
#include <string>

namespace oomlens {

// How wide the model's weights are, as far as the snapshot's frames tell.
enum class WeightPrecision { Unknown, Full, Half };

struct PrecisionEvidence
{
    WeightPrecision precision = WeightPrecision::Unknown;
    std::string evidence; // "the weights were made by Module.half()", empty when unknown
};

// Reads the precision of the weights from the frames that made them (Module.half()/.bfloat16(),
// a bf16/fp16 conversion) and from autocast in the forward pass, which casts fp32 weights.
PrecisionEvidence weightPrecision(const Snapshot& snapshot, const DeviceAnalysis& device);

// The optimizer a run steps with, as far as the snapshot tells: the Optimizer.step#Name.step
// annotation PyTorch records, else the torch/optim/<name>.py frames of the optimizer phase. What
// matters is how many tensors of its parameter's size it keeps per trainable parameter: Adam and
// its kin two moments, SGD one momentum buffer (none without momentum), Adagrad and RMSprop one.
struct OptimizerKind
{
    std::string name; // "AdamW", "SGD"; empty when unknown (projected as Adam, the common case)
    int stateTensors = 2; // per trainable parameter, each the parameter's size
    std::string evidence; // "the Optimizer.step#SGD.step annotation"
    bool momentumOnlyIfSeen = false; // SGD: a momentum buffer exists only when momentum > 0
};

OptimizerKind optimizerKind(const Snapshot& snapshot, const DeviceAnalysis& device);

// SGD keeps a momentum buffer only when momentum is set, and makes it at the first step as a copy of
// the gradient (`torch.clone(grad)` in _single_tensor_sgd, `device_grads[i].detach().clone()` in
// _multi_tensor_sgd, `empty_like` for the fused path). A failure on that line of torch/optim/sgd.py
// is the buffer being made: momentum is on, before any buffer exists for the snapshot to show.
// Marks `kind` as keeping its buffer, with the line as evidence; false when the frame is not that.
bool noteMomentumBeingCreated(OptimizerKind& kind, const TracebackFrame& failingFrame);

// The failing frame is torch/optim's update math (_multi_tensor_adam, _single_tensor_sgd,
// _fused_adamw) on a line that reads the state rather than makes it: PyTorch creates the state in
// _init_group before the update runs, so there the state exists and what failed is the update's own
// temporaries (`torch._foreach_sqrt(device_exp_avg_sqs)` copies every second moment at once).
bool updateReadsExistingState(const TracebackFrame& failingFrame);

// The weights' precision as the optimizer's state shows it, when it has begun to create it (up to
// untilEvent): state tensors are made like their parameter (zeros_like), so a state tensor twice
// the size of a weight tensor, and never the size of one, is fp32 state beside 16-bit weights:
// the optimizer steps an fp32 master copy. Unknown when no state was created or the sizes do not tell.
PrecisionEvidence precisionFromStateSizes(const DeviceAnalysis& device, int64_t untilEvent);

// The state training keeps whatever the batch (seed 000): the weights, their gradients, Adam's two
// moments and, when the weights are 16-bit, the fp32 master copy the optimizer updates. Measured
// where a full step has already built it, projected from the weights where the failure came first
// (the first backward, the first optimizer.step()). Bytes per parameter:
//     fp32 weights:                      4 weights + 4 gradients + 8 moments           = 16 (4x the weights)
//     16-bit weights, fp32 master/Adam:  2 weights + 2 gradients + 4 master + 8 moments = 16 (8x the weights)
// When the frames do not tell the precision the smaller projection (fp32) is used, so that a
// claim that the state cannot fit never rests on an assumption; the other figure is reported.
struct TrainingState
{
    uint64_t parameters = 0;
    uint64_t gradients = 0;
    uint64_t optimizerState = 0;
    uint64_t masterWeights = 0;
    bool gradientsProjected = false;
    bool optimizerProjected = false;
    PrecisionEvidence precision;
    OptimizerKind optimizer;
    int projectedStateTensors = 2; // per parameter, where the optimizer state was projected
    uint64_t ifHalfBytes = 0; // the total with 16-bit weights and fp32 master weights, when precision is unknown

    uint64_t measuredOptimizerState = 0; // what the optimizer had created at the failure
    uint64_t total() const { return parameters + gradients + optimizerState + masterWeights; }
    // Whether the optimizer's state is projected for an optimizer the run has not reached: no step
    // annotation or torch/optim frame names it, so Adam's two moments (and the fp32 master copy of
    // 16-bit weights) are a guess about code that has not run. Frozen weights (LoRA, a frozen
    // backbone) or a lighter optimizer make the real state smaller.
    bool optimizerUnseen() const { return optimizerProjected && optimizer.name.empty(); }
    // The state without that guess: the weights, every parameter's gradient and what the optimizer
    // had created. A claim that the state cannot fit is sound on this figure; on total() alone
    // it rests on the guess.
    uint64_t withoutUnseenOptimizer() const
    {
        return optimizerUnseen() ? parameters + gradients + measuredOptimizerState : total();
    }
    bool projected() const { return gradientsProjected || optimizerProjected; }
    // "parameters 2.00 GiB + gradients 2.00 GiB (projected) + Adam moments 4.00 GiB (projected) = 8.00 GiB"
    std::string text() const;
    // "Adam's two moments", "SGD's momentum buffer per parameter, from the ... annotation"
    std::string optimizerStateName() const;
    // Why the projection looks the way it does: precision evidence or the assumption made.
    std::string assumption() const;
};

struct TrainingStateInputs
{
    CategoryBytes live {}; // at the failure
    CategoryBytes peakSeen {}; // per-band maxima before the failure
    bool backwardCompleted = false; // a full backward ran before the failure: gradients were measured
    bool optimizerStateBuilt = false; // an optimizer.step() finished: its state was measured
};

TrainingState projectTrainingState(
    const TrainingStateInputs& inputs, const PrecisionEvidence& precision, const OptimizerKind& optimizer = {});

} // namespace oomlens
