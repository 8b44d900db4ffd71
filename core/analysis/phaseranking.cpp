#include "core/analysis/phaseranking.h"

#include <initializer_list>

namespace oomlens {

namespace {

struct Candidate
{
    size_t depth;
    Phase phase;
};

// The innermost of the candidates; within one frame the earlier in the list wins.
RankedPhase innermost(std::initializer_list<Candidate> candidates)
{
    RankedPhase best;
    for (const Candidate& candidate : candidates) {
        if (candidate.depth < best.depth)
            best = { candidate.phase, candidate.depth };
    }
    return best;
}

} // namespace

RankedPhase rankPhase(const PhaseClues& at)
{
    // The optimizer step a framework takes while it is being built creates state and trains
    // nothing: loading, whatever runs inside it.
    if (at.optimizerSetup != PhaseClues::absent)
        return { Phase::Load, at.optimizerSetup };
    // Within one frame the stronger signature first: the engine, the step, the weights, the batch.
    RankedPhase work = innermost({ { at.backward, Phase::Backward }, { at.optimizer, Phase::Optimizer },
        { at.load, Phase::Load }, { at.data, Phase::Data }, { at.forward, Phase::Forward } });
    // Backward re-runs a checkpointed forward inside itself; a forward that calls the engine
    // (torch.autograd.grad) has the backward inside it. Either way the engine is running.
    if (work.phase == Phase::Forward && at.backward != PhaseClues::absent)
        work = { Phase::Backward, at.backward };
    if (work.phase == Phase::Backward || work.phase == Phase::Optimizer)
        return work;
    if (at.stage)
        return { *at.stage, PhaseClues::absent };
    // An optimizer frame outside the forward is a closure's step (optimizer.step(closure)), which
    // runs its forward with grad enabled: evaluation outside the step says nothing about it.
    const bool evaluates
        = at.evaluation != PhaseClues::absent && (at.optimizer == PhaseClues::absent || at.evaluation < at.optimizer);
    if (evaluates && (work.phase == Phase::Forward || work.phase == Phase::Unknown))
        return { Phase::Eval, at.evaluation };
    if (work.phase != Phase::Unknown)
        return work;
    return innermost(
        { { at.weakLoad, Phase::Load }, { at.weakData, Phase::Data }, { at.weakForward, Phase::Forward } });
}

} // namespace oomlens
