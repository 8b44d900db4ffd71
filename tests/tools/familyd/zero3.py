"""DeepSpeed ZeRO-3 (stage3 PartitionedParameterCoordinator): before a module's forward its
parameters are all-gathered one tensor each on the all-gather stream; the gathered tensors are
recorded on the compute stream (record_stream) and released after the module ran, so with the CPU
ahead of the GPU they stay pending. Parameters of different shapes (GQA's small k/v projections
fall in the allocator's 1-10 MiB class and share 20 MiB segments) interleave on that stream."""

AG = 0x562F0B1D47A0
RS = 0x562F0B1D4960


def run_zero3(r, P, model, world, tokens, steps, lag, record_streams=True, user="/workspace/train_ds.py", prefetch=2):
    a = r.a
    sp = P.sp
    ds = sp + "/deepspeed/runtime/zero"
    h, V = model.h, model.vocab
    init = [(user, 88, "main", "model_engine, optimizer, _, _ = deepspeed.initialize(model=model, config=ds_config)"),
            (ds + "/partition_parameters.py", 1100, "_post_init_method", "self._convert_to_deepspeed_param(param)"),
            (ds + "/partition_parameters.py", 1530, "_partition_param", "partitioned_tensor = get_accelerator().FloatTensor(tensor_size)")]
    fetch = [(ds + "/parameter_offload.py", 444, "_pre_forward_module_hook", "self.pre_sub_module_forward_function(module)"),
             (ds + "/parameter_offload.py", 563, "pre_sub_module_forward_function", "param_coordinator.fetch_sub_module(sub_module, forward=True)"),
             (ds + "/partitioned_param_coordinator.py", 339, "fetch_sub_module", "self.__all_gather_params(params_to_prefetch, forward)"),
             (ds + "/partitioned_param_coordinator.py", 472, "__all_gather_params_", "handle = param_group[0].all_gather_coalesced(param_group, quantize=quantize)"),
             (ds + "/partition_parameters.py", 1205, "all_gather_coalesced", "param_buffer = torch.empty(")]
    release = [(ds + "/parameter_offload.py", 467, "_post_forward_module_hook", "self.post_sub_module_forward_function(module)"),
               (ds + "/partitioned_param_coordinator.py", 413, "release_sub_module", "self.__release_param(param)"),
               (ds + "/partitioned_param_coordinator.py", 499, "__release_param", "param.partition()")]
    shapes = [(o * i) for _, o, i in model.layer_linears()]
    r.phase = "load"
    with r.at(init):
        part = [r.alloc(2 * (n + world - 1) // world, "parameters") for _ in range(model.layers) for n in shapes]
        part.append(r.alloc(2 * model.embed_params // world, "parameters"))
        part.append(r.alloc(2 * model.head_params // world, "parameters"))
        master = [r.alloc(4 * model.params // world, "optimizer_state")]
    state = None
    layer = P.call(sp + "/transformers/models/qwen2/modeling_qwen2.py", 259, "forward", "hidden_states, self_attn_weights = self.self_attn(")
    fwd = [(user, 131, "train", "loss = model_engine(**batch).loss"),
           (P.t + "/nn/modules/module.py", 1750, "_call_impl", "return forward_call(*args, **kwargs)"),
           (sp + "/deepspeed/utils/nvtx.py", 18, "wrapped_fn", "ret_val = func(*args, **kwargs)"),
           (sp + "/deepspeed/runtime/engine.py", 2027, "forward", "loss = self.module(*inputs, **kwargs)")]
    grads_part = None
    for step in range(steps):
        r.step = step
        r.phase = "forward"
        saved = []
        with r.at(fwd):
            x = r.alloc(tokens * h * 2, "activations")
            for i in range(model.layers):
                with r.at(fetch):
                    gathered = [r.alloc(2 * n, "communication", stream=AG) for n in shapes]
                a.launch(AG)
                with r.at(layer):
                    saved.append(r.tensors([b for _, b in model.saved(tokens)], "activations"))
                for g in gathered:
                    if record_streams:
                        r.record_stream(g, 0)
                    r.free(g, release)
                a.launch(0)
                a.finish_all_but(0, lag)
                a.finish_all_but(AG, lag)
            with r.at(P.call(sp + "/transformers/models/qwen2/modeling_qwen2.py", 816, "forward", "logits = self.lm_head(hidden_states[:, slice_indices, :])")):
                logits = r.alloc(tokens * V * 2, "activations")
        r.phase = "backward"
        with r.at([(user, 133, "train", "model_engine.backward(loss)"), (sp + "/deepspeed/runtime/engine.py", 2169, "backward", "self.optimizer.backward(loss, retain_graph=retain_graph)")]):
            dl = r.alloc(tokens * V * 4, "temporaries")
            r.free(logits)
            r.free(dl)
            if grads_part is None:
                grads_part = r.alloc(4 * model.params // world, "gradients")
            for i in reversed(range(model.layers)):
                with r.at(fetch):
                    gathered = [r.alloc(2 * n, "communication", stream=AG) for n in shapes]
                a.launch(AG)
                full_grads = [r.alloc(2 * n, "gradients") for n in shapes]
                for t in saved[i]:
                    r.free(t)
                for g in gathered:
                    if record_streams:
                        r.record_stream(g, 0)
                    r.free(g, release)
                for g in full_grads:
                    if record_streams:
                        r.record_stream(g, RS)
                    r.free(g)
                a.launch(RS)
                a.launch(0)
                a.finish_all_but(0, lag)
                a.finish_all_but(AG, lag)
                a.finish_all_but(RS, lag)
            r.free(x)
        r.phase = "optimizer"
        a.finish(0)
        a.finish(AG)
        a.finish(RS)
        with r.at([(user, 134, "train", "model_engine.step()")]):
            if state is None:
                state = [r.alloc(8 * model.params // world, "optimizer_state")]
