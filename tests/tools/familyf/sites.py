"""The program's own stacks at the points of a training step, outermost first."""


def script(path, fn, line, main_line, module_line):
    top = [(path, "<module>", module_line), (path, "main", main_line)]
    return {"data": top + [(path, fn, line)], "forward": top + [(path, fn, line + 2)],
            "backward": top + [(path, fn, line + 4)], "step": top + [(path, fn, line + 6)],
            "zero_grad": top + [(path, fn, line + 7)], "load": top[:1] + [(path, "main", main_line - 40)]}


def hf_trainer(lib, path, main_line):
    tr = lib("transformers/trainer.py")
    top = [(path, "<module>", main_line + 30), (path, "main", main_line), (tr, "train", 2245),
           (tr, "_inner_training_loop", 2560)]
    return {"data": top + [(tr, "training_step", 3722), (tr, "_prepare_inputs", 3673), (tr, "_prepare_input", 3627)],
            "forward": top + [(tr, "training_step", 3740), (tr, "compute_loss", 3801)],
            "backward": top + [(tr, "training_step", 3790), (lib("accelerate/accelerator.py"), "backward", 2454)],
            "step": top[:-1] + [(tr, "_inner_training_loop", 2636), (lib("accelerate/optimizer.py"), "step", 178)],
            "zero_grad": top[:-1] + [(tr, "_inner_training_loop", 2650), (lib("accelerate/optimizer.py"), "zero_grad", 115)],
            "load": [(path, "<module>", main_line + 30), (path, "main", main_line - 35)]}


def deepspeed_script(lib, path, fn, line, main_line, module_line):
    s = script(path, fn, line, main_line, module_line)
    eng = lib("deepspeed/runtime/engine.py")
    mod = lib("torch/nn/modules/module.py")
    s["forward"] = s["forward"] + [(mod, "_wrapped_call_impl", 1739), (mod, "_call_impl", 1750),
                                   (lib("deepspeed/utils/nvtx.py"), "wrapped_fn", 20), (eng, "forward", 2054)]
    s["backward"] = s["backward"] + [(lib("deepspeed/utils/nvtx.py"), "wrapped_fn", 20), (eng, "backward", 2270),
                                     (lib("deepspeed/runtime/zero/stage3.py"), "backward", 2298)]
    return s
