"""A training (or inference) run on the emulated allocator: loading, forward, backward, the
optimizer step, evaluation and generation, each issuing the allocations its PyTorch counterpart
makes, with the call stacks a user's loop style produces. `phase` and `step` always say where the
run is, so the OOM's place is known exactly and can be asserted against a label."""

from allocator import Allocator, OutOfMemory, MiB

# Python call chains (outermost first) of the loop styles family C uses.
LOOPS = {
    "custom": {
        "root": [("train.py", 241, "<module>"), ("train.py", 226, "main")],
        "step": [("train.py", 143, "train_one_epoch")],
        "forward": ("train.py", 151, "train_one_epoch"),
        "backward": [("train.py", 156, "train_one_epoch"), ("torch/_tensor.py", 581, "backward")],
        "optimizer": [("train.py", 159, "train_one_epoch")],
        "eval": [("train.py", 230, "main"), ("torch/utils/_contextlib.py", 116, "decorate_context"), ("train.py", 187, "evaluate")],
        "eval_forward": ("train.py", 195, "evaluate"),
        "data": [("train.py", 147, "train_one_epoch"), ("train.py", 64, "to_device")],
    },
    "serve": {
        "root": [("serve.py", 201, "<module>"), ("serve.py", 188, "main")],
        "step": [], "forward": ("serve.py", 125, "admit"), "backward": [], "optimizer": [],
        "eval": [("serve.py", 144, "worker")], "eval_forward": ("serve.py", 125, "admit"), "data": [("serve.py", 112, "admit")],
    },
    "trainer": {
        "root": [("run_finetune.py", 312, "<module>"), ("run_finetune.py", 298, "main"), ("transformers/trainer.py", 2241, "train"),
                 ("transformers/trainer.py", 2548, "_inner_training_loop")],
        "step": [("transformers/trainer.py", 3718, "training_step")],
        "forward": ("transformers/trainer.py", 3782, "compute_loss"),
        "forward_pre": [("transformers/trainer.py", 3731, "training_step")],
        "backward": [("transformers/trainer.py", 3765, "training_step"), ("accelerate/accelerator.py", 2246, "backward"),
                     ("torch/_tensor.py", 626, "backward")],
        "optimizer": [("transformers/trainer.py", 2612, "_inner_training_loop"), ("accelerate/optimizer.py", 171, "step"),
                      ("torch/optim/lr_scheduler.py", 130, "wrapper")],
        "eval": [("transformers/trainer.py", 2684, "_inner_training_loop"), ("transformers/trainer.py", 3097, "_maybe_log_save_evaluate"),
                 ("transformers/trainer.py", 4051, "evaluate"), ("transformers/trainer.py", 4245, "evaluation_loop"),
                 ("transformers/trainer.py", 4459, "prediction_step")],
        "eval_forward": ("transformers/trainer.py", 4470, "prediction_step"),
        "eval_keep": [("transformers/trainer.py", 4281, "evaluation_loop"), ("transformers/trainer_pt_utils.py", 128, "nested_concat"),
                      ("transformers/trainer_pt_utils.py", 84, "torch_pad_and_concatenate")],
        "data": [("transformers/trainer.py", 3722, "training_step"), ("transformers/trainer.py", 3640, "_prepare_inputs")],
    },
    "accelerate": {
        "root": [("train_accelerate.py", 402, "<module>"), ("train_accelerate.py", 377, "main"), ("train_accelerate.py", 318, "training_function")],
        "step": [("train_accelerate.py", 331, "training_function")],
        "forward": ("train_accelerate.py", 334, "training_function"),
        "backward": [("train_accelerate.py", 338, "training_function"), ("accelerate/accelerator.py", 2246, "backward"),
                     ("torch/_tensor.py", 626, "backward")],
        "optimizer": [("train_accelerate.py", 340, "training_function"), ("accelerate/optimizer.py", 171, "step")],
        "eval": [("train_accelerate.py", 351, "training_function"), ("torch/utils/_contextlib.py", 116, "decorate_context"),
                 ("train_accelerate.py", 268, "evaluate")],
        "eval_forward": ("train_accelerate.py", 274, "evaluate"),
        "data": [("train_accelerate.py", 327, "training_function"), ("accelerate/data_loader.py", 566, "__iter__"),
                 ("accelerate/utils/operations.py", 182, "send_to_device")],
    },
    "deepspeed": {
        "root": [("pretrain.py", 510, "<module>"), ("pretrain.py", 488, "main"), ("pretrain.py", 420, "train")],
        "step": [("pretrain.py", 431, "train")],
        "forward": ("pretrain.py", 433, "train"),
        "forward_pre": [("deepspeed/utils/nvtx.py", 18, "wrapped_fn"), ("deepspeed/runtime/engine.py", 1909, "forward")],
        "backward": [("pretrain.py", 436, "train"), ("deepspeed/utils/nvtx.py", 18, "wrapped_fn"), ("deepspeed/runtime/engine.py", 2048, "backward"),
                     ("deepspeed/runtime/bf16_optimizer.py", 412, "backward"), ("torch/_tensor.py", 626, "backward")],
        "optimizer": [("pretrain.py", 437, "train"), ("deepspeed/runtime/engine.py", 2213, "step"), ("deepspeed/runtime/engine.py", 2119, "_take_model_step"),
                      ("deepspeed/runtime/bf16_optimizer.py", 310, "step")],
        "eval": [("pretrain.py", 452, "train"), ("torch/utils/_contextlib.py", 116, "decorate_context"), ("pretrain.py", 380, "evaluate")],
        "eval_forward": ("pretrain.py", 386, "evaluate"),
        "data": [("pretrain.py", 429, "train"), ("pretrain.py", 142, "to_device")],
    },
}

AUTOGRAD_TAIL = {"2.0": [("torch/autograd/__init__.py", 200, "backward")],
                 "2.1": [("torch/autograd/__init__.py", 251, "backward")],
                 "2.3": [("torch/autograd/__init__.py", 266, "backward"), ("torch/autograd/graph.py", 744, "_engine_run_backward")],
                 "2.4": [("torch/autograd/__init__.py", 289, "backward"), ("torch/autograd/graph.py", 768, "_engine_run_backward")],
                 "2.6": [("torch/autograd/__init__.py", 347, "backward"), ("torch/autograd/graph.py", 823, "_engine_run_backward")],
                 "2.8": [("torch/autograd/__init__.py", 354, "backward"), ("torch/autograd/graph.py", 829, "_engine_run_backward")],
                 "2.10": [("torch/autograd/__init__.py", 364, "backward"), ("torch/autograd/graph.py", 841, "_engine_run_backward")]}

FUNCTIONAL = {"softmax": ("torch/nn/functional.py", 2140), "dropout": ("torch/nn/functional.py", 1425),
              "scaled_dot_product_attention": ("torch/nn/functional.py", 5460), "group_norm": ("torch/nn/functional.py", 2955),
              "batch_norm": ("torch/nn/functional.py", 2812), "log_softmax": ("torch/nn/functional.py", 2233),
              "_conv_forward": ("torch/nn/modules/conv.py", 549), "dequantize_4bit": ("bitsandbytes/functional.py", 1385),
              "float": ("torch/nn/modules/loss.py", 1295), "get_attention_scores": ("diffusers/models/attention_processor.py", 688),
              "repeat_kv": ("transformers/models/llama/modeling_llama.py", 215)}

ATEN_OF = {"softmax": "softmax", "_conv_forward": "conv", "dequantize_4bit": "copy", "float": "copy",
           "get_attention_scores": "mm", "forward": "linear"}


class Clock:
    def __init__(self, start_us):
        self.now = start_us
        self.n = 0

    def tick(self):
        self.n += 1
        self.now += 3 + (self.n * 7919) % 23
        return self.now

    def gap(self, us):
        self.now += us


class Run:
    def __init__(self, model, card_total, *, context, frames, other=0, fraction=None, trace_entries=3000,
                 optimizer="adamw_foreach", master_weights=False, ddp=False, loop="custom", start_us=1760000000000000,
                 base_address=0x7F3B20000000, compiled=False):
        self.model = model
        self.frames = frames
        self.clock = Clock(start_us)
        self.alloc = Allocator(card_total, context, other, fraction, trace_entries, base_address, self.clock)
        self.optimizer = optimizer
        self.master_weights = master_weights
        self.ddp = ddp
        self.loop = LOOPS[loop]
        self.loop_name = loop
        self.compiled = compiled
        self.phase = "load"
        self.step = 0
        self.micro = 0
        self.params = []  # (layer, name, numel, trainable, block)
        self.grads = {}
        self.masters = []
        self.state = []
        self.kept = []  # tensors a scenario keeps across steps or batches
        self.live_step = []  # tensors of the step in flight (freed if the exception unwinds)
        self.step_log = []
        self.failed_chain = None
        self.state_created = False

    # -- bookkeeping --------------------------------------------------------------------------
    def malloc(self, nbytes, frames, chain=None, track=True):
        self.last_chain = chain
        block = self.alloc.malloc(max(int(nbytes), 1), frames)
        if track:
            self.live_step.append(block)
        return block

    def free(self, block):
        if block.allocated:
            self.alloc.free(block)

    def unwind(self):
        """What the exception leaves when it propagates out of the step: the step's tensors die."""
        for block in self.live_step:
            self.free(block)
        self.live_step = []

    def chain(self, *parts):
        out = list(self.loop["root"])
        for p in parts:
            out.extend(p)
        # one frame per call: where a chain names the same function twice in a row
        # (the loop's line, then the statement inside it), the later, deeper line is the frame
        collapsed = []
        for frame in out:
            if collapsed and frame[2] != "_apply" and collapsed[-1][0] == frame[0] and collapsed[-1][2] == frame[2]:
                collapsed[-1] = frame
            else:
                collapsed.append(frame)
        return collapsed

    def trainable(self):
        return [p for p in self.params if p[3]]

    def fixed_bytes(self):
        """What training keeps between steps: weights, gradients, master weights and optimizer state."""
        w = sum(p[4].size for p in self.params)
        g = sum(b.size for b in self.grads.values())
        m = sum(b.size for b in self.masters)
        s = sum(b.size for b in self.state)
        return w + g + m + s

    def projected_fixed_bytes(self):
        """The same, projected from the trainable parameters before gradients and state exist."""
        w = sum(self.model.param_bytes(p[2], p[3]) for p in self.params) if self.params else sum(
            self.model.param_bytes(n, t) for layer in self.model.layers for _, n, t in layer.params)
        numel = self.model.numel(trainable_only=True)
        grad = numel * self.grad_bytes()
        master = numel * 4 if self.master_weights else 0
        state = numel * self.state_bytes_per_param()
        return w + grad + master + state

    def grad_bytes(self):
        return 4 if (self.model.weight_bytes == 4 or self.model.quant_bits) else 2

    def state_bytes_per_param(self):
        base = 4 if (self.master_weights or self.model.weight_bytes == 4 or self.model.quant_bits) else 2
        return {"adamw_foreach": 2 * base, "adamw_fused": 2 * base, "adamw_8bit": 2, "sgd_momentum": base,
                "adafactor": 0}[self.optimizer]

    # -- loading ------------------------------------------------------------------------------
    def load(self, how="to"):
        self.phase = "load"
        if how == "from_pretrained":
            chain = self.chain([("train.py", 88, "build_model"), ("transformers/modeling_utils.py", 4225, "from_pretrained"),
                                ("transformers/modeling_utils.py", 4728, "_load_pretrained_model"),
                                ("transformers/modeling_utils.py", 939, "_load_state_dict_into_meta_model"),
                                ("accelerate/utils/modeling.py", 329, "set_module_tensor_to_device")])
        else:
            chain = self.chain([("train.py", 92, "build_model"), ("torch/nn/modules/module.py", 1340, "to"),
                                ("torch/nn/modules/module.py", 900, "_apply"), ("torch/nn/modules/module.py", 900, "_apply"),
                                ("torch/nn/modules/module.py", 927, "_apply"), ("torch/nn/modules/module.py", 1326, "convert")])
        frames = self.frames.stack(chain, "copy")
        for layer in self.model.layers:
            for name, numel, trainable in layer.params:
                nbytes = self.model.param_bytes(numel, trainable)
                block = self.malloc(nbytes, frames, chain, track=False)
                self.params.append((layer, name, numel, trainable, block))
                if self.model.quant_bits and not trainable and numel >= 4096:
                    # bitsandbytes keeps the per-block absmax next to the packed weight
                    self.malloc(numel // 64 * 4, frames, chain, track=False)
        self.clock.gap(9_000_000)
        if self.master_weights:
            mchain = self.chain([("train.py", 118, "build_optimizer")] + (self.loop.get("master_chain") or [
                ("deepspeed/runtime/bf16_optimizer.py", 142, "_setup_for_real_optimizer")]))
            mframes = self.frames.stack(mchain, "copy")
            for p in self.trainable():
                self.masters.append(self.malloc(p[2] * 4, mframes, mchain, track=False))
        if self.ddp:
            dchain = self.chain([("train.py", 104, "build_model"), ("torch/nn/parallel/distributed.py", 822, "__init__"),
                                 ("torch/nn/parallel/distributed.py", 1154, "_ddp_init_helper")])
            dframes = self.frames.stack(dchain, "empty")
            total = sum(p[2] for p in self.trainable()) * self.grad_bytes()
            first = 1 * MiB
            sizes = [first]
            rest = total - first
            while rest > 0:
                sizes.append(min(25 * MiB, rest))
                rest -= 25 * MiB
            self.ddp_buckets = [self.malloc(s, dframes, dchain, track=False) for s in sizes]

    # -- one module forward -------------------------------------------------------------------
    def layer_chain(self, outer, layer, op, eval_mode=False):
        top = (self.model.top_file, 1140 if self.model.family == "llama" else 612, "forward")
        chain = list(outer) + self.frames.module_call()
        if self.compiled:
            chain += [("torch/_dynamo/eval_frame.py", 574, "_fn"), ("torch/_functorch/aot_autograd.py", 1201, "forward"),
                      ("torch/_inductor/output_code.py", 460, "__call__"),
                      ("/tmp/torchinductor_root/ab/cabx7kq2dn4o3zrbq6f5c3u6wfu2o4vm5v6xqdaqlqkbqj5f3q2y.py", 1862 + hash_line(layer.name), "call")]
            return chain
        chain.append(top)
        chain += self.frames.module_call()
        chain.append((layer.file, 300 + hash_line(layer.cls), "forward"))
        if op.fn == "forward":
            chain.append((layer.file, op.line or 310, "forward"))
        elif op.fn in FUNCTIONAL:
            f, line = FUNCTIONAL[op.fn]
            chain.append((f, line, op.fn))
        return chain

    def forward(self, shape, grad=True, outer=None, keep_last=False):
        """Returns the saved tensors per layer (grad) or the head's outputs (no grad)."""
        outer = outer if outer is not None else self.chain(self.loop["step"], self.loop.get("forward_pre", []), [self.loop["forward"]])
        saved_by_layer = []
        prev = []
        for layer in self.model.layers:
            saved, temps = [], []
            for op in layer.ops(shape):
                chain = self.layer_chain(outer, layer, op)
                frames = self.frames.stack(chain, ATEN_OF.get(op.fn, "linear"))
                block = self.malloc(op.nbytes, frames, chain)
                (saved if op.kind == "save" else temps).append(block)
                if op.kind == "temp" and len(temps) > 1:
                    self.free(temps.pop(0))
            for t in temps:
                self.free(t)
            if grad:
                saved_by_layer.append((layer, saved))
            else:
                for b in prev:
                    self.free(b)
                prev = saved
        return saved_by_layer if grad else prev

    def backward(self, saved_by_layer, shape, retain_graph=False):
        self.phase = "backward"
        chain = self.chain(self.loop["step"], self.loop["backward"], AUTOGRAD_TAIL[self.frames.era])
        frames = self.frames.stack(chain[:-1] + [("torch/autograd/__init__.py", chain[-1][1] - 60, "_make_grads")], "empty")
        grad = self.malloc(512, frames, chain)
        for layer, saved in reversed(saved_by_layer):
            made = []
            for n in layer.grad_in(shape):
                made.append(self.malloc(n, self.frames.engine("MmBackward0"), chain))
            for name, numel, trainable in layer.params:
                if not trainable or self.ddp:
                    continue
                key = name
                if key not in self.grads:
                    gb = numel * self.grad_bytes()
                    self.grads[key] = self.malloc(gb, self.frames.engine("AccumulateGrad", "empty"), chain, track=False)
            if not retain_graph:
                for b in saved:
                    self.free(b)
            self.free(grad)
            for b in made[:-1]:
                self.free(b)
            grad = made[-1] if made else self.malloc(512, self.frames.engine("AddBackward0"), chain)
            self.clock.gap(200)
        self.free(grad)

    # -- optimizer ----------------------------------------------------------------------------
    def optimizer_step(self):
        self.phase = "optimizer"
        kind = self.optimizer
        opt_file = {"adamw_foreach": "torch/optim/adamw.py", "adamw_fused": "torch/optim/adamw.py",
                    "adamw_8bit": "bitsandbytes/optim/optimizer.py", "sgd_momentum": "torch/optim/sgd.py"}[kind]
        wrapper = [("torch/optim/optimizer.py", 487, "wrapper"), ("torch/optim/optimizer.py", 91, "_use_grad")]
        base = self.chain(self.loop["step"] if self.loop_name == "custom" else [], self.loop["optimizer"], wrapper)
        trainable = self.trainable()
        sb = self.state_bytes_per_param()
        if not self.state_created:
            if kind.startswith("adamw") and kind != "adamw_8bit":
                init = base + [(opt_file, 209, "step"), (opt_file, 150, "_init_group")]
                for p in trainable:
                    for line in (153, 157):
                        chain = init[:-1] + [(opt_file, line, "_init_group")]
                        self.state.append(self.malloc(p[2] * sb // 2, self.frames.stack(chain, "empty"), chain, track=False))
            elif kind == "adamw_8bit":
                init = base + [(opt_file, 287, "step"), (opt_file, 474, "init_state")]
                for p in trainable:
                    for line in (478, 479):
                        chain = init[:-1] + [(opt_file, line, "init_state")]
                        self.state.append(self.malloc(p[2], self.frames.stack(chain, "empty"), chain, track=False))
            elif kind == "sgd_momentum":
                init = base + [(opt_file, 125, "step"), (opt_file, 395, "_multi_tensor_sgd")]
                for p in trainable:
                    self.state.append(self.malloc(p[2] * sb, self.frames.stack(init, "copy"), init, track=False))
            self.state_created = True
        if kind == "adamw_foreach":
            chain = base + [(opt_file, 232, "step"), (opt_file, 782, "adamw"), (opt_file, 606, "_multi_tensor_adamw")]
            frames = self.frames.stack(chain, "foreach")
            temps = [self.malloc(p[2] * sb // 2, frames, chain) for p in trainable]
            for t in temps:
                self.free(t)
        elif kind == "adamw_8bit":
            chain = base + [(opt_file, 299, "step"), ("bitsandbytes/optim/optimizer.py", 560, "update_step")]
            t = self.malloc(4096, self.frames.stack(chain, "empty"), chain)
            self.free(t)
        self.clock.gap(5000)

    def zero_grad(self):
        for key in list(self.grads):
            self.free(self.grads.pop(key))

    # -- one training step --------------------------------------------------------------------
    def inputs(self, shape):
        chain = self.chain(self.loop["data"])
        frames = self.frames.stack(chain, "copy")
        self.phase = "data"
        if "resolution" in shape and self.model.family in ("resnet", "unet"):
            ch = 3 if self.model.family == "resnet" else 4
            return [self.malloc(shape["batch"] * ch * shape["resolution"] ** 2 * 4, frames, chain)]
        if "image" in shape:
            return [self.malloc(shape["batch"] * 3 * shape["image"] ** 2 * 4, frames, chain)]
        bt = shape["batch"] * shape["tokens"]
        return [self.malloc(bt * 8, frames, chain), self.malloc(bt * 8, frames, chain), self.malloc(bt * 8, frames, chain)]

    def train_step(self, shape, accumulation=1, retain_graph=False, on_forward_end=None, on_step_end=None,
                   step_optimizer=True):
        self.live_step = []
        start = self.alloc.allocated
        self.alloc.window_peak = start
        for micro in range(accumulation):
            self.micro = micro
            ins = self.inputs(shape)
            self.phase = "forward"
            saved = self.forward(shape)
            lchain = self.chain(self.loop["step"], [self.loop["forward"]], [("torch/nn/modules/loss.py", 1295, "forward")])
            loss = self.malloc(512, self.frames.stack(lchain, "empty"), lchain)
            if on_forward_end:
                on_forward_end(self, saved)
            self.backward(saved, shape, retain_graph=retain_graph)
            if retain_graph:
                self.kept.extend(b for _, s in saved for b in s)
                self.kept.append(loss)
                self.live_step = [b for b in self.live_step if b not in set(self.kept)]
            else:
                self.free(loss)
            for b in ins:
                self.free(b)
            self.clock.gap(40000)
        if step_optimizer:
            self.optimizer_step()
            self.zero_grad()
        if on_step_end:
            on_step_end(self)
        self.step_log.append({"step": self.step, "start": start, "peak": self.alloc.window_peak,
                              "end": self.alloc.allocated, "shape": dict(shape)})
        self.live_step = []
        self.step += 1
        self.clock.gap(120000)

    # -- evaluation ---------------------------------------------------------------------------
    def eval_batch(self, shape, keep=None):
        self.phase = "eval"
        self.live_step = []
        ins = self.inputs(shape)
        self.phase = "eval"
        outer = self.chain(self.loop["eval"], [self.loop["eval_forward"]])
        outs = self.forward(shape, grad=False, outer=outer)
        if keep:
            keep(self, outs)
        for b in outs:
            self.free(b)
        for b in ins:
            self.free(b)
        self.live_step = []
        self.clock.gap(30000)


def hash_line(text):
    h = 0
    for ch in text:
        h = (h * 131 + ord(ch)) % 997
    return h
