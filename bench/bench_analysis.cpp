// Times reconstruction + phases + categories (analyzeSnapshot) on a synthetic training trace
// of N events (default 1M), or on a snapshot file given as argument, and prints time and RSS.
#include "core/analysis/series.h"
#include "core/analysis/snapshotanalysis.h"
#include "parsers/snapshotreader.h"

#include <QFile>

#include <chrono>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <string>

using namespace oomlens;

namespace {

long rssKiB(const char* field)
{
    std::ifstream status("/proc/self/status");
    std::string line;
    while (std::getline(status, line)) {
        if (line.rfind(field, 0) == 0)
            return std::stol(line.substr(std::strlen(field)));
    }
    return -1;
}

StackId stack(StringTable& strings, FrameTable& frames, std::initializer_list<std::pair<const char*, const char*>> list)
{
    std::vector<FrameId> ids;
    int line = 10;
    for (const auto& [file, name] : list)
        ids.push_back(frames.intern(Frame{strings.intern(file), strings.intern(name), line++}));
    return frames.internStack(ids.data(), ids.size());
}

// Steps of forward (layers allocate activations and temporaries), backward (frees activations,
// writes gradients at the first step), optimizer (state at the first step, scratch after).
std::shared_ptr<const Snapshot> synthetic(size_t targetEvents)
{
    auto strings = std::make_shared<StringTable>();
    auto frames = std::make_shared<FrameTable>();
    const StackId fwd = stack(*strings, *frames, {{"model.py", "forward"}, {"torch/nn/modules/module.py", "_call_impl"}, {"train.py", "main"}});
    const StackId bwd = stack(*strings, *frames, {{"??", "torch::autograd::generated::MmBackward0::apply"}, {"??", "torch::autograd::Engine::thread_main"}});
    const StackId grad = stack(*strings, *frames, {{"??", "torch::autograd::AccumulateGrad::apply"}, {"??", "torch::autograd::Engine::thread_main"}});
    const StackId opt = stack(*strings, *frames, {{"torch/optim/adam.py", "_init_group"}, {"torch/optim/optimizer.py", "wrapper"}, {"train.py", "main"}});
    auto snapshot = std::make_shared<Snapshot>();
    DeviceTrace trace;
    auto& ev = trace.events;
    ev.reserve(targetEvents + 1000);
    int64_t t = 1'700'000'000'000'000;
    uint64_t nextAddress = 0x7f0000000000ULL;
    auto push = [&](TraceAction action, uint64_t addr, uint64_t size, StackId s) {
        TraceEvent e;
        e.action = action;
        e.addr = addr;
        e.size = size;
        e.stack = s;
        e.timeUs = t += 3;
        ev.push_back(e);
    };
    const int layers = 48, params = 48;
    std::vector<uint64_t> gradAddresses, stateAddresses;
    for (int step = 0; ev.size() < targetEvents; ++step) {
        std::vector<uint64_t> saved;
        for (int l = 0; l < layers * 20; ++l) {
            const uint64_t a = nextAddress += 1 << 22;
            push(TraceAction::Alloc, a, 3 << 20, fwd);
            saved.push_back(a);
            const uint64_t tmp = nextAddress += 1 << 22;
            push(TraceAction::Alloc, tmp, 1 << 20, fwd);
            push(TraceAction::FreeRequested, tmp, 1 << 20, fwd);
            push(TraceAction::FreeCompleted, tmp, 1 << 20, fwd);
        }
        for (auto it = saved.rbegin(); it != saved.rend(); ++it) {
            const uint64_t g = nextAddress += 1 << 22;
            push(TraceAction::Alloc, g, 3 << 20, bwd);
            push(TraceAction::FreeRequested, g, 3 << 20, bwd);
            push(TraceAction::FreeCompleted, g, 3 << 20, bwd);
            push(TraceAction::FreeRequested, *it, 3 << 20, bwd);
            push(TraceAction::FreeCompleted, *it, 3 << 20, bwd);
        }
        if (step == 0) {
            for (int p = 0; p < params; ++p) {
                gradAddresses.push_back(nextAddress += 1 << 24);
                push(TraceAction::Alloc, gradAddresses.back(), 8 << 20, grad);
            }
            for (int p = 0; p < 2 * params; ++p) {
                stateAddresses.push_back(nextAddress += 1 << 24);
                push(TraceAction::Alloc, stateAddresses.back(), 8 << 20, opt);
            }
        }
        for (int p = 0; p < params; ++p) {
            const uint64_t s = nextAddress += 1 << 22;
            push(TraceAction::Alloc, s, 1 << 20, opt);
            push(TraceAction::FreeRequested, s, 1 << 20, opt);
            push(TraceAction::FreeCompleted, s, 1 << 20, opt);
        }
    }
    trace.device = 0;
    snapshot->traces.push_back(std::move(trace));
    snapshot->strings = strings;
    snapshot->frames = frames;
    return snapshot;
}

} // namespace

int main(int argc, char** argv)
{
    size_t events = 1'000'000;
    std::shared_ptr<const Snapshot> snapshot;
    if (argc > 1 && std::strspn(argv[1], "0123456789") == std::strlen(argv[1])) {
        events = std::stoul(argv[1]);
    } else if (argc > 1) {
        QFile file(QString::fromLocal8Bit(argv[1]));
        if (!file.open(QIODevice::ReadOnly)) {
            std::fprintf(stderr, "cannot read %s\n", argv[1]);
            return 1;
        }
        const QByteArray bytes = file.readAll();
        const auto result = readSnapshot(std::string_view(bytes.constData(), static_cast<size_t>(bytes.size())));
        if (!result.snapshot) {
            std::fprintf(stderr, "%s: %s\n", argv[1], result.error.c_str());
            return 1;
        }
        snapshot = result.snapshot;
    }
    if (!snapshot)
        snapshot = synthetic(events);
    const long before = rssKiB("VmRSS:");
    const auto start = std::chrono::steady_clock::now();
    const SnapshotAnalysis analysis = analyzeSnapshot(snapshot);
    const auto analyzed = std::chrono::steady_clock::now();
    const DeviceAnalysis* d = analysis.primary();
    const auto n = static_cast<int64_t>(d ? d->eventAllocation.size() : 0);
    const auto buckets = d ? downsample(*d, 0, n, 2000) : std::vector<Bucket>{};
    const auto sampled = std::chrono::steady_clock::now();
    const auto ms = [](auto a, auto b) { return std::chrono::duration<double, std::milli>(b - a).count(); };
    std::printf("events %zu allocations %zu steps %d\n", snapshot->totalTraceEvents(), d ? d->allocations.size() : 0,
                d ? d->stepCount : 0);
    std::printf("analyze %.1f ms, downsample to %zu buckets %.2f ms\n", ms(start, analyzed), buckets.size(),
                ms(analyzed, sampled));
    std::printf("rss before %ld KiB, after %ld KiB (+%.1f bytes/event), peak %ld KiB\n", before, rssKiB("VmRSS:"),
                n ? (rssKiB("VmRSS:") - before) * 1024.0 / static_cast<double>(n) : 0.0, rssKiB("VmHWM:"));
    std::printf("peak %llu bytes at event %lld\n", static_cast<unsigned long long>(d ? d->peakAllocatedBytes : 0),
                static_cast<long long>(d ? d->peakEvent : -1));
    return 0;
}
