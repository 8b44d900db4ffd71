#pragma once

#include "core/phase.h"

#include <cstddef>
#include <cstdint>
#include <optional>

namespace oomlens {

// Where the frames of one call stack show each kind of work, as depths counted from the innermost
// frame (0). A snapshot's stack (StackFeatures) and a traceback's frames (decideTracebackPhase) are
// each read into these clues with the shared frame vocabulary (framewords.h), and rankPhase decides
// from them for both, so the same stack names the same phase whichever way it was recorded.
struct PhaseClues
{
    static constexpr size_t absent = SIZE_MAX;

    // What ran: the innermost frame of each kind of work.
    size_t backward = absent; // the autograd engine (Tensor.backward, its nodes, checkpoint recomputation)
    size_t optimizer = absent; // an optimizer's step, state creation, zero_grad, gradient clipping
    size_t load = absent; // loading or placing the weights (torch.load, load_state_dict, Module.to)
    size_t data = absent; // input data (torch.utils.data, collate, pin_memory, the user's batch builder)
    size_t forward = absent; // a module call or a forward

    // The innermost frame that puts the work inside it under evaluation: an evaluation loop or entry
    // point, a no-grad wrapper around the user's code. Which frames count is the reader's to say.
    size_t evaluation = absent;

    // Clues that name a phase only where none of the above decides, innermost first: a constructor or
    // a `with torch.device(...)` block (loading), a tensor copied to the device (data), a model
    // library's layer (forward).
    size_t weakLoad = absent;
    size_t weakData = absent;
    size_t weakForward = absent;

    // DeepSpeed ZeRO's initialize_optimizer_states anywhere in the stack: the engine being built.
    size_t optimizerSetup = absent;
    // A stage that names everything inside it but the training update's own backward and optimizer
    // step: an RL iteration's stage, an inference engine's work (snapshots only; tracebacks have none).
    std::optional<Phase> stage;
};

// The phase and the depth of the frame that decided it (PhaseClues::absent for a stage).
struct RankedPhase
{
    Phase phase = Phase::Unknown;
    size_t depth = PhaseClues::absent;
};

// The physical order of the phases, read from how PyTorch's stacks nest. The innermost kind of work
// is what was running (a DataLoader inside the training step's forward is loading data, a forward
// inside optimizer.step(closure) is the closure's forward, an optimizer step run from a gradient
// hook inside backward is the optimizer's), except that backward owns a forward inside it
// (activation checkpointing re-running the forward). Evaluation is a mode, not work of its own: it
// makes a forward inside it (or nothing) evaluation, but not a load, a data fetch or a backward, and
// not a closure's forward when the optimizer step sits between. Unknown where nothing decides.
RankedPhase rankPhase(const PhaseClues& clues);

} // namespace oomlens
