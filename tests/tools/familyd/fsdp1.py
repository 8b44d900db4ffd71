"""FSDP1 (FullyShardedDataParallel, FULL_SHARD, flat parameters, bf16 mixed precision) training
steps: per unit, the low-precision shard and the all-gather output are allocated on the unshard
stream and freed with record_stream(current stream) (`_flat_param.py`); the unsharded gradient made
on the default stream is handed to the post-backward stream for the reduce-scatter and freed with
record_stream(post-backward stream) (`_runtime_utils._reduce_grad`). With limit_all_gathers=False
the CPU runs ahead of the GPU by `lag` units, so the blocks it frees stay pending that long."""

from allocator import MiB

UNSHARD = 0x5590A1C3E0F0
POST_BWD = 0x5590A1C3E430


class Fsdp1Frames:
    def __init__(self, P, user_file):
        self.P = P
        self.user = user_file
        d = P.t + "/distributed/fsdp"
        self.d = d

    def model_call(self):
        return [(self.user, 212, "train_step", "loss = model(**batch).loss")] + self.fsdp_forward()

    def fsdp_forward(self):
        d = self.d
        return [(self.P.t + "/nn/modules/module.py", 1739, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)"),
                (self.P.t + "/nn/modules/module.py", 1750, "_call_impl", "return forward_call(*args, **kwargs)"),
                (d + "/fully_sharded_data_parallel.py", 863, "forward", "output = self._fsdp_wrapped_module(*args, **kwargs)")]

    def unshard(self, where="forward"):
        d = self.d
        pre = ([(d + "/_runtime_utils.py", 1144, "_pre_forward", "unshard_fn(state, handle)"),
                (d + "/_runtime_utils.py", 1178, "_pre_forward_unshard", "_unshard(state, handle, state._unshard_stream, state._pre_unshard_stream)")]
               if where == "forward" else
               [(self.P.t + "/utils/_contextlib.py", 116, "decorate_context", "return func(*args, **kwargs)"),
                (d + "/_runtime_utils.py", 733, "_pre_backward_hook", "_unshard(state, handle, state._unshard_stream, state._pre_unshard_stream)")])
        return pre + [(d + "/_runtime_utils.py", 300, "_unshard", "handle.unshard()"),
                      (d + "/_flat_param.py", 1360, "unshard", "unsharded_flat_param = self._alloc_padded_unsharded_flat_param()"),
                      (d + "/_flat_param.py", 1387, "_alloc_padded_unsharded_flat_param",
                       "_alloc_storage(unsharded_flat_param, flat_param._padded_unsharded_size)"),
                      (self.P.t + "/distributed/utils.py", 186, "_alloc_storage", "tensor._typed_storage()._resize_(size.numel())")]

    def mp_shard(self):
        d = self.d
        return [(d + "/_runtime_utils.py", 1144, "_pre_forward", "unshard_fn(state, handle)"),
                (d + "/_runtime_utils.py", 1178, "_pre_forward_unshard", "_unshard(state, handle, state._unshard_stream, state._pre_unshard_stream)"),
                (d + "/_runtime_utils.py", 293, "_unshard", "ran_pre_unshard = handle.pre_unshard()"),
                (d + "/_flat_param.py", 1302, "pre_unshard", "self._use_low_precision_shard()"),
                (d + "/_flat_param.py", 1316, "_use_low_precision_shard",
                 "_alloc_storage(self.flat_param._mp_shard, self.flat_param._local_shard.size())")]

    def reshard(self):
        d = self.d
        return [(d + "/_runtime_utils.py", 1213, "_post_forward", "_reshard(state, handle, free_unsharded_flat_param)"),
                (d + "/_runtime_utils.py", 333, "_reshard", "handle.reshard(free_unsharded_flat_param)"),
                (d + "/_flat_param.py", 1721, "reshard", "self._free_unsharded_flat_param()"),
                (d + "/_flat_param.py", 1749, "_free_unsharded_flat_param",
                 "_no_dispatch_record_stream(unsharded_flat_param, self._device_handle.current_stream())")]

    def reduce_grad(self):
        d = self.d
        return [(d + "/_runtime_utils.py", 748, "_post_backward_hook", "_reduce_grad(state, handle)"),
                (d + "/_runtime_utils.py", 812, "_reduce_grad", "new_sharded_grad = torch.empty_like(unsharded_grad)  # padded")]

    def free_unsharded_grad(self):
        d = self.d
        return [(d + "/_runtime_utils.py", 748, "_post_backward_hook", "_reduce_grad(state, handle)"),
                (d + "/_runtime_utils.py", 846, "_reduce_grad",
                 "_no_dispatch_record_stream(padded_unsharded_grad, state._post_backward_stream)")]


def run_fsdp1(r, P, model, world, tokens, steps, lag, record_streams=True, ckpt=False, comm_lag=None,
              user="/workspace/train_fsdp.py", split_wrap=False):
    """Trains `model` for `steps` steps of `tokens` tokens per micro-batch. `lag`: how many units
    the GPU's default stream runs behind the CPU (limit_all_gathers=False lets the CPU run ahead);
    `comm_lag`: the same for the post-backward (reduce-scatter) stream. record_streams=False is the
    counterfactual: the same program with frees that complete at once (what
    TORCH_NCCL_AVOID_RECORD_STREAMS=1 / FSDP2's stream handling / a synchronize would give)."""
    ff = Fsdp1Frames(P, user)
    comm_lag = lag if comm_lag is None else comm_lag
    a = r.a
    h, V = model.h, model.vocab
    # transformer_auto_wrap_policy makes one unit per decoder layer; size_based_auto_wrap_policy
    # (split_wrap) wraps each layer's self_attn and mlp as units of their own, of different sizes.
    attn_params = 2 * h * h + 2 * h * model.hkv + h
    mlp_params = model.layer_params - attn_params
    layer_units = []
    for i in range(model.layers):
        if split_wrap:
            layer_units.append([("layers.%d.self_attn" % i, attn_params, 0, 6), ("layers.%d.mlp" % i, mlp_params, 6, 10)])
        else:
            layer_units.append([("layers.%d" % i, model.layer_params, 0, 10)])
    units = [("root", model.embed_params + model.head_params + h)] + [(n, p) for lu in layer_units for n, p, _, _ in lu]
    shard = {name: (n + world - 1) // world for name, n in units}
    init = [(user, 151, "main", "model = FSDP(model, auto_wrap_policy=wrap_policy, mixed_precision=bf16_policy, limit_all_gathers=False, device_id=local_rank)"),
            (ff.d + "/fully_sharded_data_parallel.py", 509, "__init__", "_init_param_handle_from_module("),
            (ff.d + "/_init_utils.py", 636, "_init_param_handle_from_module", "_init_param_handle_from_params(state, managed_params, fully_sharded_module)"),
            (ff.d + "/_init_utils.py", 648, "_init_param_handle_from_params", "handle.shard()"),
            (ff.d + "/_flat_param.py", 922, "shard", "sharded_flat_param, numel_padded = FlatParamHandle._get_shard(")]
    r.phase = "load"
    with r.at(init):
        params = {name: r.alloc(4 * shard[name], "parameters", tag="shard") for name, _ in units}
    grads = {}
    states = {}

    def progress():
        a.launch(0)
        a.finish_all_but(0, lag)
        a.finish_all_but(UNSHARD, lag)
        a.finish_all_but(POST_BWD, comm_lag)

    def gather(name, where):
        s = r.alloc(2 * shard[name], "communication", stream=UNSHARD, extra=ff.mp_shard(), tag="mp_shard") if where == "forward" else None
        g = r.alloc(2 * shard[name] * world, "communication", stream=UNSHARD, extra=ff.unshard(where), tag="all_gather")
        a.launch(UNSHARD)
        if s is not None:
            if record_streams:
                r.record_stream(s, 0)
            r.free(s)
        if record_streams:
            r.record_stream(g, 0)
        return g

    def release(g):
        r.free(g, ff.reshard())

    layer_call = P.call("/usr/local/lib/python3.11/site-packages/transformers/models/llama/modeling_llama.py", 330,
                        "forward", "hidden_states, self_attn_weights = self.self_attn(")
    for step in range(steps):
        r.step = step
        r.phase = "data"
        with r.at([(user, 205, "train_step", "batch = {k: v.to(device, non_blocking=True) for k, v in batch.items()}")]):
            ids = r.alloc(tokens * 8, "inputs")
            labels = r.alloc(tokens * 8, "inputs")
        r.phase = "forward"
        saved = []
        with r.at(ff.model_call()):
            root = gather("root", "forward")
            with r.at(P.call("/usr/local/lib/python3.11/site-packages/torch/nn/modules/sparse.py", 190, "forward",
                             "return F.embedding(")):
                hidden = r.alloc(tokens * h * 2, "activations")
            sv = model.saved(tokens)
            for i in range(model.layers):
                for name, _, lo, hi in layer_units[i]:
                    with r.at(ff.fsdp_forward()):
                        g = gather(name, "forward")
                        with r.at(layer_call):
                            if ckpt:
                                saved.append([r.alloc(tokens * h * 2, "activations", extra=P.ckpt_nonreentrant_forward())])
                                tmp = r.tensors([b for _, b in sv[lo:hi]], "temporaries")
                                for t in tmp:
                                    r.free(t)
                            else:
                                saved.append(r.tensors([b for _, b in sv[lo:hi]], "activations"))
                        release(g)
                    progress()
            with r.at(P.call("/usr/local/lib/python3.11/site-packages/transformers/models/llama/modeling_llama.py", 1190,
                             "forward", "logits = self.lm_head(hidden_states[:, slice_indices, :])")):
                logits = r.alloc(tokens * V * 2, "activations")
                lf = r.alloc(tokens * V * 4, "activations")
        r.phase = "backward"
        with r.at(P.backward_call(user, 214)):
            with r.at([], ):
                dlogits = r.alloc(tokens * V * 4, "temporaries", cpp=[("??", 0, "torch::autograd::generated::NllLossBackward0::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)", None)])
                r.free(lf)
                r.free(logits)
                r.free(dlogits)
            flat = [(n, p, lo, hi) for lu in layer_units for n, p, lo, hi in lu]
            for k in reversed(range(len(flat))):
                name, nparams, lo, hi = flat[k]
                g = gather(name, "backward")
                if ckpt:
                    with r.at(P.ckpt_nonreentrant_recompute(), layer_call):
                        rec = r.tensors([b for _, b in sv[lo:hi]], "activations")
                else:
                    rec = []
                # the unit's backward: one gradient per saved tensor, each freed when the next is made
                prev = None
                for b in reversed([b for _, b in sv[lo:hi]]):
                    gt = r.alloc(b, "temporaries", cpp=[("??", 0, "torch::autograd::generated::MmBackward0::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)", None)])
                    r.free(prev)
                    prev = gt
                ug = r.alloc(2 * nparams, "gradients",
                             cpp=[("??", 0, "torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)", None)])
                r.free(prev)
                for t in rec + saved[k]:
                    r.free(t)
                release(g)
                with r.at(ff.reduce_grad()):
                    sg = r.alloc(2 * shard[name], "communication", stream=POST_BWD)
                a.launch(POST_BWD)
                if record_streams:
                    r.record_stream(ug, POST_BWD)
                r.free(ug, ff.free_unsharded_grad())
                if name not in grads:
                    with r.at(ff.reduce_grad()):
                        grads[name] = r.alloc(4 * shard[name], "gradients", stream=POST_BWD)
                if record_streams:
                    r.record_stream(sg, 0)
                r.free(sg)
                progress()
            r.free(hidden)
            r.free(root, ff.reshard())
        r.free(ids)
        r.free(labels)
        r.phase = "optimizer"
        a.finish(0)
        a.finish(UNSHARD)
        a.finish(POST_BWD)
        with r.at(P.optimizer_step(user, 217)):
            for name, _ in units:
                if name not in states:
                    states[name] = r.tensors([4 * shard[name], 4 * shard[name]], "optimizer_state")
        progress()
