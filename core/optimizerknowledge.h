#pragma once

#include <string_view>

namespace oomlens {

// What an optimizer keeps per trainable parameter: facts only. The snapshot diagnosis, the text
// diagnosis and the planner each decide for themselves what to count when the input does not say
// (SGD's momentum, a factored second moment), so their policies stay with them.

// How wide one state tensor is for each parameter.
enum class MomentWidth {
    Parameter, // the parameter's dtype (torch allocates zeros_like(p)), fp32 when a master copy is stepped
    OneByte, // bitsandbytes' 8-bit state (its small block-wise constants not counted)
    Factored, // Adafactor: an r x c matrix keeps r + c fp32 numbers, no first moment
};

struct OptimizerFacts
{
    // The log's and the planner's spelling ("adamw", "adamw-8bit"); for torch.optim's own classes
    // also the module, torch/optim/<key>.py.
    std::string_view key;
    // torch's class name, which its Optimizer.step#<label>.step annotation carries; how people
    // write the others ("8-bit AdamW").
    std::string_view label;
    bool inTorchOptim;
    int moments; // state tensors per parameter in the smallest configuration (no AMSGrad, no centered RMSprop)
    MomentWidth width;
    bool momentumOnly; // SGD: its one buffer exists only when momentum > 0 (off by default)
};

// The optimizer spelt `key` ("adamw", "lion"), or nullptr.
const OptimizerFacts* optimizerNamed(std::string_view key);

// One of torch.optim's classes by its class name ("SGD") or its module ("sgd"), or nullptr.
const OptimizerFacts* torchOptimizer(std::string_view classOrModule);

// Bytes of state per parameter for `moments` tensors of the optimizer's width; `parameterBytes` is
// the width a Parameter-wide moment takes. A factored moment costs 8/side bytes per parameter of
// side x side matrices (2·side fp32 numbers for side² parameters).
double stateBytesPerParameter(const OptimizerFacts& facts, int moments, double parameterBytes, int matrixSide);

// The fp32 copy of 16-bit weights a mixed-precision optimizer steps (DeepSpeed fp16/bf16, apex O2).
constexpr int masterWeightBytes = 4;

// How an implementation variant changes the state's cost on the GPU, not its size.
struct OptimizerVariantFacts
{
    std::string_view key; // "foreach", "fused", "paged", "offload"
    // torch's foreach step makes one parameter-sized intermediate for the whole group (the square
    // root of the second moment); fused kernels and bitsandbytes update in place.
    bool stepIntermediate;
    bool stateOnHost; // the state lives in host memory (DeepSpeed's CPU Adam, offload_optimizer)
};

// The variant spelt `key`, or nullptr. Paged state (bitsandbytes) sits in unified memory and is
// evicted to the host only under pressure: it counts on the GPU.
const OptimizerVariantFacts* optimizerVariantNamed(std::string_view key);

} // namespace oomlens
