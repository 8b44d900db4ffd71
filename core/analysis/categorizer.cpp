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

// Which phase span each event falls in: "freed within the run that allocated it".
std::vector<int32_t> spanOfEvents(const DeviceAnalysis& out)
{
    std::vector<int32_t> spanOf(out.eventPhase.size(), -1);
    for (size_t s = 0; s < out.phaseSpans.size(); ++s) {
        for (int64_t e = out.phaseSpans[s].firstEvent; e <= out.phaseSpans[s].lastEvent; ++e)
            spanOf[static_cast<size_t>(e)] = static_cast<int32_t>(s);
    }
    return spanOf;
}

// The out-of-memory events: what was live at one, allocated in the same phase of the same step,
// was caught mid-run (phase runs may be split by frameless events, so phase and step decide).
std::vector<int64_t> failureEvents(const std::vector<TraceEvent>& events)
{
    std::vector<int64_t> failures;
    for (size_t e = 0; e < events.size(); ++e) {
        if (events[e].action == TraceAction::Oom)
            failures.push_back(static_cast<int64_t>(e));
    }
    return failures;
}

// DDP's buckets are the gradient storage unless AccumulateGrad allocates gradients apart; one
// allocated before the trace began shows it as well by the frames the dump keeps for its block.
DistributedFacts distributedFactsOf(const DeviceAnalysis& out, StackFeatures& features, DistributedStacks& distributed)
{
    DistributedFacts facts;
    facts.gradientsAllocatedApart = std::any_of(out.allocations.begin(), out.allocations.end(),
        [&](const Allocation& a) { return (features.features(a.stack) & FeatureAccumulateGrad) != 0; });
    for (const Allocation& a : out.allocations) {
        uint32_t& last = distributed.communication(a.stack) == CommunicationKind::ZeroOptimizerInit
            ? facts.zeroMasterLine
            : facts.gradBufferLine;
        last = std::max(last, distributed.constructorLine(a.stack));
    }
    return facts;
}

// The user's category rules, matched once per stack; a rule that matches decides outright.
class UserRules
{
public:
    UserRules(const Snapshot& snapshot, CategoryRules* rules, Reasons& reasons)
        : m_snapshot(snapshot)
        , m_rules(rules)
        , m_reasons(reasons)
    { }

    // Sets the allocation's category and reason when a rule matches its stack.
    bool decide(Allocation& a)
    {
        if (!m_rules || m_rules->empty() || a.stack == FrameTable::emptyStack())
            return false;
        auto it = m_matches.find(a.stack.value);
        if (it == m_matches.end())
            it = m_matches.emplace(a.stack.value, m_rules->match(m_snapshot, a.stack)).first;
        if (it->second.rule < 0)
            return false;
        const auto& rule = m_rules->rules()[static_cast<size_t>(it->second.rule)];
        auto r = m_ruleReason.find(static_cast<uint32_t>(it->second.rule));
        if (r == m_ruleReason.end()) {
            const auto text = "user rule " + std::string(categoryName(rule.category)) + ": /" + rule.pattern + "/";
            r = m_ruleReason.emplace(static_cast<uint32_t>(it->second.rule), m_reasons.intern(text)).first;
        }
        a.category = rule.category;
        a.reason = r->second;
        return true;
    }

private:
    const Snapshot& m_snapshot;
    CategoryRules* m_rules;
    Reasons& m_reasons;
    std::unordered_map<uint32_t, CategoryRules::Match> m_matches;
    std::unordered_map<uint32_t, uint16_t> m_ruleReason;
};

// What the whole device's trace tells every allocation's verdict.
struct TraceFacts
{
    const std::vector<TraceEvent>& events;
    const DeviceAnalysis& out;
    std::vector<int32_t> spanOf;
    std::vector<int64_t> failures;
    DistributedStacks& distributed;
    DistributedFacts distributedFacts;
};

// The built-in rules, once the allocation's phase and step are set.
Verdict builtInVerdict(const Allocation& a, StackFeatures& features, const TraceFacts& trace)
{
    const DeviceAnalysis& out = trace.out;
    const bool older = a.allocEvent < 0;
    const bool alive = a.freeEvent < 0;
    const uint32_t f = features.features(a.stack);
    const Phase stackPhase = features.phase(a.stack);
    const Phase freedIn = alive ? Phase::Unknown : out.eventPhase[static_cast<size_t>(a.freeEvent)];
    const std::vector<int32_t>& spanOf = trace.spanOf;

    // What an inference engine's stack says outright: a KV cache, the engine's copy of the weights.
    const bool keptBeyondRun
        = alive || older || spanOf[static_cast<size_t>(a.allocEvent)] != spanOf[static_cast<size_t>(a.freeEvent)];
    const auto engine = a.stack == FrameTable::emptyStack()
        ? std::nullopt
        : engineVerdict(f, features.engine(a.stack), a.phase, keptBeyondRun, trace.distributed.graphCapture(a.stack));
    if (engine)
        return { engine->category, engine->reason };
    // Collectives' buffers and recomputed activations, before AccumulateGrad: FSDP reduces
    // from a hook AccumulateGrad runs, and that buffer is not the gradient.
    const auto collective = a.stack == FrameTable::emptyStack()
        ? std::nullopt
        : distributedVerdict(a, trace.distributed, trace.distributedFacts, a.phase, keptBeyondRun);
    if (collective)
        return { collective->category, collective->reason };
    // An optimizer run from a post-accumulate-grad hook has AccumulateGrad outside it.
    if ((f & FeatureAccumulateGrad) && stackPhase == Phase::Backward)
        return { Category::Gradients, "written by AccumulateGrad (a parameter's .grad)" };
    if (older && (a.stack == FrameTable::emptyStack() || (!alive && a.phase == freedIn))) {
        // An allocation first seen at its free carries the free's frames; unless they name
        // another phase than the free's (the allocation context, record context='alloc'),
        // they say nothing about what it was, so decide by lifetime.
        const uint32_t freeFeatures
            = alive ? 0u : features.features(trace.events[static_cast<size_t>(a.freeEvent)].stack);
        const bool freedByUnwinding = !alive && !trace.failures.empty() && a.freeEvent > trace.failures.back();
        return olderWithoutFrames(a, freedIn, freeFeatures, freedByUnwinding);
    }
    const bool sameRun
        = !older && !alive && spanOf[static_cast<size_t>(a.allocEvent)] == spanOf[static_cast<size_t>(a.freeEvent)];
    const bool caughtByFailure
        = !older && std::any_of(trace.failures.begin(), trace.failures.end(), [&](int64_t failure) {
              return a.liveAfter(failure) && out.eventPhase[static_cast<size_t>(failure)] == a.phase
                  && out.eventStep[static_cast<size_t>(failure)] == a.step;
          });
    return byPhase(a.phase, f, alive, sameRun, caughtByFailure, freedIn);
}

} // namespace

void categorize(const Snapshot& snapshot, StackFeatures& features, CategoryRules* rules, DeviceAnalysis& out)
{
    static const std::vector<TraceEvent> none;
    const DeviceTrace* trace = snapshot.trace(out.device);
    const std::vector<TraceEvent>& events = trace ? trace->events : none;

    DistributedStacks distributed(snapshot);
    const TraceFacts facts { events, out, spanOfEvents(out), failureEvents(events), distributed,
        distributedFactsOf(out, features, distributed) };
    Reasons reasons(out.reasons);
    UserRules userRules(snapshot, rules, reasons);

    for (Allocation& a : out.allocations) {
        const bool older = a.allocEvent < 0;
        a.phase = older ? features.phase(a.stack) : out.eventPhase[static_cast<size_t>(a.allocEvent)];
        a.step = older ? -1 : out.eventStep[static_cast<size_t>(a.allocEvent)];
        if (userRules.decide(a))
            continue;
        const Verdict v = builtInVerdict(a, features, facts);
        a.category = v.category;
        a.reason = reasons.intern(v.reason);
    }
}

} // namespace oomlens
