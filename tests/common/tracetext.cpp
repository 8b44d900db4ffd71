#include "common/tracetext.h"

#include "common/tracebuilder.h"

#include <charconv>
#include <cmath>

namespace oomlens::test {

const std::map<std::string, std::string, std::less<>>& phaseStacks()
{
    static const std::string lightningStep
        = "torch/optim/optimizer.py:_use_grad:79;torch/optim/optimizer.py:wrapper:484;"
          "lightning/pytorch/plugins/precision/precision.py:optimizer_step:123;"
          "lightning/pytorch/core/optimizer.py:step:154;lightning/pytorch/loops/optimization/"
          "automatic.py:_optimizer_step:270;"
          "lightning/pytorch/loops/training_epoch_loop.py:advance:250;lightning/pytorch/trainer/trainer.py:fit:544;"
          "train.py:main:20";
    static const std::string lightningClosure
        = "lightning/pytorch/loops/optimization/automatic.py:closure:138;torch/utils/"
          "_contextlib.py:decorate_context:116;"
          "lightning/pytorch/loops/optimization/automatic.py:__call__:146;"
          "lightning/pytorch/plugins/precision/precision.py:_wrap_closure:108;torch/optim/adam.py:step:205;"
        + lightningStep;
    // Innermost frame first, as PyTorch records them.
    static const std::map<std::string, std::string, std::less<>> stacks = {
        { "load", "torch/nn/modules/module.py:_apply:900;torch/nn/modules/module.py:to:1340;train.py:main:80" },
        { "fwd",
            "model.py:forward:12;torch/nn/modules/module.py:_call_impl:1750;"
            "torch/nn/modules/module.py:_wrapped_call_impl:1739;train.py:train_step:40;train.py:main:90" },
        { "fwdcpp",
            "??:at::native::empty_cuda(c10::ArrayRef<long>):0;"
            "??:torch::autograd::THPVariable_mm(_object*, _object*):0;model.py:forward:12;"
            "torch/nn/modules/module.py:_call_impl:1750;train.py:train_step:40;train.py:main:90" },
        { "loss", "train.py:train_step:42;train.py:main:90" },
        { "bwd",
            "torch/autograd/graph.py:_engine_run_backward:744;torch/autograd/__init__.py:backward:266;"
            "torch/_tensor.py:backward:521;train.py:train_step:43;train.py:main:90" },
        { "bwdcpp",
            "??:torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor>&&):0;"
            "??:torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&):0;"
            "??:torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&):0" },
        { "grad",
            "??:torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor>&&):0;"
            "??:torch::autograd::Engine::evaluate_function(std::shared_ptr<torch::autograd::GraphTask>&):0;"
            "??:torch::autograd::Engine::thread_main(std::shared_ptr<torch::autograd::GraphTask> const&):0" },
        { "opt",
            "torch/optim/adam.py:_single_tensor_adam:400;torch/optim/adam.py:step:220;"
            "torch/optim/optimizer.py:wrapper:493;train.py:train_step:44;train.py:main:90" },
        { "optinit",
            "torch/optim/adam.py:_init_group:150;torch/optim/adam.py:step:210;"
            "torch/optim/optimizer.py:wrapper:493;train.py:train_step:44;train.py:main:90" },
        { "zero", "torch/optim/optimizer.py:zero_grad:950;train.py:train_step:39;train.py:main:90" },
        { "eval",
            "model.py:forward:12;torch/nn/modules/module.py:_call_impl:1750;train.py:evaluate:60;"
            "torch/utils/_contextlib.py:decorate_context:116;train.py:main:95" },
        // PyTorch Lightning's automatic optimization: the training step's forward and backward
        // run in a closure called by optimizer.step(), wrapped in @torch.enable_grad().
        { "lfwd",
            "model.py:forward:12;torch/nn/modules/module.py:_call_impl:1750;lit.py:training_step:30;"
            "lightning/pytorch/strategies/strategy.py:training_step:390;"
                + lightningClosure },
        { "lbwd",
            "torch/autograd/graph.py:_engine_run_backward:744;torch/autograd/__init__.py:backward:266;"
            "torch/_tensor.py:backward:521;lightning/pytorch/core/module.py:backward:1068;"
            "lightning/pytorch/strategies/strategy.py:backward:212;"
            "lightning/pytorch/loops/optimization/automatic.py:backward_fn:241;"
                + lightningClosure },
        { "lzero",
            "torch/optim/optimizer.py:zero_grad:950;lightning/pytorch/core/module.py:optimizer_zero_grad:1170;"
            "lightning/pytorch/loops/optimization/automatic.py:zero_grad_fn:230;"
                + lightningClosure },
        { "lopt", "torch/optim/adam.py:_single_tensor_adam:400;torch/optim/adam.py:step:223;" + lightningStep },
        { "loptinit", "torch/optim/adam.py:_init_group:150;torch/optim/adam.py:step:213;" + lightningStep },
        { "data",
            "torch/utils/data/_utils/pin_memory.py:pin_memory:70;"
            "torch/utils/data/dataloader.py:__next__:630;train.py:main:88" },
        { "none", "" },
    };
    return stacks;
}

std::vector<std::string> tokenize(std::string_view line)
{
    std::vector<std::string> tokens;
    std::string current;
    bool quoted = false, any = false;
    for (char c : line) {
        if (c == '"') {
            quoted = !quoted;
            any = true;
        } else if (!quoted && (c == ' ' || c == '\t' || c == '\r')) {
            if (any)
                tokens.push_back(current);
            current.clear();
            any = false;
        } else {
            current += c;
            any = true;
        }
    }
    if (any)
        tokens.push_back(current);
    return tokens;
}

uint64_t parseAddress(std::string_view text, bool* ok)
{
    uint64_t value = 0;
    int base = 10;
    if (text.substr(0, 2) == "0x" || text.substr(0, 2) == "0X") {
        text.remove_prefix(2);
        base = 16;
    }
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value, base);
    *ok = ec == std::errc() && ptr == text.data() + text.size() && !text.empty();
    return value;
}

uint64_t parseBytes(std::string_view text, bool* ok)
{
    static const std::pair<std::string_view, uint64_t> units[]
        = { { "GiB", uint64_t(1) << 30 }, { "MiB", uint64_t(1) << 20 }, { "KiB", uint64_t(1) << 10 },
              { "GB", uint64_t(1) << 30 }, { "MB", uint64_t(1) << 20 }, { "KB", uint64_t(1) << 10 }, { "B", 1 } };
    uint64_t multiplier = 1;
    for (const auto& [suffix, factor] : units) {
        if (text.size() > suffix.size() && text.substr(text.size() - suffix.size()) == suffix) {
            text.remove_suffix(suffix.size());
            multiplier = factor;
            break;
        }
    }
    double value = 0;
    auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
    *ok = ec == std::errc() && ptr == text.data() + text.size() && !text.empty() && value >= 0;
    return *ok ? static_cast<uint64_t>(std::llround(value * static_cast<double>(multiplier))) : 0;
}

} // namespace oomlens::test
