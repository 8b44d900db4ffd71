#pragma once

#include <cstdint>
#include <string_view>

namespace oomlens {

// Where in a training program an allocation or a failure happened.
// The string forms are part of the JSON contract (product.md §5): add, never rename.
// Rollout .. Reload came with wave 3 (issue 24): the stages of a reinforcement-learning iteration
// whose trainer shares the GPUs with an inference engine (core/analysis/enginestacks.h). The update
// itself stays Forward/Backward/Optimizer; Reference and Reward are the forward-only passes of the
// reference and reward models; Sleep/Wake release and map again pooled memory (vLLM sleep mode,
// torch_memory_saver pause/resume, SGLang release/resume_memory_occupation); Offload/Reload move
// the trainer's parameters or optimizer state to the host and back.
enum class Phase : uint8_t {
    Unknown,
    Load,
    Forward,
    Backward,
    Optimizer,
    Eval,
    Data,
    Rollout,
    Reference,
    Reward,
    WeightSync,
    Sleep,
    Wake,
    Offload,
    Reload
};
// Counted from the enum, so a phase added last cannot be left out of the tables sized by it.
constexpr int phaseCount = static_cast<int>(Phase::Reload) + 1;

// The stages only a colocated RL job (or an inference engine) has: not training's own phases.
constexpr bool isIterationPhase(Phase phase)
{
    return phase >= Phase::Rollout;
}

std::string_view phaseName(Phase phase);
Phase phaseFromName(std::string_view name);

// What an allocation is for. The string forms are the JSON keys of categories_at_peak.
// Communication (buffers that move data between ranks) and KvCache (an inference engine's
// key/value cache) came with wave 3 (product.md §3); Unknown stays last.
enum class Category : uint8_t {
    Parameters,
    Gradients,
    OptimizerState,
    Activations,
    Temporaries,
    Inputs,
    Communication,
    KvCache,
    Unknown
};
constexpr int categoryCount = static_cast<int>(Category::Unknown) + 1;

std::string_view categoryName(Category category);
Category categoryFromName(std::string_view name);

} // namespace oomlens
