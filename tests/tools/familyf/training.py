"""One training loop over a decoder-only transformer, with the memory behaviour of the recipe
that runs it: plain (one GPU, torch.optim AdamW), FSDP2 (fully_shard, MixedPrecisionPolicy bf16
params / fp32 reduce) or DeepSpeed ZeRO-3. Each allocation carries the stack the framework's
code would have and what it is for (parameters, gradients, optimizer_state, activations,
temporaries, inputs, communication, kv_cache)."""
from run import DEFAULT, AG_COPY_IN, AG_STREAM, RS_STREAM

MODULE = "torch/nn/modules/module.py"


class Paths:
    def __init__(self, run, script):
        self.run, self.script = run, script
        self.lib = run.fr.lib

    def mod(self, relpath, line):
        lib = self.lib
        return [(lib(MODULE), "_wrapped_call_impl", 1739), (lib(MODULE), "_call_impl", 1750), (lib(relpath), "forward", line)]

    def hf(self, model):
        return "transformers/models/%s/modeling_%s.py" % (model.hf_module, model.hf_module)


class Trainer:
    """batches: list of (micro_batch, seq_len) per step. hooks: dict of callables the scenario
    adds (after_loss(trainer, step, logits), before_step(trainer, step))."""

    def __init__(self, run, model, sites, batches, strategy, checkpointing=False, optimizer="adamw", hooks=None):
        self.run, self.m = run, model
        self.p = Paths(run, None)
        # sites: the program's stacks (outermost first) at "data", "forward" (the line calling the
        # model), "backward" (loss.backward()), "step" (optimizer.step()) and "zero_grad"
        self.sites = sites
        self.loop_frames = sites["forward"]
        self.batches, self.strategy = batches, strategy
        self.ckpt, self.optimizer = checkpointing, optimizer
        self.hooks = hooks or {}
        strategy.trainer = self
        self.grads = {}

    # ---- stacks -----------------------------------------------------------------------------
    def model_frames(self, layer=None, part=None):
        m, p, lib = self.m, self.p, self.p.lib
        hf = p.hf(m)
        out = list(self.loop_frames) + p.mod(hf, 832) + p.mod(hf, 571)
        if layer is not None:
            if self.ckpt:
                out += [(lib("torch/_compile.py"), "inner", 32), (lib("torch/utils/checkpoint.py"), "checkpoint", 495),
                        (lib("torch/autograd/function.py"), "apply", 575), (lib("torch/utils/checkpoint.py"), "forward", 264)]
            out += p.mod(hf, 318)
            if part == "attn":
                out += p.mod(hf, 277)
            elif part == "mlp":
                out += p.mod(hf, 168)
            elif part == "norm":
                out += p.mod(hf, 74)
        return out

    def backward_main_frames(self):
        lib = self.p.lib
        return list(self.sites["backward"]) + [(lib("torch/_tensor.py"), "backward", 626),
                                                (lib("torch/autograd/__init__.py"), "backward", 347),
                                                (lib("torch/autograd/graph.py"), "_engine_run_backward", 823)]

    # ---- one step ------------------------------------------------------------------------------
    def run_steps(self, first_step=1):
        for i, (b, s) in enumerate(self.batches):
            self.train_step(first_step + i, b, s)

    def train_step(self, step, b, s):
        run, m = self.run, self.m
        run.step = step
        run.phase = "forward"
        run.at(*self.sites["data"])
        ids = run.new(b * s * 8, "inputs", op="copy")
        labels = run.new(b * s * 8, "inputs", op="copy")
        mask = run.new(b * s * 8, "inputs", op="copy")
        t = b * s
        saved = []
        st = self.strategy
        run.at(*self.model_frames())
        st.pre_forward("embed")
        emb = run.new(t * m.hidden * 2, "activations", op="empty")
        st.post_forward("embed")
        for i in range(m.layers):
            # the pre-forward hooks (FSDP2's unshard, ZeRO-3's fetch) run in the layer's _call_impl
            run.at(*self.model_frames(), *self.p.mod(self.p.hf(m), 318)[:2])
            st.pre_forward(i)
            run.at(*self.model_frames(i, "attn"))
            saved.append(self.layer_forward(i, b, s))
            run.at(*self.model_frames(), *self.p.mod(self.p.hf(m), 318)[:2])
            st.post_forward(i)
            run.tick()
        run.at(*self.model_frames(None))
        st.pre_forward("head")
        final = run.new(t * m.hidden * 2, "activations", op="pointwise")
        logits = run.new(t * m.vocab * 2, "activations", op="mm")
        st.post_forward("head")
        run.push((self.p.lib("transformers/loss/loss_utils.py"), "ForCausalLMLoss", 53))
        logits32 = run.new(t * m.vocab * 4, "activations", op="copy")
        logp = run.new(t * m.vocab * 4, "activations", op="log_softmax")
        loss = run.new(4, "activations", op="log_softmax")
        run.pop()
        if "after_loss" in self.hooks:
            self.hooks["after_loss"](self, step, logits)
        # backward
        run.phase = "backward"
        run.at(*self.backward_main_frames())
        run.engine = "LogSoftmaxBackward0"
        g32 = run.new(t * m.vocab * 4, "temporaries", op="pointwise")
        run.free(logp)
        run.free(logits32)
        g16 = run.new(t * m.vocab * 2, "temporaries", op="copy")
        run.free(g32)
        run.engine = "MmBackward0"
        st.pre_backward("head")
        st.param_grads("head")
        gh = run.new(t * m.hidden * 2, "temporaries", op="mm")
        run.free(g16)
        run.free(logits)
        st.post_backward("head")
        run.free(final)
        for i in reversed(range(m.layers)):
            st.pre_backward(i)
            gh = self.layer_backward(i, b, s, saved[i], gh)
            st.post_backward(i)
            run.tick()
        run.engine = "EmbeddingBackward0"
        st.pre_backward("embed")
        st.param_grads("embed")
        st.post_backward("embed")
        run.free(gh)
        run.free(emb)
        st.end_backward()
        run.engine = None
        run.free(loss)
        run.free_all([ids, labels, mask])
        if "before_step" in self.hooks:
            self.hooks["before_step"](self, step)
        run.phase = "optimizer"
        run.at(*self.sites["step"])
        st.optimizer_step(step)
        run.phase = "zero_grad"
        run.at(*self.sites["zero_grad"])
        st.zero_grad()
        run.tick(3)

    def layer_forward(self, i, b, s):
        run, m = self.run, self.m
        items = m.saved_per_layer(b, s)
        if self.ckpt:
            keep = [run.new(items[0][1] // 2 * 2, "activations", op="pointwise")]
            tmp = [run.new(x, "activations", op="mm" if "proj" in n else "pointwise") for n, x in items[1:]]
            run.free_all(tmp)
            return keep
        out = []
        for n, x in items:
            if n == "gate_up_proj":
                run.at(*self.model_frames(i, "mlp"))
            out.append(run.new(x, "activations", op="sdpa" if n == "attn_output" else ("mm" if "proj" in n else "pointwise")))
        tmp = run.new(b * s * m.hidden * 2, "temporaries", op="pointwise")
        run.free(tmp)
        return out

    def layer_backward(self, i, b, s, saved, gh):
        run, m = self.run, self.m
        t = b * s
        recomputed = []
        if self.ckpt:
            run.engine = "CheckpointFunctionBackward"
            run.hook_py = [(self.p.lib("torch/utils/checkpoint.py"), "backward", 319)] + self.model_frames(i, "mlp")[-6:]
            recomputed = [run.new(x, "activations", op="mm" if "proj" in n else "pointwise")
                          for n, x in m.saved_per_layer(b, s)[1:]]
            run.hook_py = None
        run.engine = "MmBackward0"
        g_inter = run.new(t * m.inter * 4, "temporaries", op="mm")
        self.strategy.param_grads(i, "mlp")
        g_act = run.new(t * m.inter * 2, "temporaries", op="pointwise")
        run.free(g_inter)
        g_h = run.new(t * m.hidden * 2, "temporaries", op="mm")
        run.free(g_act)
        run.engine = "ScaledDotProductFlashAttentionBackward0"
        g_qkv = run.new(t * (m.hidden + 2 * m.kv_dim) * 2, "temporaries", op="sdpa")
        run.engine = "MmBackward0"
        self.strategy.param_grads(i, "attn")
        g_x = run.new(t * m.hidden * 2, "temporaries", op="mm")
        run.free_all([g_qkv, g_h, gh])
        run.free_all(recomputed)
        run.free_all(saved)
        return g_x


def sharded_bytes(numel, world, elem):
    per = (numel + world - 1) // world
    return per * elem


class Strategy:
    trainer = None

    def units(self):
        m = self.trainer.m
        return ["embed"] + list(range(m.layers)) + ["head"]

    def numel(self, unit):
        m = self.trainer.m
        if unit == "embed":
            return m.embed_numel()
        if unit == "head":
            return m.head_numel() + m.hidden
        return m.layer_numel()

    def pre_forward(self, unit): pass
    def post_forward(self, unit): pass
    def pre_backward(self, unit): pass
    def post_backward(self, unit): pass
    def end_backward(self): pass
    def param_grads(self, unit, part=None): pass


class Plain(Strategy):
    """One GPU: parameters in `param_bytes` per element, AccumulateGrad's .grad of the same dtype,
    torch.optim.AdamW (foreach) creating exp_avg / exp_avg_sq at the first step()."""

    def __init__(self, param_bytes=2, state_on_gpu=True, state_bytes=None):
        self.pb, self.state_on_gpu = param_bytes, state_on_gpu
        self.sb = state_bytes or param_bytes
        self.params, self.grads, self.state = {}, {}, []

    def parts(self, unit):
        m = self.trainer.m
        if isinstance(unit, int):
            return {"attn": m.attn_numel(), "mlp": m.mlp_numel()}
        if unit == "head" and m.tied:
            return {}
        return {"w": self.numel(unit) if unit != "head" else m.head_numel()}

    def load(self, load_frames):
        run = self.trainer.run
        run.phase = "load"
        run.at(*load_frames)
        for u in self.units():
            for part, n in self.parts(u).items():
                self.params[(u, part)] = run.new(n * self.pb, "parameters", op="copy")
        run.tick(5)

    def param_grads(self, unit, part=None):
        run = self.trainer.run
        for key, n in self.parts(unit).items():
            if part is not None and key != part:
                continue
            if (unit, key) not in self.grads:
                self.grads[(unit, key)] = run.new(n * self.pb, "gradients", op="mm")

    def optimizer_step(self, step):
        run = self.trainer.run
        lib = run.fr.lib
        base = run.py
        if self.state_on_gpu and not self.state:
            run.at(*base, (lib("torch/optim/optimizer.py"), "wrapper", 485), (lib("torch/optim/optimizer.py"), "_use_grad", 79),
                   (lib("torch/optim/adam.py"), "step", 235), (lib("torch/optim/adam.py"), "_init_group", 178))
            for key in self.params:
                n = self.params[key].nbytes // self.pb
                self.state.append(run.new(n * self.sb, "optimizer_state", op="zeros_like"))
                self.state.append(run.new(n * self.sb, "optimizer_state", op="zeros_like"))
                run.tick()
        if self.state_on_gpu:
            run.at(*base, (lib("torch/optim/optimizer.py"), "wrapper", 485), (lib("torch/optim/optimizer.py"), "_use_grad", 79),
                   (lib("torch/optim/adam.py"), "step", 246), (lib("torch/optim/adam.py"), "adam", 933),
                   (lib("torch/optim/adam.py"), "_multi_tensor_adam", 741))
            total = sum(p.nbytes // self.pb for p in self.params.values())
            tmp = run.new(total * self.sb, "temporaries", op="foreach")
            run.free(tmp)
        run.at(*base)
        run.tick(2)

    def zero_grad(self):
        run = self.trainer.run
        lib = run.fr.lib
        run.push((lib("torch/optim/optimizer.py"), "zero_grad", 996))
        for key in list(self.grads):
            run.free(self.grads.pop(key))
        run.pop()


class FSDP2(Strategy):
    """fully_shard per decoder layer and on the root (embedding, final norm, lm_head), with
    MixedPrecisionPolicy(param_dtype=bf16, reduce_dtype=fp32): fp32 sharded parameters, bf16
    all-gathers (output on the copy-in stream, copied out into per-parameter unsharded tensors on
    the default stream), fp32 reduce-scatter whose output, allocated on the reduce-scatter stream,
    *is* the sharded gradient until zero_grad (foreach_reduce in _fsdp_collectives.py)."""

    def __init__(self, world, reshard_after_forward=True, state_on_gpu=True):
        self.world, self.raf, self.state_on_gpu = world, reshard_after_forward, state_on_gpu
        self.sharded, self.unsharded, self.grads, self.state = {}, {}, {}, []
        self.rs_input = None
        self.root_gathered = False

    def fsdp(self, rel):
        return self.trainer.p.lib("torch/distributed/fsdp/_fully_shard/" + rel)

    def load(self, load_frames):
        run = self.trainer.run
        run.phase = "load"
        for u in self.units():
            run.at(*load_frames, (self.fsdp("fully_shard.py"), "fully_shard", 223),
                   (self.fsdp("_fsdp_param_group.py"), "__init__", 145), (self.fsdp("_fsdp_param.py"), "__init__", 262),
                   (self.fsdp("_fsdp_param.py"), "_init_sharded_param", 380))
            self.sharded[u] = run.new(sharded_bytes(self.numel(u), self.world, 4), "parameters", op="copy")
        run.tick(5)

    def group(self, unit):
        return "root" if unit in ("embed", "head") else unit

    def _all_gather(self, unit, where):
        run = self.trainer.run
        key = self.group(unit)
        if key in self.unsharded:
            return
        numel = self.numel("embed") + self.numel("head") if key == "root" else self.numel(unit)
        base = run.py if run.engine is None else None
        hook = [(self.fsdp("_fsdp_state.py"), where, 251 if where == "_pre_forward" else 279),
                (self.fsdp("_fsdp_param_group.py"), "pre_forward" if where == "_pre_forward" else "pre_backward", 349 if where == "_pre_forward" else 461),
                (self.fsdp("_fsdp_param_group.py"), "unshard", 279)]
        if run.engine is not None:
            run.hook_py = [(run.fr.lib("torch/distributed/fsdp/_fully_shard/_fsdp_state.py"), "_pre_backward", 279)] + hook[1:]
        coll = [(self.fsdp("_fsdp_collectives.py"), "foreach_all_gather", 254)]
        copy_in = run.new(sharded_bytes(numel, self.world, 2), "temporaries", op="empty", stream=AG_COPY_IN,
                          extra=([] if run.engine else hook) + [(self.fsdp("_fsdp_collectives.py"), "foreach_all_gather", 229),
                                                                 (self.fsdp("_fsdp_collectives.py"), "_get_param_all_gather_inputs", 318)])
        out = run.new(sharded_bytes(numel, self.world, 2) * self.world, "communication", op="empty", stream=AG_COPY_IN,
                      extra=([] if run.engine else hook) + coll)
        run.free(copy_in)
        run.tick()
        wait = [(self.fsdp("_fsdp_param_group.py"), "wait_for_unshard", 318),
                (self.fsdp("_fsdp_collectives.py"), "foreach_all_gather_copy_out", 362),
                (self.fsdp("_fsdp_param.py"), "alloc_all_gather_outputs", 690)]
        if run.engine is None:
            hook2 = hook[:2] + wait
        else:
            run.hook_py = [(self.fsdp("_fsdp_state.py"), "_pre_backward", 279), hook[1]] + wait
            hook2 = []
        self.unsharded[key] = run.new(numel * 2, "communication", op="empty", extra=hook2)
        run.free(out, extra=hook2[:3] if hook2 else [])
        if run.engine is not None:
            run.hook_py = None

    def pre_forward(self, unit):
        if unit == "embed":
            self._all_gather(unit, "_pre_forward")
        elif isinstance(unit, int):
            self._all_gather(unit, "_pre_forward")

    def post_forward(self, unit):
        run = self.trainer.run
        if isinstance(unit, int) and self.raf and unit in self.unsharded:
            run.free(self.unsharded.pop(unit), extra=[(self.fsdp("_fsdp_state.py"), "_post_forward", 290),
                                                      (self.fsdp("_fsdp_param_group.py"), "reshard", 377)])

    def pre_backward(self, unit):
        if isinstance(unit, int):
            self._all_gather(unit, "_pre_backward")

    def param_grads(self, unit, part=None):
        """Autograd's gradients of the unsharded bf16 parameters, held until foreach_reduce."""
        run = self.trainer.run
        m = self.trainer.m
        if isinstance(unit, int):
            n = m.mlp_numel() if part == "mlp" else m.attn_numel()
        else:
            n = self.numel(unit)
        self.pending_grads = getattr(self, "pending_grads", [])
        self.pending_grads.append(run.new(n * 2, "gradients", op="mm"))

    def post_backward(self, unit):
        if unit == "head":
            return
        self._reduce(self.group(unit) if unit != "embed" else "root")

    def _reduce(self, key):
        run = self.trainer.run
        numel = self.numel("embed") + self.numel("head") if key == "root" else self.numel(key)
        run.hook_py = [(self.fsdp("_fsdp_state.py"), "_post_backward", 305) if False else
                       (run.fr.lib("torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py"), "backward", 883),
                       (self.fsdp("_fsdp_param_group.py"), "post_backward", 481),
                       (self.fsdp("_fsdp_collectives.py"), "foreach_reduce", 439)]
        if self.rs_input is not None:
            run.free(self.rs_input)
            self.rs_input = None
        rs_in = run.new(sharded_bytes(numel, self.world, 4) * self.world, "communication", op="empty")
        run.free_all(self.pending_grads)
        self.pending_grads = []
        run.hook_py = run.hook_py[:2] + [(self.fsdp("_fsdp_collectives.py"), "foreach_reduce", 470)]
        if key not in self.grads:
            self.grads[key] = run.new(sharded_bytes(numel, self.world, 4), "gradients", op="empty", stream=RS_STREAM)
        self.rs_input = rs_in
        run.hook_py = [(self.fsdp("_fsdp_param_group.py"), "post_backward", 500), (self.fsdp("_fsdp_param_group.py"), "reshard", 377)]
        if key in self.unsharded and (key != "root"):
            run.free(self.unsharded.pop(key))
        run.hook_py = None

    def end_backward(self):
        run = self.trainer.run
        run.hook_py = [(self.fsdp("_fsdp_state.py"), "_root_post_backward_final_callback", 346)]
        if self.rs_input is not None:
            run.free(self.rs_input)
            self.rs_input = None
        if "root" in self.unsharded:
            run.free(self.unsharded.pop("root"))
        for key in [k for k in self.unsharded]:
            run.free(self.unsharded.pop(key))
        run.hook_py = None

    def optimizer_step(self, step):
        run = self.trainer.run
        lib = run.fr.lib
        base = run.py
        if not self.state_on_gpu:
            run.tick(2)
            return
        if not self.state:
            run.at(*base, (lib("torch/optim/optimizer.py"), "wrapper", 485), (lib("torch/optim/optimizer.py"), "_use_grad", 79),
                   (lib("torch/optim/adam.py"), "step", 235), (lib("torch/optim/adam.py"), "_init_group", 178))
            for u in self.units():
                n = sharded_bytes(self.numel(u), self.world, 4)
                self.state.append(run.new(n, "optimizer_state", op="zeros_like"))
                self.state.append(run.new(n, "optimizer_state", op="zeros_like"))
            run.tick()
        run.at(*base, (lib("torch/optim/optimizer.py"), "wrapper", 485), (lib("torch/optim/optimizer.py"), "_use_grad", 79),
               (lib("torch/optim/adam.py"), "step", 246), (lib("torch/optim/adam.py"), "adam", 933),
               (lib("torch/optim/adam.py"), "_multi_tensor_adam", 741))
        tmp = run.new(sum(sharded_bytes(self.numel(u), self.world, 4) for u in self.units()), "temporaries", op="foreach")
        run.free(tmp)
        run.at(*base)
        run.tick(2)

    def zero_grad(self):
        run = self.trainer.run
        run.push((run.fr.lib("torch/optim/optimizer.py"), "zero_grad", 996))
        for key in list(self.grads):
            run.free(self.grads.pop(key))
        run.pop()


class ZeRO3(Strategy):
    """DeepSpeed ZeRO-3 (bf16): bf16 parameter partitions, fp32 master partitions and Adam moments
    created at engine init (initialize_optimizer_states), a contiguous gradient partition buffer,
    an IPG bucket of reduce_bucket_size elements; parameters gathered per sub-module on the
    all-gather stream by PartitionedParameterCoordinator.fetch_sub_module, which prefetches the
    following sub-modules up to stage3_prefetch_bucket_size elements (within
    stage3_max_live_parameters), and released after use (free_param: record_stream on the compute
    stream, so the block waits for its event)."""

    def __init__(self, world, prefetch_bucket=5e7, max_live=1e9, reduce_bucket=5e8):
        self.world, self.bucket, self.max_live, self.reduce_bucket = world, prefetch_bucket, max_live, reduce_bucket
        self.gathered = {}
        self.ipg_fill = 0
        self.pending_grads = []

    def ds(self, rel):
        return self.trainer.p.lib("deepspeed/runtime/zero/" + rel)

    def sub_units(self):
        m = self.trainer.m
        out = [("embed", None, m.embed_numel())]
        for i in range(m.layers):
            out += [(i, "attn", m.attn_numel()), (i, "mlp", m.mlp_numel())]
        out.append(("head", None, m.head_numel() + m.hidden))
        return out

    def load(self, load_frames):
        run = self.trainer.run
        run.phase = "load"
        m = self.trainer.m
        run.at(*load_frames, (run.fr.lib("transformers/modeling_utils.py"), "from_pretrained", 4250),
               (self.ds("partition_parameters.py"), "_post_init_method", 1010), (self.ds("partition_parameters.py"), "_partition_param", 1618))
        for u, part, n in self.sub_units():
            run.new(sharded_bytes(n, self.world, 2), "parameters", op="empty")
        total = sharded_bytes(m.numel(), self.world, 1)
        run.at(*load_frames[:-1], (load_frames[-1][0], "main", load_frames[-1][2] + 9),
               (run.fr.lib("deepspeed/__init__.py"), "initialize", 193), (run.fr.lib("deepspeed/runtime/engine.py"), "__init__", 328),
               (run.fr.lib("deepspeed/runtime/engine.py"), "_configure_zero_optimizer", 1744), (self.ds("stage3.py"), "__init__", 346))
        run.push((self.ds("stage3.py"), "_create_fp32_partitions", 933))
        run.new(total * 4, "optimizer_state", op="copy")
        run.pop()
        run.push((self.ds("stage3.py"), "__init__", 402))
        run.new(total * 2, "gradients", op="empty")
        run.pop()
        run.push((self.ds("stage3.py"), "__init__", 294))
        self.ipg = run.new(int(self.reduce_bucket) * 2, "communication", op="empty")
        run.pop()
        run.push((self.ds("stage3.py"), "initialize_optimizer_states", 1046),
                 (run.fr.lib("deepspeed/ops/adam/fused_adam.py"), "step", 157))
        run.new(total * 4, "optimizer_state", op="zeros_like")
        run.new(total * 4, "optimizer_state", op="zeros_like")
        run.pop(2)
        run.tick(5)

    def _order(self, forward):
        subs = self.sub_units()
        return subs if forward else list(reversed(subs))

    def _fetch(self, unit, part, forward):
        run = self.trainer.run
        order = self._order(forward)
        idx = next(k for k, (u, p, _) in enumerate(order) if u == unit and p == part)
        coord = [(self.ds("parameter_offload.py"), "_pre_forward_module_hook" if forward else "_pre_backward_module_hook", 474),
                 (run.fr.lib("torch/utils/_contextlib.py"), "decorate_context", 116),
                 (self.ds("parameter_offload.py"), "pre_sub_module_forward_function" if forward else "pre_sub_module_backward_function", 590),
                 (self.ds("partitioned_param_coordinator.py"), "fetch_sub_module", 331)]
        want = [order[idx]]
        prefetched = 0
        if run.step < 2:  # the coordinator prefetches only once step 1 has recorded the trace
            order = order[:idx + 1]
        live = sum(n for (_, _, n) in [(k[0], k[1], self.gathered[k][1]) for k in self.gathered])
        for u, p, n in order[idx + 1:]:
            if prefetched >= self.bucket:
                break
            if live + prefetched + n > self.max_live:
                break
            want.append((u, p, n))
            prefetched += n
        for u, p, n in want:
            if (u, p) in self.gathered:
                continue
            extra = coord + [(self.ds("partitioned_param_coordinator.py"), "_PartitionedParameterCoordinator__all_gather_params_", 466),
                             (self.ds("partition_parameters.py"), "all_gather_coalesced", 1303)]
            if run.engine is not None:
                run.hook_py = [(run.fr.lib("torch/autograd/function.py"), "apply", 307),
                               (self.ds("parameter_offload.py"), "backward", 370)] + coord[2:] + extra[len(coord):]
                t = run.new(n * 2, "communication", op="empty", stream=AG_STREAM)
                run.hook_py = None
            else:
                t = run.new(n * 2, "communication", op="empty", stream=AG_STREAM, extra=extra)
            run.record_stream(t, DEFAULT)
            self.gathered[(u, p)] = (t, n)

    def _release(self, unit, part, forward):
        run = self.trainer.run
        key = (unit, part)
        if key not in self.gathered:
            return
        t, _ = self.gathered.pop(key)
        extra = [(self.ds("parameter_offload.py"), "_post_forward_module_hook" if forward else "_post_backward_module_hook", 491),
                 (self.ds("parameter_offload.py"), "post_sub_module_forward_function", 611),
                 (self.ds("partitioned_param_coordinator.py"), "release_sub_module", 454),
                 (self.ds("partitioned_param_coordinator.py"), "_PartitionedParameterCoordinator__release_param", 590),
                 (self.ds("partition_parameters.py"), "free_param", 270)]
        if run.engine is not None:
            run.hook_py = extra[1:]
            run.free(t, ready_after=2)
            run.hook_py = None
        else:
            run.free(t, extra=extra, ready_after=2)

    def pre_forward(self, unit):
        if isinstance(unit, int):
            self._fetch(unit, "attn", True)
        else:
            self._fetch(unit, None, True)

    def post_forward(self, unit):
        if isinstance(unit, int):
            self._release(unit, "attn", True)
            self._fetch(unit, "mlp", True)
            self._release(unit, "mlp", True)
        else:
            self._release(unit, None, True)

    def pre_backward(self, unit):
        if isinstance(unit, int):
            self._fetch(unit, "mlp", False)
        else:
            self._fetch(unit, None, False)

    def param_grads(self, unit, part=None):
        run = self.trainer.run
        m = self.trainer.m
        if isinstance(unit, int):
            if part == "attn":
                self._release(unit, "mlp", False)
                self._fetch(unit, "attn", False)
            n = m.mlp_numel() if part == "mlp" else m.attn_numel()
        else:
            n = (m.head_numel() + m.hidden) if unit == "head" else m.embed_numel()
        g = run.new(n * 2, "gradients", op="mm")
        run.hook_py = [(self.ds("stage3.py"), "reduce_partition_and_remove_grads", 1213),
                       (self.ds("stage3.py"), "reduce_ready_partitions_and_remove_grads", 1531),
                       (self.ds("stage3.py"), "_DeepSpeedZeroOptimizer_Stage3__add_grad_to_ipg_bucket", 1164)]
        self.ipg_fill += n
        if self.ipg_fill >= self.reduce_bucket:
            run.hook_py = run.hook_py[:2] + [(self.ds("stage3.py"), "_DeepSpeedZeroOptimizer_Stage3__reduce_and_partition_ipg_grads", 1283),
                                             (self.ds("stage3.py"), "_DeepSpeedZeroOptimizer_Stage3__avg_scatter_grads", 1382),
                                             (run.fr.lib("deepspeed/runtime/comm/coalesced_collectives.py"), "reduce_scatter_coalesced", 120)]
            out = run.new(sharded_bytes(int(self.reduce_bucket), self.world, 2), "communication", op="empty")
            run.free(out)
            self.ipg_fill = 0
        run.free(g)
        run.hook_py = None

    def post_backward(self, unit):
        if isinstance(unit, int):
            self._release(unit, "attn", False)
        else:
            self._release(unit, None, False)

    def end_backward(self):
        run = self.trainer.run
        for key in list(self.gathered):
            self._release(key[0], key[1], False)
        run.engine = None

    def optimizer_step(self, step):
        run = self.trainer.run
        run.push((run.fr.lib("deepspeed/runtime/engine.py"), "step", 2401), (self.ds("stage3.py"), "step", 2158),
                 (self.ds("stage3.py"), "_optimizer_step", 1030), (run.fr.lib("deepspeed/ops/adam/fused_adam.py"), "step", 191))
        run.tick(3)
        run.pop(4)

    def zero_grad(self):
        pass
