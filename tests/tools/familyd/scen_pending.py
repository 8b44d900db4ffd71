"""pending_frees: memory the program freed that the allocator could not reuse yet because work
queued on another stream still used it (record_stream).

What the emulation shows first: in eager mode the allocator's OOM path synchronises every
outstanding event and releases the unsplit cached segments before it gives up, so pending frees
mostly cost cudaMalloc retries, not the run. They end a run when (a) the reserved memory they made
the allocator add stays split after the synchronisation (FSDP1's unsharded gradients below: the same
program without record_stream completes), or (b) no synchronisation is allowed: during CUDA graph
capture a free with stream uses is deferred until no capture is under way, so the capture's pool
can never reuse it."""

from allocator import GiB, MiB
from run import Run
import frames as F
import models as M
from fsdp1 import run_fsdp1
from spec import Spec, g, m

NCCL = 0x55D0E2B93F20
CAPTURE = 0x55D0E2B94380


def fsdp1_70b():
    P = F.Paths("/usr/local/lib/python3.11/site-packages", "/workspace")

    def make():
        r = Run("H100", outside=int(1.6 * GiB), device=3)
        r.visible_devices = 8
        return r

    def program(r, fixed):
        run_fsdp1(r, P, M.LLAMA3_70B, 32, 14336, 2, 2, record_streams=not fixed, ckpt=True, comm_lag=40,
                  user="/workspace/llama-recipes/src/llama_recipes/finetuning.py")

    def describe(r, rf):
        f = r.failure
        return ("Llama-3-70B full fine-tune under FSDP1 (FULL_SHARD over 32 H100s, bf16 mixed precision, "
                "non-reentrant activation checkpointing per decoder layer, 14336 tokens per rank, rank 3 shown). "
                "Each layer's unsharded bf16 gradient (1.59 GiB) is made on the default stream and handed to the "
                "post-backward stream for its reduce-scatter, then freed with record_stream: with the "
                "inter-node reduce-scatters about 40 layers behind the CPU, %s of freed gradients were still "
                "pending when the failing request came, and the allocator had added segments for new gradients "
                "while they were. It retried %d times (synchronise, release unsplit segments); after the last "
                "retry %s is reserved but unallocated, in pieces, and the %s gradient of the logits (the start of step 1's backward) fails. The same program "
                "without record_stream (TORCH_NCCL_AVOID_RECORD_STREAMS=1 / FSDP2) peaks at %s reserved and "
                "completes. The snapshot was dumped in the loop's except handler, after the exception had dropped the "
                "graph: the all-gather outputs recorded on the default stream are active_pending_free there (%s)."
                % (g(f["pending_before_sync"]), r.a.retries, g(f["reserved"] - f["allocated_block_bytes"]),
                   m(f["requested"]), g(rf.a.peak_reserved),
                   g(sum(b.requested for s in r.a.segments for b in s.blocks if b.state == "active_pending_free"))))

    def unwind(r):
        # the training loop catches torch.OutOfMemoryError and dumps the snapshot: by then the
        # exception has dropped the autograd graph and FSDP's unsharded buffers; those recorded on
        # another stream are freed with events that no malloc has polled yet, so they are still
        # active_pending_free in the snapshot
        r.a.tick(20000)
        for b in sorted(r.a.live.values(), key=lambda b: -b.addr):
            if b.state == "active_allocated" and b.category in ("activations", "temporaries", "communication"):
                r.a.free(b, b.frames)

    return Spec("fsdp1_llama3_70b_h100_pending_unsharded_grads", "pending_frees", "FSDP1", make, program, describe,
                "record_stream avoided (TORCH_NCCL_AVOID_RECORD_STREAMS=1)", ring=2000, rank_prefix=3, unwind=unwind)


def te_graphed_tp():
    """Megatron-Core with Transformer Engine's make_graphed_callables: every decoder layer's
    forward is captured into one shared graph pool on the first iteration; with tensor and sequence
    parallelism each layer all-gathers its input and reduce-scatters its output through
    torch.distributed, whose ProcessGroupNCCL records the tensors on the NCCL stream. Under capture
    those frees are deferred, so the pool cannot reuse the collectives' buffers layer after layer."""
    P = F.Paths("/usr/local/lib/python3.10/dist-packages", "/workspace/Megatron-LM")
    model = M.QWEN25_32B
    tp = 8
    tokens = 16384

    def make():
        r = Run("H100", outside=int(2.1 * GiB), device=5)
        r.visible_devices = 8
        return r

    def program(r, fixed):
        sp = P.sp
        user = "/workspace/Megatron-LM/pretrain_gpt.py"
        meg = "/workspace/Megatron-LM/megatron"
        r.phase = "load"
        init = [(user, 290, "<module>", "pretrain("),
                (meg + "/training/training.py", 296, "pretrain", "model, optimizer, opt_param_scheduler = setup_model_and_optimizer("),
                (meg + "/core/distributed/distributed_data_parallel.py", 246, "__init__", "self._allocate_buffers_for_parameters("),
                (meg + "/core/distributed/param_and_grad_buffer.py", 592, "__init__", "self.param_data = torch.zeros(")]
        with r.at(init):
            params = r.alloc(2 * model.params // tp, "parameters")
            grads = r.alloc(4 * model.params // tp, "gradients")
        with r.at([(user, 290, "<module>", "pretrain("),
                   (meg + "/core/optimizer/distrib_optimizer.py", 376, "_build_model_and_main_param_groups",
                    "shard_main_param = shard_model_param.clone().float()")]):
            master = r.alloc(4 * model.params // tp // 4, "optimizer_state")  # distributed optimizer over DP=4
            adam = r.alloc(8 * model.params // tp // 4, "optimizer_state")
        te = sp + "/transformer_engine/pytorch/graph.py"
        cap = [(user, 290, "<module>", "pretrain("),
               (meg + "/training/training.py", 1402, "train", "cuda_graph_helper.create_cudagraphs()"),
               (meg + "/core/transformer/cuda_graphs.py", 990, "create_cudagraphs", "graphs = make_graphed_callables(tuple(self.flattened_callables), sample_args, **kwargs)"),
               (te, 733, "make_graphed_callables", "graphed_callables = _make_graphed_callables("),
               (te, 402, "_make_graphed_callables", "outputs = func(*args, **kwargs)")]
        layer = P.call(meg + "/core/transformer/transformer_layer.py", 445, "forward", "attention_output_with_bias = self.self_attention(")
        ag = [(meg + "/core/tensor_parallel/layers.py", 469, "forward", "dist_all_gather_func(all_gather_buffer, input, group=tp_group)")]
        rs = [(meg + "/core/tensor_parallel/mappings.py", 187, "_reduce_scatter_along_first_dim", "dist_reduce_scatter_func(output, input_.contiguous(), group=group)")]
        r.phase = "forward"
        pool = (1, 0)
        # the sample inputs the capture keeps (static inputs), then one capture per layer into the shared pool
        with r.at(cap):
            r.a.begin_capture(CAPTURE, pool)
            static_in = r.alloc(tokens // tp * model.h * 2, "activations", stream=CAPTURE)
            for i in range(model.layers):
                with r.at(layer):
                    for what in ("attn", "mlp"):
                        with r.at(ag):
                            full = r.alloc(tokens * model.h * 2, "communication", stream=CAPTURE)
                        if not fixed:
                            r.record_stream(full, NCCL)
                        r.a.launch(NCCL)
                        width = (model.h + 2 * model.hkv) // tp if what == "attn" else 2 * model.f // tp
                        mid = r.alloc(tokens * width * 2, "activations", stream=CAPTURE)
                        out = r.alloc(tokens * model.h * 2, "communication", stream=CAPTURE, extra=rs)
                        if not fixed:
                            r.record_stream(out, NCCL)
                        r.free(full)
                        shard = r.alloc(tokens // tp * model.h * 2, "activations", stream=CAPTURE, extra=rs)
                        r.free(out)
                        r.free(mid)
                        r.free(shard)
                r.a.launch(CAPTURE)
            r.a.end_capture(CAPTURE)

    def describe(r, rf):
        f = r.failure
        return ("Qwen2.5-32B-shaped pre-training with Megatron-Core (TP=8 with sequence parallelism, DP=4, "
                "distributed optimizer) on H100s, --enable-cuda-graph: Transformer Engine's "
                "make_graphed_callables captures every layer's forward into one shared graph pool at 16384 "
                "tokens. Each layer all-gathers its sequence-parallel input (%s) and reduce-scatters its "
                "output through torch.distributed, whose ProcessGroupNCCL calls record_stream on them. Under "
                "capture the allocator may not synchronise, so those frees are deferred (%s of blocks "
                "active_pending_free at the failure) and the pool can never reuse them: it grows to %s and the "
                "capture fails in layer %d's collectives. With TORCH_NCCL_AVOID_RECORD_STREAMS=1 the same "
                "capture reuses the buffers and needs %s in all."
                % (m(16384 * M.QWEN25_32B.h * 2), g(f["pending_before_sync"]), g(f["private_pool_reserved"]),
                   sum(1 for e in r.a.trace if e["action"] == "alloc" and e["stream"] == CAPTURE and e["size"] == 16384 * M.QWEN25_32B.h * 2) // 4,
                   g(rf.a.peak_reserved)))

    return Spec("megatron_te_graphed_layers_tp_collectives_deferred_frees", "pending_frees", "Megatron-Core + TE",
                make, program, describe, "record_stream avoided during capture (TORCH_NCCL_AVOID_RECORD_STREAMS=1)",
                also_acceptable=["graph_capture"], rank_prefix=5)


def compiled_tp_prefill_capture():
    """gpt-fast-style tensor-parallel serving: the model is torch.compile'd with
    mode="reduce-overhead" and its prefill graph recorded at the longest prompt bucket; every
    layer's attention and MLP output goes through a c10d all_reduce on the NCCL stream, which
    records the tensor there."""
    P = F.Paths("/opt/conda/lib/python3.11/site-packages", "/srv/gpt-fast")
    model = M.LLAMA3_70B
    tp = 8
    batch, max_len = 8, 8192

    def make():
        return Run("A100-80", outside=int(1.9 * GiB), device=0)

    def program(r, fixed):
        user = "/srv/gpt-fast/generate.py"
        r.phase = "load"
        with r.at([(user, 402, "main", "model = _load_model(checkpoint_path, device, precision, use_tp)"),
                   (user, 244, "_load_model", "model = model.to(device=device, dtype=precision)")]):
            for i in range(model.layers):
                r.alloc(2 * model.layer_params // tp, "parameters")
            r.alloc(2 * (model.embed_params + model.head_params) // tp, "parameters")
        with r.at([(user, 431, "main", "model.setup_caches(max_batch_size=batch_size, max_seq_length=max_seq_length)"),
                   ("/srv/gpt-fast/model.py", 118, "setup_caches", "b.attention.kv_cache = KVCache(max_batch_size, max_seq_length, self.config.n_local_heads, head_dim, dtype)"),
                   ("/srv/gpt-fast/model.py", 91, "__init__", "self.register_buffer('k_cache', torch.zeros(cache_shape, dtype=dtype))")]):
            for i in range(model.layers):
                r.alloc(batch * max_len * model.hkv // tp * 2, "kv_cache")
                r.alloc(batch * max_len * model.hkv // tp * 2, "kv_cache")
        r.phase = "eval"
        tri = P.t + "/_inductor/cudagraph_trees.py"
        cap = [(user, 452, "main", "y, metrics = generate(model, encoded, max_new_tokens, batch_size=batch_size)"),
               (P.t + "/utils/_contextlib.py", 116, "decorate_context", "return func(*args, **kwargs)"),
               (user, 201, "generate", "next_token = prefill(model, prompt.view(batch_size, -1), input_pos, **sampling_kwargs).clone()"),
               (P.t + "/_dynamo/eval_frame.py", 574, "_fn", "return fn(*args, **kwargs)"),
               (P.t + "/_functorch/aot_autograd.py", 1184, "forward", "return compiled_fn(full_args)"),
               (P.t + "/_inductor/output_code.py", 466, "__call__", "return self.current_callable(inputs)"),
               (tri, 381, "deferred_cudagraphify", "return fn(inputs)"),
               (tri, 2018, "run", "out = self._run(new_inputs, function_id)"),
               (tri, 2133, "record_function", "node = CUDAGraphNode("),
               (tri, 1032, "__init__", "self.recording_outputs: Optional[OutputType] = self._record("),
               (tri, 1267, "_record", "static_outputs = model(inputs)"),
               ("/tmp/torchinductor_root/xq/cxq3fhw2ncbtfy5bmxzjzmvqg6zvn7hbm6clcbq4s3ndw6ldfvse.py", 2410, "call",
                "buf12 = empty_strided_cuda((s0, 8192), (8192, 1), torch.bfloat16)")]
        T = batch * 4096  # the prefill bucket being recorded: 8 prompts of 4096 tokens
        with r.at(cap):
            r.a.begin_capture(CAPTURE, (1, 0))
            for i in range(model.layers):
                for what in ("attn", "mlp"):
                    width = (model.h + 2 * model.hkv) // tp if what == "attn" else 2 * model.f // tp
                    mid = r.alloc(T * width * 2, "activations", stream=CAPTURE)
                    part = r.alloc(T * model.h * 2, "communication", stream=CAPTURE,
                                   extra=[(P.t + "/distributed/_functional_collectives.py", 232, "all_reduce",
                                           "tensor = torch.ops._c10d_functional.all_reduce(self, reduceOp.lower(), group_name)")])
                    if not fixed:
                        r.record_stream(part, NCCL)
                    r.a.launch(NCCL)
                    r.free(mid)
                    res = r.alloc(T * model.h * 2, "activations", stream=CAPTURE)
                    r.free(part)
                    r.free(res)
            r.a.end_capture(CAPTURE)

    def describe(r, rf):
        f = r.failure
        return ("Llama-3-70B served with tensor parallelism over 8 A100-80GB in a gpt-fast-style server: bf16 "
                "weights (16.4 GiB per rank), a static KV cache for 8 x 8192 tokens, and prefill compiled with "
                "torch.compile(mode='reduce-overhead'), so its first call at a 4096-token bucket records a CUDA "
                "graph in cudagraph trees' pool. Every layer's attention and MLP output is summed by a c10d "
                "all_reduce whose tensor is recorded on the NCCL stream; during recording those frees are "
                "deferred, %s of them pending at the failure, and the pool reaches %s before a %s "
                "request fails. Without record_stream the recording needs %s in all."
                % (g(f["pending_before_sync"]), g(f["private_pool_reserved"]), m(f["requested"]), g(rf.a.peak_reserved)))

    return Spec("gptfast_llama3_70b_tp8_prefill_graph_allreduce_deferred", "pending_frees", "gpt-fast / torch.compile",
                make, program, describe, "record_stream avoided during capture", also_acceptable=["graph_capture"],
                phase="eval")


ALL = [fsdp1_70b, te_graphed_tp, compiled_tp_prefill_capture]
