"""torchtune-style activation offloading with streams (`training/_activation_offloading.py`,
use_streams=True): in forward each saved activation is copied to pinned CPU memory on a side stream
s0 and the GPU tensor is freed with record_stream(s0), so it stays pending until the copy is done;
in backward each activation is copied back on a second side stream s1 (allocated there) and
recorded on the compute stream, so it stays pending until the layer's backward has run."""

S0 = 0x55E1C2A0B110  # D2H
S1 = 0x55E1C2A0B2D0  # H2D


def run_offload(r, P, model, tokens, steps, d2h_lag, h2d_lag, record_streams=True, user="/workspace/recipes/full_finetune_single_device.py",
                ckpt=True, optimizer_bytes_per_param=4):
    a = r.a
    sp = P.sp
    tt = sp + "/torchtune/training/_activation_offloading.py"
    h, V = model.h, model.vocab
    load = [(user, 612, "recipe_main", "recipe.setup(cfg=cfg)"),
            (user, 280, "setup", "self._model = self._setup_model("),
            (user, 431, "_setup_model", "model.load_state_dict(model_state_dict)"),
            (P.t + "/nn/modules/module.py", 2564, "load_state_dict", "load(self, state_dict)")]
    r.phase = "load"
    with r.at(load):
        weights = [r.alloc(2 * model.layer_params // 7, "parameters") for _ in range(model.layers * 7)]
        weights.append(r.alloc(2 * model.embed_params, "parameters"))
        weights.append(r.alloc(2 * model.head_params, "parameters"))
    grads = None
    state = None
    fwd = [(user, 731, "train", "current_loss = self._loss_step(batch) * current_num_tokens"),
           (user, 689, "_loss_step", "outputs = self._model(**batch)")]
    pack = [(tt, 220, "pack_tensor", "self.fwd_stash[tensor_id] = (activation, event)")]
    unpack = [(tt, 341, "unpack_tensor_with_streams", "maybe_gpu_tensor = maybe_gpu_tensor.to(\"cuda\", non_blocking=True)")]
    layer = P.call(sp + "/torchtune/modules/transformer.py", 122, "forward", "h = self.sa_norm(x)")
    for step in range(steps):
        r.step = step
        r.phase = "forward"
        stash = []
        with r.at(fwd):
            hidden = r.alloc(tokens * h * 2, "activations")
            for i in range(model.layers):
                with r.at(layer):
                    acts = [r.alloc(b, "activations") for _, b in model.saved(tokens)]
                    for t in acts:
                        # the D2H copy runs on s0; the GPU tensor may be reused only after it
                        a.launch(S0)
                        if record_streams:
                            r.record_stream(t, S0)
                        r.free(t, pack)
                    stash.append([b for _, b in model.saved(tokens)])
                a.launch(0)
                a.finish_all_but(0, 2)
                a.finish_all_but(S0, d2h_lag)
            with r.at(P.call(sp + "/torchtune/modules/transformer.py", 660, "forward", "output = self.output(h).float()")):
                logits = r.alloc(tokens * V * 4, "activations")
        r.phase = "backward"
        with r.at(P.backward_call(user, 735, "current_loss.backward()")):
            dl = r.alloc(tokens * V * 4, "temporaries")
            r.free(logits)
            if grads is None:
                grads = [r.alloc(2 * model.layer_params // 7, "gradients", cpp=[("??", 0, "torch::autograd::AccumulateGrad::apply(std::vector<at::Tensor, std::allocator<at::Tensor> >&&)", None)]) for _ in range(model.layers * 7)]
                grads.append(r.alloc(2 * model.head_params, "gradients"))
            r.free(dl)
            for i in reversed(range(model.layers)):
                with r.at(unpack):
                    back = [r.alloc(b, "activations", stream=S1) for b in stash[i]]
                a.launch(S1)
                a.finish_all_but(S1, 1)
                with r.at(P.ckpt_nonreentrant_recompute(), layer) if ckpt else r.at([]):
                    tmp = [r.alloc(tokens * model.f * 2, "temporaries") for _ in range(2)]
                for t in tmp:
                    r.free(t)
                for t in back:
                    if record_streams:
                        r.record_stream(t, 0)
                    r.free(t)
                a.launch(0)
                a.finish_all_but(0, h2d_lag)
            grads_embed = r.alloc(2 * model.embed_params, "gradients") if step == 0 else None
            if grads_embed is not None:
                grads.append(grads_embed)
            r.free(hidden)
        r.phase = "optimizer"
        a.finish(0)
        a.finish(S0)
        a.finish(S1)
        with r.at(P.optimizer_step(user, 741)):
            if state is None:
                state = [r.alloc(optimizer_bytes_per_param * model.layer_params // 7, "optimizer_state") for _ in range(model.layers * 7)]
