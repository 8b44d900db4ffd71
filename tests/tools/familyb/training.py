"""A transformer training run as the allocator sees it, for family B.

Tensors are modelled at the granularity the allocator cares about: one allocation per weight,
per saved activation, per gradient, per optimizer buffer and per sizeable temporary. Sizes come
from the model's shape (d_model, heads, kv heads, d_ff, vocab), the batch (B x S tokens) and the
precision regime:
  amp          fp32 weights and gradients, bf16 activations under autocast; autocast keeps a bf16
               copy of each matmul weight until backward
  bf16_master  bf16 weights and gradients; the optimizer keeps fp32 master weights, created with
               its state at the first step
  fp32         everything in fp32
Optimizers: foreach AdamW (state lazily at the first step; `_foreach_sqrt` allocates a full fp32
copy of the state per step, plus fp32 copies of 16-bit gradients), fused AdamW (no step
temporaries), 8-bit Adam (one byte per moment + block absmax), SGD with momentum.
Every allocation carries a tag (param, grad, state, master, act, temp, input, kept, evalout) that
only the generator reads, to check its own labels.
"""

from cachingallocator import OutOfMemory


class Shape:
    def __init__(self, name, family, layers, d, heads, kv_heads, ff, vocab, attn="sdpa", tied=None, positions=0):
        self.name = name
        self.family = family  # "gpt2" or "llama"
        self.layers = layers
        self.d = d
        self.heads = heads
        self.kv_heads = kv_heads
        self.ff = ff
        self.vocab = vocab
        self.attn = attn  # "eager" (materialises B*H*S*S scores) or "sdpa"
        self.tied = (family == "gpt2") if tied is None else tied
        self.positions = positions

    @property
    def dkv(self):
        return self.d // self.heads * self.kv_heads

    def layer_weights(self, i):
        d, f, kv = self.d, self.ff, self.dkv
        if self.family == "gpt2":
            p = "transformer.h.%d." % i
            return [(p + "ln_1.weight", d), (p + "ln_1.bias", d), (p + "attn.c_attn.weight", d * (d + 2 * kv)),
                    (p + "attn.c_attn.bias", d + 2 * kv), (p + "attn.c_proj.weight", d * d), (p + "attn.c_proj.bias", d),
                    (p + "ln_2.weight", d), (p + "ln_2.bias", d), (p + "mlp.c_fc.weight", d * f), (p + "mlp.c_fc.bias", f),
                    (p + "mlp.c_proj.weight", f * d), (p + "mlp.c_proj.bias", d)]
        p = "model.layers.%d." % i
        return [(p + "input_layernorm.weight", d), (p + "self_attn.q_proj.weight", d * d),
                (p + "self_attn.k_proj.weight", d * kv), (p + "self_attn.v_proj.weight", d * kv),
                (p + "self_attn.o_proj.weight", d * d), (p + "post_attention_layernorm.weight", d),
                (p + "mlp.gate_proj.weight", d * f), (p + "mlp.up_proj.weight", d * f), (p + "mlp.down_proj.weight", f * d)]

    def weights(self):
        out = []
        if self.family == "gpt2":
            out.append(("transformer.wte.weight", self.vocab * self.d))
            out.append(("transformer.wpe.weight", (self.positions or 1024) * self.d))
        else:
            out.append(("model.embed_tokens.weight", self.vocab * self.d))
        for i in range(self.layers):
            out.extend(self.layer_weights(i))
        if self.family == "gpt2":
            out += [("transformer.ln_f.weight", self.d), ("transformer.ln_f.bias", self.d)]
        else:
            out.append(("model.norm.weight", self.d))
        if not self.tied:
            out.append(("lm_head.weight", self.vocab * self.d))
        return out

    def numel(self):
        return sum(n for _, n in self.weights())

    def modeling(self):
        return "transformers/models/%s/modeling_%s.py" % (self.family, self.family)


class Run:
    """One process training `shape` on `device`; the loop code drives it step by step."""

    def __init__(self, device, stacks, shape, precision="amp", optimizer="adamw_foreach"):
        self.dev = device
        self.st = stacks
        self.shape = shape
        self.precision = precision
        self.optimizer = optimizer
        self.param_bytes = 2 if precision == "bf16_master" else 4
        self.act_bytes = 4 if precision == "fp32" else 2
        self.params = []  # (name, numel, block)
        self.grads = {}
        self.state = {}
        self.step = 0
        self.phase = "load"
        self.step_blocks = {}  # everything allocated in the current step that is not persistent
        self.kept = []  # what the user's code keeps across steps
        self.optimizer_started = False

    # -- plumbing -----------------------------------------------------------------------------
    def alloc(self, size, tag, frames, transient=True):
        try:
            block = self.dev.malloc(int(size), frames, tag)
        except OutOfMemory as oom:
            oom.frames = frames
            oom.context = list(self.st.context)
            oom.phase = self.phase
            oom.step = self.step
            oom.tag = tag
            raise
        if transient:
            self.step_blocks[block] = None
        return block

    def free(self, block):
        if block is None or not block.allocated:
            return
        self.dev.free(block)
        self.step_blocks.pop(block, None)

    def free_all(self, blocks):
        for block in blocks:
            self.free(block)
        del blocks[:]

    def unwind(self):
        """The exception left the step and its frames: every tensor of the step is released."""
        for block in list(self.step_blocks):
            if block.allocated:
                self.dev.free(block)
        self.step_blocks = {}

    def _call(self, module_file, line, name):
        st = self.st
        return [st.torch("nn/modules/module.py", 1736, "_wrapped_call_impl"),
                st.torch("nn/modules/module.py", 1747, "_call_impl"),
                st.lib(module_file, line, name)]

    # -- load ---------------------------------------------------------------------------------
    def load(self, how="to"):
        self.phase = "load"
        st = self.st
        if how == "to":
            tail = [st.torch("nn/modules/module.py", 1340, "to"), st.torch("nn/modules/module.py", 900, "_apply"),
                    st.torch("nn/modules/module.py", 927, "_apply"), st.torch("nn/modules/module.py", 1326, "convert")]
        else:
            tail = [st.lib("transformers/modeling_utils.py", 4225, "from_pretrained"),
                    st.lib("transformers/modeling_utils.py", 4722, "_load_pretrained_model"),
                    st.lib("transformers/modeling_utils.py", 942, "load_state_dict"),
                    st.lib("accelerate/utils/modeling.py", 329, "set_module_tensor_to_device")]
        frames = st.here(tail, ["at::native::_to_copy", "at::_ops::_to_copy::call"])
        for name, numel in self.shape.weights():
            block = self.alloc(numel * self.param_bytes, "param", frames, transient=False)
            self.params.append((name, numel, block))
            self.dev.tick(300)

    def inputs(self, batch, seq, line=0):
        self.phase = "data"
        st = self.st
        frames = st.here([st.user(line or 57, "to_device"), st.torch("utils/_pytree.py", 0, "tree_map")] if line == 0 else
                         [st.lib("transformers/trainer.py", 3598, "_prepare_input")], ["at::native::_to_copy"])
        tokens = batch * seq
        return [self.alloc(tokens * 8, "input", frames) for _ in range(3)]

    # -- forward ------------------------------------------------------------------------------
    def forward(self, batch, seq, train=True, line=None):
        """Returns (saved activations per layer, loss-side saved blocks); in eval, the logits."""
        self.phase = "forward" if train else "eval"
        sh, st, a = self.shape, self.st, self.act_bytes
        tok = batch * seq
        model_forward = st.lib(sh.modeling(), 1189 if sh.family == "llama" else 1062, "forward")
        st.push(*self._call(sh.modeling(), 1189 if sh.family == "llama" else 1062, "forward"))
        inner = st.lib(sh.modeling(), 945 if sh.family == "llama" else 922, "forward")
        st.push(*self._call(sh.modeling(), 945 if sh.family == "llama" else 922, "forward"))
        emb = self.alloc(tok * sh.d * a, "act", st.here([st.torch("nn/functional.py", 2551, "embedding")],
                                                          ["at::native::embedding"]))
        hidden = emb
        per_layer = []
        for i in range(sh.layers):
            saved = []
            layer_line = 657 if sh.family == "llama" else 611
            st.push(*self._call(sh.modeling(), layer_line, "forward"))
            hidden_out = self._layer(i, batch, seq, hidden, saved, train)
            st.pop(3)
            if not train:
                self.free(hidden)
                self.free_all(saved)
            else:
                saved.append(hidden)
            hidden = hidden_out
            per_layer.append(saved)
            self.dev.tick(900)
        # final norm and the head
        norm = self.alloc(tok * sh.d * a, "act", st.here([st.torch("nn/functional.py", 2900, "layer_norm" if sh.family == "gpt2" else "rms_norm")]))
        st.pop(3)
        head = [hidden, norm]
        logits = self.alloc(tok * sh.vocab * a, "act" if train else "evalout",
                            st.here([st.lib(sh.modeling(), 1205 if sh.family == "llama" else 1080, "forward"),
                                     st.torch("nn/modules/linear.py", 125, "forward")], ["at::native::mm"]))
        st.pop(3)
        if not train:
            self.free(hidden)
            self.free(norm)
            return logits
        head.append(logits)
        loss_frames = st.here([model_forward[:2] + ("forward",), st.lib("transformers/loss/loss_utils.py", 47, "ForCausalLMLoss"),
                               st.torch("nn/functional.py", 3494, "cross_entropy")], ["at::native::log_softmax"])
        upcast = self.alloc(tok * sh.vocab * 4, "act", loss_frames)
        logp = self.alloc(tok * sh.vocab * 4, "act", loss_frames)
        loss = self.alloc(4, "act", loss_frames)
        head += [upcast, logp]
        return per_layer, head, loss

    def _layer(self, i, batch, seq, hidden, saved, train):
        sh, st, a = self.shape, self.st, self.act_bytes
        tok = batch * seq
        d, H, kv, f = sh.d, sh.heads, sh.dkv, sh.ff
        mf = sh.modeling()
        at = lambda line, name, op=None: st.here([st.lib(mf, line, name)] + ([op] if op else []))  # noqa: E731
        if self.precision == "amp" and train:
            # autocast's cast cache: a bf16 copy of each matmul weight, alive until backward uses it
            for name, numel, block in self.params:
                if name.startswith(("transformer.h.%d." % i, "model.layers.%d." % i)) and numel > d:
                    saved.append(self.alloc(numel * 2, "act", at(300, "forward", st.torch("nn/modules/linear.py", 125, "forward"))))
        saved.append(self.alloc(tok * d * a, "act", st.here([st.torch("nn/functional.py", 2910, "layer_norm")]
                                                             if sh.family == "gpt2" else [st.lib(mf, 74, "forward")])))
        saved.append(self.alloc(tok * 4, "act", at(75 if sh.family == "llama" else 2911, "forward")))
        # projections
        if sh.family == "gpt2":
            saved.append(self.alloc(tok * (d + 2 * kv) * a, "act", at(318, "forward", st.lib("transformers/pytorch_utils.py", 107, "forward"))))
        else:
            for size, line in ((d, 570), (kv, 571), (kv, 572)):
                saved.append(self.alloc(tok * size * a, "act", at(line, "forward", st.torch("nn/modules/linear.py", 125, "forward"))))
            tmp = self.alloc(tok * d * a, "temp", at(215, "rotate_half"))
            saved.append(self.alloc(tok * d * a, "act", at(218, "apply_rotary_pos_emb")))
            saved.append(self.alloc(tok * kv * a, "act", at(219, "apply_rotary_pos_emb")))
            self.free(tmp)
        if sh.attn == "eager":
            if kv != d:
                saved.append(self.alloc(tok * d * a, "act", at(228, "repeat_kv")))
                saved.append(self.alloc(tok * d * a, "act", at(228, "repeat_kv")))
            scores = batch * H * seq * seq
            raw = self.alloc(scores * a, "temp", at(265 if sh.family == "llama" else 206, "eager_attention_forward"))
            up = self.alloc(scores * 4, "temp", st.here([st.lib(mf, 270 if sh.family == "llama" else 223, "eager_attention_forward"),
                                                         st.torch("nn/functional.py", 2140, "softmax")], ["at::native::softmax"]))
            probs = self.alloc(scores * a, "act", at(271 if sh.family == "llama" else 226, "eager_attention_forward"))
            self.free(up)
            self.free(raw)
            saved.append(probs)
            if sh.family == "gpt2" and train:
                saved.append(self.alloc(scores, "act", st.here([st.torch("nn/functional.py", 1425, "dropout")], ["at::native::fused_dropout"])))
                saved.append(self.alloc(scores * a, "act", st.here([st.torch("nn/functional.py", 1425, "dropout")])))
            saved.append(self.alloc(tok * d * a, "act", at(281 if sh.family == "llama" else 231, "eager_attention_forward")))
        else:
            saved.append(self.alloc(tok * d * a, "act", st.here([st.lib(mf, 40, "sdpa_attention_forward") if sh.family == "llama" else st.lib(mf, 330, "_attn"),
                                                                 st.torch("nn/functional.py", 0, "scaled_dot_product_attention")],
                                                                ["at::native::_scaled_dot_product_flash_attention_cuda"])))
            saved.append(self.alloc(batch * H * seq * 4, "act", st.here([st.torch("nn/functional.py", 0, "scaled_dot_product_attention")],
                                                                         ["at::native::_flash_attention_forward"])))
        o = self.alloc(tok * d * a, "temp", at(330 if sh.family == "gpt2" else 586, "forward", st.torch("nn/modules/linear.py", 125, "forward")))
        resid = self.alloc(tok * d * a, "act", at(620 if sh.family == "gpt2" else 667, "forward"))
        self.free(o)
        saved.append(resid)
        saved.append(self.alloc(tok * d * a, "act", at(2910 if sh.family == "gpt2" else 74, "forward")))
        if sh.family == "gpt2":
            saved.append(self.alloc(tok * f * a, "act", at(540, "forward", st.lib("transformers/pytorch_utils.py", 107, "forward"))))
            saved.append(self.alloc(tok * f * a, "act", at(541, "forward", st.lib("transformers/activations.py", 57, "forward"))))
        else:
            saved.append(self.alloc(tok * f * a, "act", at(604, "forward", st.torch("nn/modules/linear.py", 125, "forward"))))
            saved.append(self.alloc(tok * f * a, "act", at(604, "forward", st.torch("nn/functional.py", 2380, "silu"))))
            saved.append(self.alloc(tok * f * a, "act", at(604, "forward", st.torch("nn/modules/linear.py", 125, "forward"))))
            saved.append(self.alloc(tok * f * a, "act", at(604, "forward")))
        down = self.alloc(tok * d * a, "temp", at(542 if sh.family == "gpt2" else 604, "forward", st.torch("nn/modules/linear.py", 125, "forward")))
        out = self.alloc(tok * d * a, "act", at(627 if sh.family == "gpt2" else 672, "forward"))
        self.free(down)
        return out

    # -- backward -----------------------------------------------------------------------------
    def backward(self, batch, seq, per_layer, head, loss):
        self.phase = "backward"
        sh, st, a = self.shape, self.st, self.act_bytes
        tok = batch * seq
        gb = self.param_bytes
        grad_logp = self.alloc(tok * sh.vocab * 4, "temp", st.engine("LogSoftmaxBackward0"))
        self.free(head.pop())  # logp
        self.free(head.pop())  # fp32 upcast
        grad_logits = self.alloc(tok * sh.vocab * a, "temp", st.engine("ToCopyBackward0"))
        self.free(grad_logp)
        grad_hidden = self.alloc(tok * sh.d * a, "temp", st.engine("MmBackward0"))
        if not sh.tied:
            self._grad("lm_head.weight", sh.vocab * sh.d, gb, "MmBackward0")
        else:
            self._grad(sh.weights()[0][0], sh.vocab * sh.d, gb, "MmBackward0")
        self.free(grad_logits)
        self.free_all(head)
        self.free(loss)
        for i in reversed(range(sh.layers)):
            saved = per_layer[i]
            tmp_ff = self.alloc(tok * sh.ff * a, "temp", st.engine("MmBackward0"))
            tmp_ff2 = self.alloc(tok * sh.ff * a, "temp", st.engine("GeluBackward0" if sh.family == "gpt2" else "SiluBackward0"))
            for name, numel in reversed(sh.layer_weights(i)):
                if "mlp" in name:
                    self._grad(name, numel, gb, "MmBackward0" if numel > sh.d * 4 else "NativeLayerNormBackward0")
            self.free(tmp_ff)
            self.free(tmp_ff2)
            if sh.attn == "eager":
                scores = batch * sh.heads * seq * seq
                g1 = self.alloc(scores * a, "temp", st.engine("BmmBackward0"))
                g2 = self.alloc(scores * a, "temp", st.engine("SoftmaxBackward0"))
                self.free(g1)
                self.free(g2)
            else:
                g1 = self.alloc(tok * sh.d * a * 3, "temp", st.engine("ScaledDotProductFlashAttentionBackward0"))
                self.free(g1)
            for name, numel in reversed(sh.layer_weights(i)):
                if "mlp" not in name:
                    self._grad(name, numel, gb, "MmBackward0" if numel > sh.d * 4 else "NativeLayerNormBackward0")
            new_grad = self.alloc(tok * sh.d * a, "temp", st.engine("AddBackward0"))
            self.free(grad_hidden)
            grad_hidden = new_grad
            self.free_all(saved)
            self.dev.tick(2000)
        for name, numel in sh.weights():
            if name not in self.grads:
                self._grad(name, numel, gb, "EmbeddingBackward0")
        self.free(grad_hidden)
        for block in list(self.step_blocks):
            if block.tag == "act":
                self.free(block)

    def _grad(self, name, numel, grad_bytes, node):
        if name in self.grads:
            return
        st = self.st
        if self.precision == "amp" and numel > self.shape.d * 4:
            half = self.alloc(numel * 2, "temp", st.engine(node))
            self.grads[name] = self.alloc(numel * grad_bytes, "grad", st.engine("AccumulateGrad"), transient=False)
            self.free(half)
        else:
            self.grads[name] = self.alloc(numel * grad_bytes, "grad", st.engine("AccumulateGrad"), transient=False)

    def zero_grad(self):
        for block in self.grads.values():
            self.dev.free(block)
        self.grads = {}

    # -- optimizer ----------------------------------------------------------------------------
    def optimizer_step(self, line_frames):
        """line_frames: the python frames from the user's code down to optimizer.step()."""
        self.phase = "optimizer"
        st = self.st
        kind = self.optimizer
        first = not self.optimizer_started
        self.optimizer_started = True
        if kind.startswith("adamw"):
            step_file = "optim/adamw.py"
            base = [st.torch("optim/optimizer.py", 487, "wrapper"), st.torch("optim/optimizer.py", 91, "_use_grad"),
                    st.torch(step_file, 209, "step")]
        elif kind == "adam8bit":
            base = [st.torch("optim/optimizer.py", 487, "wrapper"), st.torch("utils/_contextlib.py", 116, "decorate_context"),
                    st.lib("bitsandbytes/optim/optimizer.py", 287, "step")]
        else:
            base = [st.torch("optim/optimizer.py", 487, "wrapper"), st.torch("optim/optimizer.py", 91, "_use_grad"),
                    st.torch("optim/sgd.py", 124, "step")]
        st.push(*line_frames)
        try:
            if first:
                self._init_state(base, kind)
            if kind == "adamw_foreach":
                temps = []
                impl = base + [st.torch(step_file, 755, "adamw"), st.torch(step_file, 590, "_multi_tensor_adamw")]
                if self.precision == "bf16_master":
                    for name, numel, _ in self.params:
                        temps.append(self.alloc(numel * 4, "temp", st.here(impl[:-1] + [st.torch(step_file, 560, "_multi_tensor_adamw")],
                                                                           ["at::native::_to_copy", "at::native::foreach_tensor_copy"])))
                frames = st.here(impl, ["at::native::foreach_tensor_sqrt_cuda", "at::_ops::_foreach_sqrt::call"])
                for name, numel, _ in self.params:
                    temps.append(self.alloc(numel * 4, "temp", frames))
                self.dev.tick(4000)
                self.free_all(temps)
            elif kind == "sgd":
                if not first:
                    pass
            self.dev.tick(3000)
        finally:
            st.pop(len(line_frames))

    def _init_state(self, base, kind):
        st = self.st
        if kind.startswith("adamw"):
            frames = st.here(base + [st.torch("optim/adamw.py", 188, "_init_group")], ["at::native::zeros_like"])
            master = st.here(base + [st.torch("optim/adamw.py", 181, "_init_group")], ["at::native::_to_copy"])
        elif kind == "adam8bit":
            frames = st.here(base + [st.lib("bitsandbytes/optim/optimizer.py", 488, "init_state")], ["at::native::zeros_like"])
            master = frames
        else:
            frames = st.here(base + [st.torch("optim/sgd.py", 361, "_multi_tensor_sgd")], ["at::native::clone"])
            master = frames
        for name, numel, _ in self.params:
            blocks = []
            if self.precision == "bf16_master":
                blocks.append(self.alloc(numel * 4, "master", master, transient=False))
            if kind == "adam8bit" and numel >= 4096:
                blocks.append(self.alloc(numel, "state", frames, transient=False))
                blocks.append(self.alloc(numel, "state", frames, transient=False))
                blocks.append(self.alloc(numel // 256 * 4 + 4, "state", frames, transient=False))
                blocks.append(self.alloc(numel // 256 * 4 + 4, "state", frames, transient=False))
            elif kind == "sgd":
                blocks.append(self.alloc(numel * 4, "state", frames, transient=False))
            else:
                blocks.append(self.alloc(numel * 4, "state", frames, transient=False))
                blocks.append(self.alloc(numel * 4, "state", frames, transient=False))
            self.state[name] = blocks

    # -- helpers for the scenarios ------------------------------------------------------------
    def fixed_bytes(self, projected=True):
        """weights + grads + optimizer state (+ master) as the run will need them, in bytes."""
        n = self.shape.numel()
        total = n * self.param_bytes * 2
        if self.precision == "bf16_master":
            total += n * 4
        if self.optimizer == "adam8bit":
            total += n * 2
        elif self.optimizer == "sgd":
            total += n * 4
        else:
            total += n * 8
        return total


__all__ = ["Shape", "Run", "OutOfMemory"]
