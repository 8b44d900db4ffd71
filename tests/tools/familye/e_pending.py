"""pending_frees in eager training: tensors allocated on the default stream, handed to an NCCL
collective with async_op=True (ProcessGroupNCCL calls record_stream on them unless
TORCH_NCCL_AVOID_RECORD_STREAMS=1) and freed while the NCCL stream is still behind the CPU.

Their blocks stay active_pending_free until an event on the NCCL stream completes. The default
stream's next requests cannot use them and get new segments. When cudaMalloc finally fails the
allocator synchronises the events and returns only the segments that became completely free; a
pending block inside a segment that other live tensors share becomes free but is not searched again
before the failing cudaMalloc (common.py), so the request fails with a block that would fit it."""

from common import run_on
from allocator import GiB, MiB
import frames as F
import models as M
from run import Failed  # noqa: F401
from spec import Spec, g, m

NCCL_TP = 0x55B1C04E3A10
NCCL_PP = 0x55B1C04E3B90


def megatron_async_tp_allreduce():
    """Megatron-LM, TP=4 without sequence parallelism: ColumnParallelLinear's backward
    (LinearWithGradAccumulationAndAsyncCommunication) computes grad_input = grad_output @ weight,
    starts torch.distributed.all_reduce(grad_input, async_op=True), computes the weight gradient
    into main_grad, waits, and returns grad_input to the layer norm's backward, after which it is
    freed. The documents of the mix are not packed: micro-batch lengths vary step to step."""
    P = F.Paths("/usr/local/lib/python3.10/dist-packages", "/workspace/Megatron-LM")
    model = M.LLAMA2_13B
    tp, dp = 4, 8
    lengths = [5120, 3840, 5120, 3072, 4608, 5120, 3840, 5120, 4608, 5120, 2560, 5120]

    def make():
        return run_on("A100-40", outside=int(6.0 * GiB), device=1, visible=8)

    def program(r, fixed):
        meg = "/workspace/Megatron-LM/megatron"
        user = "/workspace/Megatron-LM/pretrain_gpt.py"
        h, f_, V = model.h, model.f, model.vocab
        top = [(user, 290, "<module>", "pretrain(")]
        r.phase = "load"
        with r.at(top, [(meg + "/core/distributed/param_and_grad_buffer.py", 592, "__init__", "self.param_data = torch.zeros(")]):
            r.alloc(2 * model.params // tp, "parameters")
        with r.at(top, [(meg + "/core/distributed/param_and_grad_buffer.py", 611, "__init__", "self.grad_data = torch.zeros(")]):
            r.alloc(4 * model.params // tp, "gradients")
        with r.at(top, [(meg + "/core/optimizer/distrib_optimizer.py", 376, "_build_model_and_main_param_groups",
                         "shard_main_param = shard_model_param.clone().float()")]):
            r.alloc(4 * model.params // tp // dp, "optimizer_state")
        adam = []
        fwd = top + [(meg + "/training/training.py", 1180, "train_step", "losses_reduced = forward_backward_func("),
                     (meg + "/core/pipeline_parallel/schedules.py", 275, "forward_step", "output_tensor, loss_func = forward_step_func(data_iterator, model)")]
        layer_file = meg + "/core/transformer/transformer_layer.py"
        attn = P.call(layer_file, 445, "forward", "attention_output_with_bias = self.self_attention(")
        mlp = P.call(layer_file, 503, "forward", "mlp_output_with_bias = self.mlp(pre_mlp_layernorm_output)")
        bwd = top + [(meg + "/training/training.py", 1180, "train_step", "losses_reduced = forward_backward_func("),
                     (meg + "/core/pipeline_parallel/schedules.py", 393, "backward_step", "custom_backward(output_tensor[0], output_tensor_grad[0])"),
                     (meg + "/core/pipeline_parallel/schedules.py", 163, "custom_backward", "Variable._execution_engine.run_backward(")]
        col = [(P.t + "/autograd/function.py", 307, "apply", "return user_fn(self, *args)"),
               (meg + "/core/tensor_parallel/layers.py", 512, "backward", "grad_input = grad_output.matmul(weight)")]
        ar = [(P.t + "/autograd/function.py", 307, "apply", "return user_fn(self, *args)"),
              (meg + "/core/tensor_parallel/layers.py", 541, "backward", "handle = torch.distributed.all_reduce(")]
        tmpf = [(P.t + "/autograd/function.py", 307, "apply", "return user_fn(self, *args)"),
                (meg + "/core/tensor_parallel/layers.py", 488, "backward", "total_input = input")]
        lnb = [(P.sp + "/transformer_engine/pytorch/module/layernorm.py", 0, "backward", "dgrad, dgamma, dbeta = tex.layernorm_bwd(")]
        rowp = [(meg + "/core/tensor_parallel/layers.py", 1010, "forward", "output_ = reduce_from_tensor_model_parallel_region(output_parallel)"),
                (meg + "/core/tensor_parallel/mappings.py", 24, "_reduce", "torch.distributed.all_reduce(input_.contiguous(), group=group)")]
        rowo = [(meg + "/core/tensor_parallel/layers.py", 1001, "forward", "output_parallel = self._forward_impl(")]

        def row_parallel_allreduce(r, t, fixed):
            # the row-parallel linear's partial output, summed over the TP group in place, then added
            # to the residual (a new tensor) and dropped
            with r.at(rowo):
                out = r.alloc(t * h * 2, "communication")
            with r.at(rowp):
                r.a.launch(NCCL_TP)
                if not fixed:
                    r.record_stream(out, NCCL_TP)
            r.a.finish_all_but(NCCL_TP, LAG[0])
            r.free(out)

        for step, t in enumerate(lengths):
            r.step = step
            r.phase = "data"
            with r.at(top, [(meg + "/training/training.py", 1180, "train_step", "losses_reduced = forward_backward_func("),
                            (user, 120, "get_batch", "batch = get_batch_on_this_tp_rank(data_iterator)")]):
                ids = r.tensors([t * 8] * 3, "inputs")
            r.phase = "forward"
            saved = []
            with r.at(fwd):
                x = r.alloc(t * h * 2, "activations",
                            extra=P.call(meg + "/core/tensor_parallel/layers.py", 250, "forward", "output_parallel = self.weight[masked_input]"))
                for i in range(model.layers):
                    with r.at(attn):
                        a_ = r.tensors([t * h * 2, t * h // tp * 2, t * h // tp * 2, t * h // tp * 2, t * h // tp * 2,
                                        t * model.heads // tp * 4], "activations")
                        row_parallel_allreduce(r, t, fixed)
                    with r.at(mlp):
                        b_ = r.tensors([t * h * 2, t * f_ // tp * 2, t * f_ // tp * 2, t * f_ // tp * 2], "activations")
                        row_parallel_allreduce(r, t, fixed)
                    saved.append((a_, b_))
                with r.at([(meg + "/core/models/gpt/gpt_model.py", 288, "forward", "logits, _ = self.output_layer(")]):
                    logits = r.alloc(t * V // tp * 4, "activations")
            r.phase = "backward"
            with r.at(bwd):
                dl = r.alloc(t * V // tp * 4, "temporaries",
                             extra=[(meg + "/core/tensor_parallel/cross_entropy.py", 120, "backward", "grad_input = softmax")])
                r.free(logits)
                dout = r.alloc(t * h * 2, "temporaries", extra=col)
                r.free(dl)
                for i in reversed(range(model.layers)):
                    a_, b_ = saved.pop()
                    for block, width in ((b_, f_ // tp * 2), (a_, (h + 2 * model.hkv) // tp)):
                        with r.at(tmpf):
                            d_mid = r.alloc(t * width * 2, "temporaries")
                        with r.at(col):
                            dx = r.alloc(t * h * 2, "communication")
                        with r.at(ar):
                            r.a.launch(NCCL_TP)
                            if not fixed:
                                r.record_stream(dx, NCCL_TP)
                        r.free(d_mid)
                        for s in block:
                            r.free(s)
                        with r.at(lnb):
                            dn = r.alloc(t * h * 2, "temporaries")
                        r.free(dx)
                        r.free(dout)
                        dout = dn
                        # the TP group's NCCL stream: each all-reduce waits for the slowest of the
                        # four ranks; the CPU is about `lag` collectives ahead of it
                        r.a.finish_all_but(NCCL_TP, LAG[0])
                r.free(dout)
                r.free(x)
            for b in ids:
                r.free(b)
            r.phase = "optimizer"
            with r.at(top, [(meg + "/training/training.py", 1203, "train_step", "update_successful, grad_norm, num_zeros_in_grad = optimizer.step()"),
                            (P.sp + "/apex/optimizers/fused_adam.py", 171, "step", "state['exp_avg'] = torch.zeros_like(p.data).float()")]):
                if not adam:
                    adam.extend(r.tensors([4 * model.params // tp // dp] * 2, "optimizer_state"))
            r.a.finish(NCCL_TP)

    def describe(r, rf):
        f = r.failure
        return ("Llama-2-13B-shaped pre-training with Megatron-LM on A100-40GB: TP=4 without sequence parallelism, "
                "DP=8 with the distributed optimizer, fp32 main_grad buffer, no activation recompute, unpacked "
                "documents of 2048-4096 tokens. In backward every column-parallel linear all-reduces its input "
                "gradient (%s at 4096 tokens) with async_op=True; ProcessGroupNCCL records it on the NCCL stream and "
                "the layer frees it once the layer norm's backward has used it, while the TP group's all-reduces run "
                "about %d collectives behind the CPU. %s of freed input gradients were pending when the failing "
                "request came; the allocator had cut new ones out of the cached blocks of freed activations. It "
                "synchronised, returned the segments that had become wholly free and still could not cudaMalloc "
                "the %s request of step %d's %s. The same run with TORCH_NCCL_AVOID_RECORD_STREAMS=1 reuses each "
                "freed gradient at once, peaks at %s reserved and completes."
                % (m(4096 * model.h * 2), LAG[0], g(f["pending_before_sync"]), m(f["requested"]), f["step"],
                   f["phase"], g(rf.a.peak_reserved)))

    return Spec("megatron_llama2_13b_tp4_async_grad_allreduce_record_stream", "pending_frees", "Megatron-LM", make,
                program, describe, "TORCH_NCCL_AVOID_RECORD_STREAMS=1 (no record_stream)", ring=3000, rank_prefix=1,
                torch="2.3")


LAG = [24]


def moe_ep_prefill_capture():
    """Expert parallelism with torch.distributed.all_to_all_single (DeepSpeed-MoE's _AllToAll, the
    pattern many hand-written MoE runners copy): every MoE layer sends its routed tokens to the
    experts' ranks and back. ProcessGroupNCCL records the send and receive buffers on the NCCL
    stream; while torch.cuda.graph captures, their frees are deferred, so the capture's pool can
    reuse none of them."""
    P = F.Paths("/opt/conda/lib/python3.11/site-packages", "/srv/moe")
    model = M.Decoder("Mixtral-8x7B", 32, 4096, 14336, 32, 8, 32000)
    ep, topk, experts = 8, 2, 8
    tokens = 8192
    NCCL = 0x56019A3C1F00
    CAP = 0x56019A3C2280

    def make():
        return run_on("H100", outside=int(2.3 * GiB), device=6, visible=8)

    def program(r, fixed):
        h, f_ = model.h, model.f
        user = "/srv/moe/runner.py"
        attn_params = 2 * h * h + 2 * h * model.hkv
        expert_params = 3 * h * f_
        r.phase = "load"
        with r.at([(user, 77, "load", "model = MixtralEP.from_pretrained(path, ep_group=ep_group).to(torch.bfloat16).cuda()")],
                  P.to_device(user, 77, "model = MixtralEP.from_pretrained(path, ep_group=ep_group).to(torch.bfloat16).cuda()")[1:]):
            for i in range(model.layers):
                r.alloc(2 * attn_params, "parameters")
                r.alloc(2 * expert_params * experts // ep, "parameters")
                r.alloc(2 * h * experts, "parameters")
            r.alloc(2 * (model.embed_params + model.head_params), "parameters")
        with r.at([(user, 84, "load", "self.kv = torch.empty((2, n_layers, max_tokens, n_kv_heads, head_dim), dtype=torch.bfloat16, device='cuda')")]):
            r.alloc(int(55.5 * GiB), "kv_cache")
        r.phase = "eval"
        moe = P.sp + "/deepspeed/moe/sharded_moe.py"
        cap = [(user, 131, "capture", "with torch.cuda.graph(self.graph, pool=self.pool):"),
               (user, 132, "capture", "self.static_out = self.model(self.static_ids, self.static_pos)")]
        layer = P.call("/srv/moe/modeling_mixtral_ep.py", 211, "forward", "hidden = self.block_sparse_moe(hidden)")
        a2a = [(moe, 97, "forward", "dist.all_to_all_single(output, input, group=group)")]
        with r.at(cap):
            r.a.begin_capture(CAP, (1, 0))
            x = r.alloc(tokens * h * 2, "activations", stream=CAP)
            for i in range(model.layers):
                r.notes["layer"] = i
                with r.at(layer):
                    att = r.tensors([tokens * h * 2 * 3, tokens * h * 2], "temporaries", stream=CAP)
                    for t in att:
                        r.free(t)
                    bufs = []
                    with r.at([(moe, 520, "forward", "dispatched_input = einsum(\"sec,sm->ecm\", dispatch_mask.type_as(input[0]), reshaped_input)")]):
                        send = r.alloc(tokens * topk * h * 2, "communication", stream=CAP)
                    with r.at([(moe, 527, "forward", "dispatched_input = _AllToAll.apply(self.ep_group, dispatched_input)")], a2a):
                        recv = r.alloc(tokens * topk * h * 2, "communication", stream=CAP)
                        r.a.launch(NCCL)
                        bufs += [send, recv]
                    with r.at([(moe, 537, "forward", "expert_output = self.experts(dispatched_input)")]):
                        mid = r.alloc(tokens * topk * f_ * 2 * 2, "temporaries", stream=CAP)
                        eo = r.alloc(tokens * topk * h * 2, "communication", stream=CAP)
                        r.free(mid)
                    with r.at([(moe, 540, "forward", "expert_output = _AllToAll.apply(self.ep_group, expert_output)")], a2a):
                        back = r.alloc(tokens * topk * h * 2, "communication", stream=CAP)
                        r.a.launch(NCCL)
                        bufs += [eo, back]
                    with r.at([(moe, 551, "forward", "combined_output = einsum(\"sec,ecm->sm\", combine_weights.type_as(input[0]), expert_output)")]):
                        y = r.alloc(tokens * h * 2, "activations", stream=CAP)
                    for b in bufs:
                        if not fixed:
                            r.record_stream(b, NCCL)
                        r.free(b)
                    r.free(x)
                    x = y
            r.a.end_capture(CAP)

    def describe(r, rf):
        f = r.failure
        return ("Not training: a Mixtral-8x7B-shaped model served with expert parallelism over 8 H100s (EP=8, one "
                "expert per rank per layer, attention replicated) by a hand-written runner whose MoE layers are "
                "DeepSpeed-MoE's (_AllToAll over dist.all_to_all_single). bf16 weights (%s) and a preallocated KV "
                "cache (%s) load; then the prefill step for 8192-token chunks is captured with torch.cuda.graph. "
                "Each MoE layer's dispatch and combine buffers (4 x %s) are recorded on the NCCL stream by "
                "ProcessGroupNCCL; during capture their frees are deferred, %s of them at the failure, and the "
                "graph pool reaches %s before layer %d's request fails. With TORCH_NCCL_AVOID_RECORD_STREAMS=1 the "
                "capture reuses the buffers layer after layer and needs %s reserved in all."
                % (g(f["live_by_category"].get("parameters", 0)), g(f["live_by_category"].get("kv_cache", 0)),
                   m(tokens * topk * model.h * 2), g(f["pending_before_sync"]), g(f["private_pool_reserved"]),
                   r.notes["layer"], g(rf.a.peak_reserved)))

    return Spec("deepspeed_moe_mixtral_ep8_prefill_capture_all_to_all_deferred", "pending_frees",
                "DeepSpeed-MoE (hand-written runner)", make, program, describe,
                "TORCH_NCCL_AVOID_RECORD_STREAMS=1 (no record_stream)", phase="eval", rank_prefix=6, torch="2.5")


ALL = [megatron_async_tp_allreduce, moe_ep_prefill_capture]
