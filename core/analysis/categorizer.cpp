#include "core/analysis/categorizer.h"

#include "core/analysis/distributedrules.h"
#include "core/analysis/enginecategories.h"

#include <algorithm>

#include <string>
#include <unordered_map>

namespace oomlens {

namespace {

class Reasons
{
public:
    explicit Reasons(std::vector<std::string>& storage)
        : m_storage(storage)
    {
        m_storage.clear();
        intern("no evidence");
    }
    uint16_t intern(const std::string& text)
    {
        auto it = m_index.find(text);
        if (it != m_index.end())
            return it->second;
        if (m_storage.size() >= UINT16_MAX)
            return 0;
        const auto id = static_cast<uint16_t>(m_storage.size());
        m_storage.push_back(text);
        m_index.emplace(text, id);
        return id;
    }

    // Built-in verdicts carry string literals: look them up by address, not by text, since
    // this runs once per allocation.
    uint16_t intern(const char* literal)
    {
        auto it = m_literals.find(literal);
        if (it == m_literals.end())
            it = m_literals.emplace(literal, intern(std::string(literal))).first;
        return it->second;
    }

private:
    std::vector<std::string>& m_storage;
    std::unordered_map<std::string, uint16_t> m_index;
    std::unordered_map<const char*, uint16_t> m_literals;
};

struct Verdict
{
    Category category;
    const char* reason;
};

// `freedByUnwinding`: freed after the device's last out-of-memory event, as the error unwound the
// failing step.
Verdict olderWithoutFrames(const Allocation& a, Phase freedIn, uint32_t freeFeatures, bool freedByUnwinding)
{
    if (a.freeEvent < 0)
        return { Category::Parameters,
            "older than the trace and never freed: persistent state, assumed parameters "
            "(no stack recorded; lower confidence)" };
    if (freedIn == Phase::Backward)
        return { Category::Activations,
            "older than the trace and freed in backward: a saved activation "
            "(no stack recorded; lower confidence)" };
    if (freeFeatures & FeatureZeroGrad)
        return { Category::Gradients,
            "older than the trace and freed by zero_grad "
            "(no stack recorded; lower confidence)" };
    // The exception drops the failing step's autograd graph and its frames' locals: what it frees
    // was held from before the trace to the failure, which in a step is what forward saved.
    if (freedByUnwinding)
        return { Category::Activations,
            "older than the trace and freed when the out-of-memory error unwound the failing step (its graph's saved "
            "tensors dropped): assumed activations (no stack recorded; lower confidence)" };
    return { Category::Unknown, "older than the trace, no stack recorded, lifetime not conclusive" };
}

// `caughtByFailure`: allocated in the phase run (the optimizer step, the forward...) an out-of-memory
// event interrupted, and still live then: whether it would have outlived the run is unknown.
Verdict byPhase(Phase born, uint32_t features, bool alive, bool sameRun, bool caughtByFailure, Phase freedIn)
{
    switch (born) {
    case Phase::Load:
        if (sameRun)
            return { Category::Temporaries, "allocated while loading the model and freed during loading" };
        if (features & FeatureOptimizerSetup)
            return { Category::OptimizerState,
                "optimizer state created when the engine was built (DeepSpeed's initialize_optimizer_states steps the "
                "optimizer once with zero gradients) and kept across steps" };
        return { Category::Parameters, "created by model loading (_apply/.to()/load_state_dict/module init) and kept" };
    case Phase::Optimizer:
        if (sameRun)
            return { Category::Temporaries, "scratch of the optimizer step, freed within it" };
        if (features & FeatureOptimizerInit)
            return { Category::OptimizerState, "optimizer state created by _init_group and kept across steps" };
        // The multi-tensor and fused paths compute the update for a whole parameter group at
        // once; their intermediates are freed before step() returns, so one still live when a
        // failure interrupted the step is an intermediate the step did not get to free.
        if ((features & FeatureOptimizerStepMath) && caughtByFailure)
            return { Category::Temporaries,
                "intermediate of the multi-tensor/fused update (_foreach_*), live only because the step did not "
                "finish" };
        // One that outlived a step that did finish is state the update creates itself rather than
        // in _init_group: SGD's momentum buffers start as clones of the first step's gradients.
        if (features & FeatureOptimizerStepMath)
            return { Category::OptimizerState,
                "created inside the multi-tensor/fused update (_foreach_*) and kept after its step returned "
                "(SGD's momentum buffers start as clones of the first gradients)" };
        return { Category::OptimizerState, "allocated in the optimizer step and kept beyond it" };
    case Phase::Backward:
        if (sameRun)
            return { Category::Temporaries, "backward scratch, freed within the backward pass" };
        return { Category::Gradients, "produced in backward and kept until the optimizer step or zero_grad" };
    case Phase::Forward:
        if (freedIn == Phase::Backward && !alive)
            return { Category::Activations, "saved in forward, freed in backward" };
        if (sameRun)
            return { Category::Temporaries, "freed within the forward pass that allocated it" };
        if (alive)
            return { Category::Activations, "produced in forward, still alive at the dump" };
        return { Category::Activations, "produced in forward and kept beyond it" };
    case Phase::Eval:
        if (sameRun)
            return { Category::Temporaries, "eval/no-grad scratch, freed within the pass" };
        return { Category::Activations, "eval/no-grad output kept beyond its pass" };
    case Phase::Data:
        if (sameRun)
            return { Category::Temporaries, "freed while preparing the batch" };
        return { Category::Inputs, "batch data moved to the device" };
    case Phase::Rollout:
    case Phase::Reference:
    case Phase::Reward:
    case Phase::WeightSync:
    case Phase::Sleep:
    case Phase::Wake:
    case Phase::Offload:
    case Phase::Reload: {
        const CategoryVerdict v = iterationVerdict(born, features, sameRun, caughtByFailure);
        return { v.category, v.reason };
    }
    case Phase::Unknown:
        break;
    }
    return { Category::Unknown, "no phase evidence in its stack" };
}

} // namespace

void categorize(const Snapshot& snapshot, StackFeatures& features, CategoryRules* rules, DeviceAnalysis& out)
{
    static const std::vector<TraceEvent> none;
    const DeviceTrace* trace = snapshot.trace(out.device);
    const std::vector<TraceEvent>& events = trace ? trace->events : none;

    // Which phase span each event falls in: "freed within the run that allocated it".
    std::vector<int32_t> spanOf(out.eventPhase.size(), -1);
    for (size_t s = 0; s < out.phaseSpans.size(); ++s) {
        for (int64_t e = out.phaseSpans[s].firstEvent; e <= out.phaseSpans[s].lastEvent; ++e)
            spanOf[static_cast<size_t>(e)] = static_cast<int32_t>(s);
    }

    // The out-of-memory events: what was live at one, allocated in the same phase of the same step,
    // was caught mid-run (phase runs may be split by frameless events, so phase and step decide).
    std::vector<int64_t> failures;
    for (size_t e = 0; e < events.size(); ++e) {
        if (events[e].action == TraceAction::Oom)
            failures.push_back(static_cast<int64_t>(e));
    }

    // DDP's buckets are the gradient storage unless AccumulateGrad allocates gradients apart; one
    // allocated before the trace began shows it as well by the frames the dump keeps for its block.
    DistributedStacks distributed(snapshot);
    DistributedFacts distributedFacts;
    distributedFacts.gradientsAllocatedApart = std::any_of(out.allocations.begin(), out.allocations.end(),
        [&](const Allocation& a) { return (features.features(a.stack) & FeatureAccumulateGrad) != 0; });
    for (const Allocation& a : out.allocations) {
        uint32_t& last = distributed.communication(a.stack) == CommunicationKind::ZeroOptimizerInit
            ? distributedFacts.zeroMasterLine
            : distributedFacts.gradBufferLine;
        last = std::max(last, distributed.constructorLine(a.stack));
    }

    Reasons reasons(out.reasons);
    std::unordered_map<uint32_t, CategoryRules::Match> ruleCache;
    std::unordered_map<uint32_t, uint16_t> ruleReason;

    for (Allocation& a : out.allocations) {
        const bool older = a.allocEvent < 0;
        const bool alive = a.freeEvent < 0;
        const uint32_t f = features.features(a.stack);
        const Phase stackPhase = features.phase(a.stack);
        a.phase = older ? stackPhase : out.eventPhase[static_cast<size_t>(a.allocEvent)];
        a.step = older ? -1 : out.eventStep[static_cast<size_t>(a.allocEvent)];
        const Phase freedIn = alive ? Phase::Unknown : out.eventPhase[static_cast<size_t>(a.freeEvent)];

        if (rules && !rules->empty() && a.stack != FrameTable::emptyStack()) {
            auto it = ruleCache.find(a.stack.value);
            if (it == ruleCache.end())
                it = ruleCache.emplace(a.stack.value, rules->match(snapshot, a.stack)).first;
            if (it->second.rule >= 0) {
                const auto& rule = rules->rules()[static_cast<size_t>(it->second.rule)];
                auto r = ruleReason.find(static_cast<uint32_t>(it->second.rule));
                if (r == ruleReason.end()) {
                    const auto text
                        = "user rule " + std::string(categoryName(rule.category)) + ": /" + rule.pattern + "/";
                    r = ruleReason.emplace(static_cast<uint32_t>(it->second.rule), reasons.intern(text)).first;
                }
                a.category = rule.category;
                a.reason = r->second;
                continue;
            }
        }

        Verdict v { Category::Unknown, "no evidence" };
        // What an inference engine's stack says outright: a KV cache, the engine's copy of the weights.
        const bool keptBeyondRun
            = alive || older || spanOf[static_cast<size_t>(a.allocEvent)] != spanOf[static_cast<size_t>(a.freeEvent)];
        const auto engine = a.stack == FrameTable::emptyStack()
            ? std::nullopt
            : engineVerdict(f, features.engine(a.stack), a.phase, keptBeyondRun, distributed.graphCapture(a.stack));
        // Collectives' buffers and recomputed activations, before AccumulateGrad: FSDP reduces
        // from a hook AccumulateGrad runs, and that buffer is not the gradient.
        const auto collective = engine || a.stack == FrameTable::emptyStack()
            ? std::nullopt
            : distributedVerdict(a, distributed, distributedFacts, a.phase, keptBeyondRun);
        if (engine) {
            v = { engine->category, engine->reason };
        } else if (collective) {
            v = { collective->category, collective->reason };
        } else if ((f & FeatureAccumulateGrad) && stackPhase == Phase::Backward) {
            // An optimizer run from a post-accumulate-grad hook has AccumulateGrad outside it.
            v = { Category::Gradients, "written by AccumulateGrad (a parameter's .grad)" };
        } else if (older && (a.stack == FrameTable::emptyStack() || (!alive && a.phase == freedIn))) {
            // An allocation first seen at its free carries the free's frames; unless they name
            // another phase than the free's (the allocation context, record context='alloc'),
            // they say nothing about what it was, so decide by lifetime.
            const uint32_t freeFeatures
                = alive ? 0u : features.features(events[static_cast<size_t>(a.freeEvent)].stack);
            const bool freedByUnwinding = !alive && !failures.empty() && a.freeEvent > failures.back();
            v = olderWithoutFrames(a, freedIn, freeFeatures, freedByUnwinding);
        } else {
            const bool sameRun = !older && !alive
                && spanOf[static_cast<size_t>(a.allocEvent)] == spanOf[static_cast<size_t>(a.freeEvent)];
            const bool caughtByFailure = !older && std::any_of(failures.begin(), failures.end(), [&](int64_t failure) {
                return a.liveAfter(failure) && out.eventPhase[static_cast<size_t>(failure)] == a.phase
                    && out.eventStep[static_cast<size_t>(failure)] == a.step;
            });
            v = byPhase(a.phase, f, alive, sameRun, caughtByFailure, freedIn);
        }
        a.category = v.category;
        a.reason = reasons.intern(v.reason);
    }
}

} // namespace oomlens
