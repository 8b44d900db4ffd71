#include "bench/synthetictrace.h"

#include <initializer_list>
#include <utility>
#include <vector>

namespace oomlens::bench {

namespace {

StackId stack(StringTable& strings, FrameTable& frames, std::initializer_list<std::pair<const char*, const char*>> list)
{
    std::vector<FrameId> ids;
    int line = 10;
    for (const auto& [file, name] : list)
        ids.push_back(frames.intern(Frame { strings.intern(file), strings.intern(name), line++ }));
    return frames.internStack(ids.data(), ids.size());
}

} // namespace

std::shared_ptr<const Snapshot> syntheticTrainingTrace(size_t targetEvents, StepShape shape)
{
    auto strings = std::make_shared<StringTable>();
    auto frames = std::make_shared<FrameTable>();
    const StackId fwd = stack(*strings, *frames,
        { { "model.py", "forward" }, { "torch/nn/modules/module.py", "_call_impl" }, { "train.py", "main" } });
    const StackId bwd = stack(*strings, *frames,
        { { "??", "torch::autograd::generated::MmBackward0::apply" },
            { "??", "torch::autograd::Engine::thread_main" } });
    const StackId grad = stack(*strings, *frames,
        { { "??", "torch::autograd::AccumulateGrad::apply" }, { "??", "torch::autograd::Engine::thread_main" } });
    const StackId opt = stack(*strings, *frames,
        { { "torch/optim/adam.py", "_init_group" }, { "torch/optim/optimizer.py", "wrapper" },
            { "train.py", "main" } });
    const bool varying = shape == StepShape::Varying;
    const auto activationBytes
        = [varying](size_t layer) -> uint64_t { return varying ? uint64_t(2 + layer % 3) << 20 : uint64_t(3) << 20; };

    auto snapshot = std::make_shared<Snapshot>();
    DeviceTrace trace;
    auto& events = trace.events;
    events.reserve(targetEvents + 10000);
    int64_t time = 1'700'000'000'000'000;
    uint64_t next = 0x7f0000000000ULL;
    auto push = [&](TraceAction action, uint64_t address, uint64_t size, StackId s) {
        TraceEvent event;
        event.action = action;
        event.addr = address;
        event.size = size;
        event.stack = s;
        event.timeUs = time += 3;
        events.push_back(event);
    };
    constexpr int params = 48;
    for (int step = 0; events.size() < targetEvents; ++step) {
        std::vector<uint64_t> saved;
        const int layers = varying ? 600 + (step * 37) % 400 : 960;
        for (int l = 0; l < layers; ++l) {
            const uint64_t a = next += 1 << 22;
            push(TraceAction::Alloc, a, activationBytes(size_t(l)), fwd);
            saved.push_back(a);
            const uint64_t t = next += 1 << 22;
            push(TraceAction::Alloc, t, 1 << 20, fwd);
            push(TraceAction::FreeRequested, t, 1 << 20, fwd);
            push(TraceAction::FreeCompleted, t, 1 << 20, fwd);
        }
        for (size_t i = saved.size(); i-- > 0;) {
            const uint64_t g = next += 1 << 22;
            push(TraceAction::Alloc, g, 3 << 20, bwd);
            push(TraceAction::FreeRequested, g, 3 << 20, bwd);
            push(TraceAction::FreeCompleted, g, 3 << 20, bwd);
            push(TraceAction::FreeRequested, saved[i], activationBytes(i), bwd);
            push(TraceAction::FreeCompleted, saved[i], activationBytes(i), bwd);
        }
        if (step == 0) {
            for (int p = 0; p < params; ++p)
                push(TraceAction::Alloc, next += 1 << 24, 8 << 20, grad);
            for (int p = 0; p < 2 * params; ++p)
                push(TraceAction::Alloc, next += 1 << 24, 8 << 20, opt);
        }
        if (!varying) {
            for (int p = 0; p < params; ++p) {
                const uint64_t s = next += 1 << 22;
                push(TraceAction::Alloc, s, 1 << 20, opt);
                push(TraceAction::FreeRequested, s, 1 << 20, opt);
                push(TraceAction::FreeCompleted, s, 1 << 20, opt);
            }
        }
    }
    trace.device = 0;
    snapshot->traces.push_back(std::move(trace));
    snapshot->strings = strings;
    snapshot->frames = frames;
    return snapshot;
}

} // namespace oomlens::bench
