#include "common/jsonsnapshot.h"

namespace oomlens::test {

std::string tinyJsonSnapshot(uint64_t weights, uint64_t activations, std::optional<int64_t> oomTime, int64_t clock)
{
    // Innermost frame first, as PyTorch records them; the stacks the categorizer knows.
    const std::string load = R"([{"filename":"torch/nn/modules/module.py","name":"_apply","line":900},)"
                             R"({"filename":"torch/nn/modules/module.py","name":"to","line":1340},)"
                             R"({"filename":"train.py","name":"main","line":80}])";
    const std::string forward = R"([{"filename":"model.py","name":"forward","line":12},)"
                                R"({"filename":"torch/nn/modules/module.py","name":"_call_impl","line":1750},)"
                                R"({"filename":"train.py","name":"train_step","line":40}])";
    std::string events;
    int64_t time = clock;
    uint64_t address = 0x7f0000000000ULL;
    const auto alloc = [&](uint64_t size, const std::string& frames) {
        events += std::string(events.empty() ? "" : ",") + R"({"action":"alloc","addr":)" + std::to_string(address)
            + R"(,"size":)" + std::to_string(size) + R"(,"stream":0,"time_us":)" + std::to_string(time++)
            + R"(,"frames":)" + frames + "}";
        address += (size + 0xfffff) & ~uint64_t(0xfffff);
    };
    alloc(weights, load);
    alloc(activations, forward);
    if (oomTime) {
        events += R"(,{"action":"oom","addr":0,"size":)" + std::to_string(activations) + R"(,"stream":0,"time_us":)"
            + std::to_string(*oomTime) + R"(,"device_free":1024,"frames":)" + forward + "}";
    }
    return R"({"segments": [], "device_traces": [[)" + events + "]]}";
}

} // namespace oomlens::test
