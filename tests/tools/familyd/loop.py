"""A compact decoder training loop for the scenarios that do not need FSDP1's or ZeRO-3's own
machinery: fixed state (weights, gradients, optimizer state, each possibly sharded), per-layer
forward with what each layer saves (or only its input under activation checkpointing, with the
recompute inside backward under torch/utils/checkpoint.py frames), the fp32 logits and loss, a
backward that frees each layer's activations as it makes its gradients, and a lazily created
optimizer state. Hooks let a scenario add its communication buffers per layer."""

from allocator import MiB

ENGINE_ACC = [("??", 0, "torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)", None)]
ENGINE_MM = [("??", 0, "torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)", None)]


class Loop:
    def __init__(self, r, P, model, user, hf=True, ckpt=None, grad_dtype=2, param_dtype=2, shard=1,
                 opt_bytes=8, master_bytes=0, fwd_frames=None, layer_frames=None):
        self.r, self.P, self.m, self.user = r, P, model, user
        self.ckpt = ckpt  # None, "reentrant" or "non_reentrant"
        self.grad_dtype, self.param_dtype, self.shard = grad_dtype, param_dtype, shard
        self.opt_bytes, self.master_bytes = opt_bytes, master_bytes
        sp = P.sp
        self.layer_file = sp + "/transformers/models/llama/modeling_llama.py"
        self.fwd = fwd_frames or [(user, 140, "train_step", "outputs = model(input_ids=input_ids, labels=labels)")]
        self.layer = layer_frames or P.call(self.layer_file, 330, "forward", "hidden_states, self_attn_weights = self.self_attn(")
        self.weights = []
        self.grads = None
        self.state = None
        self.hooks = {}

    def per_layer_weights(self):
        return self.param_dtype * self.m.layer_params // self.shard

    def load(self, frames=None):
        r, m = self.r, self.m
        r.phase = "load"
        with r.at(frames or self.P.to_device(self.user, 96, "model = model.to(device)")):
            for i in range(m.layers):
                for name, o, k in m.layer_linears():
                    self.weights.append(r.alloc(self.param_dtype * o * k // self.shard, "parameters"))
            self.weights.append(r.alloc(self.param_dtype * m.embed_params // self.shard, "parameters"))
            if m.head_params:
                self.weights.append(r.alloc(self.param_dtype * m.head_params // self.shard, "parameters"))
            if self.master_bytes:
                self.weights.append(r.alloc(self.master_bytes * m.params // self.shard, "optimizer_state"))

    def call_hook(self, name, *args):
        h = self.hooks.get(name)
        return h(*args) if h else None

    def step(self, tokens, seq=None, optimizer=True):
        r, P, m = self.r, self.P, self.m
        h, V = m.h, m.vocab
        r.phase = "data"
        with r.at([(self.user, 133, "train_step", "input_ids = batch[\"input_ids\"].to(device)")]):
            ids = r.alloc(tokens * 8, "inputs")
            labels = r.alloc(tokens * 8, "inputs")
        r.phase = "forward"
        saved = []
        with r.at(self.fwd):
            x = r.alloc(tokens * h * 2, "activations",
                        extra=P.call(P.t + "/nn/modules/sparse.py", 190, "forward", "return F.embedding("))
            for i in range(m.layers):
                self.call_hook("pre_forward", i)
                if self.ckpt:
                    ck = P.ckpt_reentrant_forward() if self.ckpt == "reentrant" else P.ckpt_nonreentrant_forward()
                    with r.at(ck, self.layer):
                        inp = r.alloc(tokens * h * 2, "activations")
                        tmp = r.tensors([b for _, b in m.saved(tokens)], "temporaries")
                        for t in tmp:
                            r.free(t)
                    saved.append([inp])
                else:
                    with r.at(self.layer):
                        saved.append(r.tensors([b for _, b in m.saved(tokens)], "activations"))
                self.call_hook("post_forward", i)
            with r.at(P.call(self.layer_file, 1190, "forward", "logits = self.lm_head(hidden_states[:, slice_indices, :])")):
                logits = r.alloc(tokens * V * 2, "activations")
            with r.at(P.call(self.layer_file, 1197, "forward", "loss = self.loss_function(logits=logits, labels=labels, vocab_size=self.config.vocab_size, **kwargs)")):
                lf = r.alloc(tokens * V * 4, "activations")
        r.phase = "backward"
        with r.at(P.backward_call(self.user, 146)):
            dl = r.alloc(tokens * V * 4, "temporaries", cpp=ENGINE_MM)
            r.free(lf)
            dlb = r.alloc(tokens * V * 2, "temporaries", cpp=ENGINE_MM)
            r.free(dl)
            r.free(logits)
            if self.grads is None:
                self.grads = {}
            if "head" not in self.grads and m.head_params:
                self.grads["head"] = r.alloc(self.grad_dtype * m.head_params // self.shard, "gradients", cpp=ENGINE_ACC)
            r.free(dlb)
            for i in reversed(range(m.layers)):
                self.call_hook("pre_backward", i)
                rec = []
                if self.ckpt:
                    rc = P.ckpt_reentrant_recompute() if self.ckpt == "reentrant" else P.ckpt_nonreentrant_recompute()
                    with r.at(rc, self.layer):
                        rec = r.tensors([b for _, b in m.saved(tokens)], "activations")
                dx = r.alloc(tokens * h * 2, "temporaries", cpp=ENGINE_MM)
                dtmp = r.alloc(tokens * m.f * 2, "temporaries", cpp=ENGINE_MM)
                made = self.call_hook("make_grad", i)
                if made is not None:
                    self.grads[i] = made
                elif i not in self.grads:
                    self.grads[i] = [r.alloc(self.grad_dtype * o * k // self.shard, "gradients", cpp=ENGINE_ACC)
                                     for _, o, k in m.layer_linears()]
                r.free(dtmp)
                for t in rec + saved[i]:
                    r.free(t)
                r.free(dx)
                self.call_hook("post_backward", i)
            if "embed" not in self.grads:
                self.grads["embed"] = r.alloc(self.grad_dtype * m.embed_params // self.shard, "gradients", cpp=ENGINE_ACC)
            r.free(x)
        r.free(ids)
        r.free(labels)
        if optimizer:
            self.optimizer_step()

    def optimizer_step(self):
        r, P, m = self.r, self.P, self.m
        r.phase = "optimizer"
        with r.at(P.optimizer_step(self.user, 150)):
            if self.state is None and self.opt_bytes:
                self.state = []
                for i in range(m.layers):
                    for _, o, k in m.layer_linears():
                        self.state.append(r.alloc(self.opt_bytes // 2 * o * k // self.shard, "optimizer_state"))
                        self.state.append(r.alloc(self.opt_bytes // 2 * o * k // self.shard, "optimizer_state"))
                for n in (m.embed_params, m.head_params):
                    if n:
                        self.state.append(r.alloc(self.opt_bytes * n // self.shard, "optimizer_state"))
        self.call_hook("after_step")

    def zero_grad(self):
        # set_to_none=True: gradients are freed and made again by the next backward
        if self.grads:
            for v in self.grads.values():
                for t in (v if isinstance(v, list) else [v]):
                    self.r.free(t)
        self.grads = None
