"""FSDP2 (fully_shard, DTensor parameters) hooks for loop.Loop: per decoder layer, the all-gather's
copy-in buffer and output on FSDP2's own streams, the unsharded parameters copied out of it on the
default stream (communication), resharded after forward unless reshard_after_forward=False; in
backward the reduce-scatter input on the reduce-scatter stream and the fp32 sharded gradient it
accumulates into. FSDP2 keeps the all-gather output alive until the consumer stream waited on an
event instead of calling record_stream, so nothing here is pending."""

AG_COPY_IN = 0x55F3A09D2B10
AG = 0x55F3A09D2CA0
RS = 0x55F3A09D2E30


class Fsdp2:
    def __init__(self, loop, world, reshard_after_forward=True, gradient_sync=True, reduce_bytes=4):
        self.l = loop
        self.r = loop.r
        self.world = world
        self.raf = reshard_after_forward
        self.sync = gradient_sync
        self.reduce_bytes = reduce_bytes
        self.unsharded = {}
        self.accumulated = {}
        self.sharded_grads = {}
        d = loop.P.t + "/distributed/fsdp/_fully_shard"
        self.d = d
        self.pre_fwd = [(loop.P.t + "/nn/modules/module.py", 1845, "inner", "args_kwargs_result = hook(self, args, kwargs)  # type: ignore[misc]"),
                        (d + "/_fsdp_state.py", 62, "fsdp_hook_wrapper", "return torch._dynamo.disable(func, recursive=True)(*args, **kwargs)"),
                        (d + "/_fsdp_state.py", 249, "_pre_forward", "args, kwargs = self._fsdp_param_group.pre_forward(module, args, kwargs)"),
                        (d + "/_fsdp_param_group.py", 353, "pre_forward", "self.unshard(self.unshard_async_op)"),
                        (d + "/_fsdp_param_group.py", 279, "unshard", "self._all_gather_result = foreach_all_gather(")]
        self.pre_bwd = [(d + "/_fsdp_state.py", 286, "_pre_backward", "self._fsdp_param_group.pre_backward(default_prefetch)"),
                        (d + "/_fsdp_param_group.py", 412, "pre_backward", "self.unshard(self.unshard_async_op)"),
                        (d + "/_fsdp_param_group.py", 279, "unshard", "self._all_gather_result = foreach_all_gather(")]
        self.copy_in = [(d + "/_fsdp_collectives.py", 178, "foreach_all_gather", "all_gather_input, all_gather_output = torch.ops.fsdp.all_gather_copy_in(")]
        self.ag_out = [(d + "/_fsdp_collectives.py", 178, "foreach_all_gather", "all_gather_input, all_gather_output = torch.ops.fsdp.all_gather_copy_in("),
                       (d + "/_fsdp_collectives.py", 84, "all_gather_copy_in_cuda", "all_gather_output = torch.empty(")]
        self.copy_out = [(d + "/_fsdp_param_group.py", 300, "wait_for_unshard", "foreach_all_gather_copy_out("),
                         (d + "/_fsdp_collectives.py", 292, "foreach_all_gather_copy_out", "fsdp_param.init_all_gather_outputs("),
                         (d + "/_fsdp_param.py", 496, "init_all_gather_outputs", "torch.empty(torch.Size([numel * world_size]), dtype=dtype, device=device)")]
        self.post_bwd = [(d + "/_fsdp_state.py", 336, "_post_backward", "self._fsdp_param_group.post_backward()"),
                         (d + "/_fsdp_param_group.py", 456, "post_backward", "self._post_reduce_event, self._partial_reduce_output = foreach_reduce("),
                         (d + "/_fsdp_collectives.py", 391, "foreach_reduce", "reduce_scatter_input = torch.empty(")]
        self.accumulate = [(d + "/_fsdp_state.py", 336, "_post_backward", "self._fsdp_param_group.post_backward()"),
                           (d + "/_fsdp_param_group.py", 436, "post_backward", "fsdp_param.to_accumulated_grad_if_needed()"),
                           (d + "/_fsdp_param.py", 725, "to_accumulated_grad_if_needed", "self.unsharded_accumulated_grad = self.unsharded_param.grad.to(self.reduce_dtype)")]
        self.sharded_grad = [(d + "/_fsdp_collectives.py", 452, "foreach_reduce", "new_sharded_grad = torch.empty_like(reduce_output)  # fp32")]
        loop.hooks.update({"pre_forward": self.pre_forward, "post_forward": self.post_forward,
                           "pre_backward": self.pre_backward, "post_backward": self.post_backward,
                           "make_grad": self.make_grad})

    def _unshard(self, i, where):
        r, m = self.r, self.l.m
        if i in self.unsharded:
            return
        with r.at(where):
            cin = r.alloc(2 * m.layer_params // self.world, "communication", extra=self.copy_in, stream=AG_COPY_IN)
            out = r.alloc(2 * m.layer_params, "communication", extra=self.ag_out, stream=AG)
            r.free(cin)
        with r.at(self.copy_out):
            self.unsharded[i] = [r.alloc(2 * o * k, "communication") for _, o, k in m.layer_linears()]
        r.free(out)

    def pre_forward(self, i):
        self._unshard(i, self.pre_fwd)

    def post_forward(self, i):
        if self.raf:
            for t in self.unsharded.pop(i):
                self.r.free(t)

    def pre_backward(self, i):
        self._unshard(i, self.pre_bwd)

    def make_grad(self, i):
        # the unsharded gradients autograd makes for the unsharded parameters (bf16, default stream)
        from loop import ENGINE_ACC
        r, m = self.r, self.l.m
        return [r.alloc(2 * o * k, "gradients", cpp=ENGINE_ACC) for _, o, k in m.layer_linears()]

    def post_backward(self, i):
        r, m = self.r, self.l.m
        unsharded_grads = self.l.grads.pop(i)
        if not self.sync:
            # set_requires_gradient_sync(False): the reduce-scatter is deferred to the last
            # micro-batch; each layer keeps its unsharded gradient in the reduce dtype until then
            if i not in self.accumulated:
                with r.at(self.accumulate):
                    self.accumulated[i] = r.alloc(self.reduce_bytes * m.layer_params, "communication")
        else:
            with r.at(self.post_bwd):
                rsi = r.alloc(self.reduce_bytes * m.layer_params, "communication", stream=RS)
            if i not in self.sharded_grads:
                with r.at(self.post_bwd[:2] + self.sharded_grad):
                    self.sharded_grads[i] = r.alloc(4 * m.layer_params // self.world, "gradients", stream=RS)
            r.free(rsi)
            r.free(self.accumulated.pop(i, None))
        for t in unsharded_grads:
            r.free(t)
        for t in self.unsharded.pop(i):
            r.free(t)
        self.l.grads[i] = []
