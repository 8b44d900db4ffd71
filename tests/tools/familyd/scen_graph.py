"""graph_capture: out of memory while capturing CUDA graphs, whose private pools keep what an eager
run would hand back to the default pool: each graph's pool owns every block its capture touched,
the outputs a graph returns stay in its pool, and pools of graphs captured separately never share."""

from allocator import GiB, MiB
from run import Run
import frames as F
import models as M
from loop import Loop
from spec import Spec, g, m

CAPTURE = 0x5612C7F0A3B0


def vllm_capture_sizes():
    P = F.Paths("/usr/local/lib/python3.12/dist-packages", "/app")
    model = M.QWEN25_32B
    util = 0.97

    def make():
        return Run("H100", outside=int(0.9 * GiB), device=0)

    def program(r, fixed):
        sp = P.sp
        v = sp + "/vllm"
        top = [(sp + "/vllm/entrypoints/openai/api_server.py", 1121, "run_server", "async with build_async_engine_client(args) as engine_client:"),
               (v + "/v1/engine/core.py", 390, "run_engine_core", "engine_core = EngineCoreProc(*args, **kwargs)"),
               (v + "/v1/engine/core.py", 75, "__init__", "self.model_executor = executor_class(vllm_config)")]
        r.phase = "load"
        with r.at(top, [(v + "/v1/worker/gpu_worker.py", 162, "load_model", "self.model_runner.load_model()"),
                        (v + "/v1/worker/gpu_model_runner.py", 1454, "load_model", "self.model = get_model(vllm_config=self.vllm_config)"),
                        (v + "/model_executor/model_loader/default_loader.py", 272, "load_model", "model = initialize_model(vllm_config=vllm_config,"),
                        (v + "/model_executor/layers/linear.py", 410, "__init__", "self.quant_method.create_weights(")]):
            for i in range(model.layers):
                for _, o, k in model.layer_linears():
                    r.alloc(2 * o * k, "parameters")
            r.alloc(2 * model.embed_params, "parameters")
            r.alloc(2 * model.head_params, "parameters")
        # profile run: the largest batch eager, to measure activation memory; then freed
        with r.at(top, [(v + "/v1/worker/gpu_worker.py", 200, "determine_available_memory", "self.model_runner.profile_run()"),
                        (v + "/v1/worker/gpu_model_runner.py", 1936, "profile_run", "hidden_states = self._dummy_run(self.max_num_tokens)")]):
            tmp = r.tensors([8192 * model.f * 2 * 2, 8192 * model.h * 2 * 3, 8192 * model.vocab * 4 // 16], "temporaries")
            for t in tmp:
                r.free(t)
        peak = r.a.reserved
        kv_bytes = int(util * r.card.total) - r.outside - peak
        per_layer = kv_bytes // model.layers // (2 * MiB) * (2 * MiB)
        with r.at(top, [(v + "/v1/worker/gpu_worker.py", 230, "initialize_from_config", "self.model_runner.initialize_kv_cache(kv_cache_config)"),
                        (v + "/v1/worker/gpu_model_runner.py", 2109, "initialize_kv_cache", "kv_caches = self._allocate_kv_cache_tensors(kv_cache_config)"),
                        (v + "/v1/worker/gpu_model_runner.py", 2002, "_allocate_kv_cache_tensors", "tensor = torch.zeros(kv_cache_tensor.size, dtype=torch.int8, device=self.device)")]):
            for i in range(model.layers):
                r.alloc(per_layer, "kv_cache")
        r.notes["kv"] = per_layer * model.layers
        if fixed:
            return  # enforce_eager=True: no capture; decode steps run in the memory the profile measured
        sizes = [1, 2, 4] + list(range(8, 513, 8))
        cap = top + [(v + "/v1/worker/gpu_worker.py", 246, "compile_or_warm_up_model", "self.model_runner.capture_model()"),
                     (v + "/v1/worker/gpu_model_runner.py", 2054, "capture_model", "self._dummy_run(num_tokens, capture_attn_cudagraph=full_cg)"),
                     (v + "/v1/worker/gpu_model_runner.py", 1880, "_dummy_run", "outputs = model("),
                     (v + "/compilation/cuda_piecewise_backend.py", 160, "__call__", "with torch.cuda.graph(cudagraph, pool=self.graph_pool):")]
        kept = []
        r.phase = "eval"
        with r.at(cap):
            for n in reversed(sizes):
                r.notes["size"] = n
                r.a.begin_capture(CAPTURE, (2, 0))
                for i in range(model.layers):
                    mid = r.tensors([n * model.f * 2 * 2, n * (model.h + 2 * model.hkv) * 2], "temporaries", stream=CAPTURE)
                    # each piecewise graph returns its output; the graph keeps it as its static output
                    kept.append(r.alloc(n * model.h * 2, "activations", stream=CAPTURE))
                    for t in mid:
                        r.free(t)
                r.a.end_capture(CAPTURE)

    def describe(r, rf):
        f = r.failure
        return ("Not training: an OpenAI-compatible vLLM (V1) server for a Qwen2.5-32B-shaped model in bf16 on one H100 with "
                "gpu_memory_utilization=0.97. The weights (%s) load, the profile run measures the eager activation "
                "peak, and the KV cache takes everything up to 97%% of the card (%s). Then vLLM captures CUDA graphs "
                "for 67 batch sizes from 512 down, into one shared graph pool: each capture keeps its piecewise "
                "graphs' static outputs, which the profile did not count. Capturing batch size %d fails with the graph "
                "pool at %s. With enforce_eager=True (or a lower gpu_memory_utilization) the server starts."
                % (g(f["live_by_category"].get("parameters", 0)), g(r.notes["kv"]), r.notes["size"],
                   g(f["private_pool_reserved"])))

    return Spec("vllm_qwen25_32b_h100_capture_67_batch_sizes_util097", "graph_capture", "vLLM V1", make, program,
                describe, "enforce_eager=True (no capture)", phase="eval")


def per_bucket_pools():
    P = F.Paths("/usr/lib/python3/dist-packages", "/workspace")
    model = M.LLAMA32_1B

    def make():
        return Run("A100-80", outside=int(0.8 * GiB), device=0)

    def program(r, fixed):
        user = "/workspace/train_graphed.py"
        l = Loop(r, P, model, user, param_dtype=4, grad_dtype=4, opt_bytes=8)
        l.load(P.to_device(user, 61, "model = LlamaForCausalLM(config).cuda()"))
        # static gradients and optimizer state are made in a warm-up step on a side stream (eager)
        with r.at([(user, 88, "warmup", "loss.backward()")]):
            grads = [r.alloc(4 * model.params // 16, "gradients") for _ in range(16)]
        with r.at([(user, 89, "warmup", "optimizer.step()")]):
            state = [r.alloc(8 * model.params // 16, "optimizer_state") for _ in range(16)]
        buckets = [512, 1024, 2048, 4096]
        for k, seq in enumerate(buckets):
            pool = (k + 1, 0) if not fixed else (1, 0)
            r.notes["bucket"] = seq
            cap = [(user, 112, "capture_buckets", "with torch.cuda.graph(graphs[seq]%s):" % ("" if not fixed else ", pool=graphs[buckets[0]].pool()")),
                   (user, 113, "capture_buckets", "static_loss[seq] = train_step(static_input[seq], static_target[seq])")] 
            with r.at(cap):
                r.a.begin_capture(CAPTURE, pool)
                tokens = 4 * seq
                r.phase = "forward"
                saved = []
                with r.at([(user, 74, "train_step", "logits = model(input_ids).logits")]):
                    for i in range(model.layers):
                        with r.at(l.layer):
                            saved.append(r.tensors([b for _, b in model.saved(tokens)], "activations", stream=CAPTURE))
                    logits = r.alloc(tokens * model.vocab * 4, "activations", stream=CAPTURE)
                r.phase = "backward"
                with r.at(P.backward_call(user, 76)):
                    dl = r.alloc(tokens * model.vocab * 4, "temporaries", stream=CAPTURE)
                    r.free(logits)
                    r.free(dl)
                    for i in reversed(range(model.layers)):
                        d = r.alloc(tokens * model.f * 2, "temporaries", stream=CAPTURE)
                        for t in saved[i]:
                            r.free(t)
                        r.free(d)
                r.a.end_capture(CAPTURE)
                r.phase = "forward"

    def describe(r, rf):
        f = r.failure
        return ("A Llama-3.2-1B-shaped model (fp32 weights, AdamW) trained with whole-step CUDA graphs on one A100-80GB: "
                "for each sequence-length bucket (4 sequences of 512, 1024, 2048 or 4096 tokens) the loop captures forward and "
                "backward with torch.cuda.graph(graphs[seq]) and no pool= argument, so every capture gets a private pool "
                "of its own that keeps every block the capture touched. The fixed state is %s; the four "
                "pools hold %s when the capture of the %d-token bucket fails. Captured "
                "into one shared pool (pool=graphs[buckets[0]].pool(), valid because replays never overlap) the four "
                "graphs need %s reserved in all."
                % (g(sum(v for k, v in f["live_by_category"].items() if k in ("parameters", "gradients", "optimizer_state"))),
                   g(f["private_pool_reserved"]), r.notes["bucket"], g(rf.a.peak_reserved)))

    return Spec("graphed_train_step_llama32_1b_a100_pool_per_bucket", "graph_capture", "torch.cuda.graph", make,
                program, describe, "one pool shared by the four captures")


def sglang_capture():
    P = F.Paths("/usr/local/lib/python3.10/dist-packages", "/sgl-workspace")
    model = M.LLAMA3_70B
    tp = 4

    def make():
        r = Run("H200", outside=int(2.4 * GiB), device=2)
        r.visible_devices = 4
        return r

    def program(r, fixed):
        sp = P.sp
        s = sp + "/sglang/srt"
        top = [(s + "/managers/scheduler.py", 2401, "run_scheduler_process", "scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, pp_rank, dp_rank)"),
               (s + "/managers/tp_worker.py", 81, "__init__", "self.model_runner = ModelRunner(")]
        r.phase = "load"
        with r.at(top, [(s + "/model_executor/model_runner.py", 222, "initialize", "self.load_model()"),
                        (s + "/model_loader/loader.py", 381, "load_model", "model = _initialize_model(")]):
            for i in range(model.layers):
                r.alloc(2 * model.layer_params // tp, "parameters")
            r.alloc(2 * (model.embed_params + model.head_params) // tp, "parameters")
        free_now = r.a.limit - r.a.reserved
        kv = int(r.card.total * 0.95) - r.outside - r.a.reserved
        per = kv // (2 * model.layers) // (2 * MiB) * (2 * MiB)
        with r.at(top, [(s + "/model_executor/model_runner.py", 1154, "init_memory_pool", "self.token_to_kv_pool = MHATokenToKVPool("),
                        (s + "/mem_cache/memory_pool.py", 367, "_create_buffers", "self.k_buffer = [")]):
            for i in range(2 * model.layers):
                r.alloc(per, "kv_cache")
        r.notes["kv"] = per * 2 * model.layers
        if fixed:
            return  # --disable-cuda-graph
        cap = top + [(s + "/model_executor/model_runner.py", 1290, "init_cuda_graphs", "self.cuda_graph_runner = CudaGraphRunner(self)"),
                     (s + "/model_executor/cuda_graph_runner.py", 311, "__init__", "self.capture()"),
                     (s + "/model_executor/cuda_graph_runner.py", 398, "capture", ") = self.capture_one_batch_size(bs, forward)"),
                     (s + "/model_executor/cuda_graph_runner.py", 521, "capture_one_batch_size", "out = run_once()")]
        r.phase = "eval"
        kept = []
        with r.at(cap):
            for n in reversed([1, 2, 4, 8] + list(range(16, 161, 8)) + list(range(176, 769, 16))):
                r.notes["size"] = n
                r.a.begin_capture(CAPTURE, (3, 0))
                for i in range(model.layers):
                    mid = r.tensors([n * model.f // tp * 2 * 2, n * model.h * 2 * 2], "temporaries", stream=CAPTURE)
                    for t in mid:
                        r.free(t)
                kept.append(r.alloc(n * model.vocab * 4, "activations", stream=CAPTURE))  # logits, gathered over TP
                kept.append(r.alloc(n * model.h * 2, "activations", stream=CAPTURE))
                r.a.end_capture(CAPTURE)

    def describe(r, rf):
        f = r.failure
        return ("Not training: an SGLang server for Llama-3-70B with TP=4 on H200s, --mem-fraction-static 0.95 and "
                "--cuda-graph-max-bs 768. Rank 2's weights (%s) load, the token-to-KV pool takes %s, and the "
                "CudaGraphRunner captures decode graphs from batch 768 down into one global graph pool, each keeping "
                "its output logits (fp32, gathered to the whole 128256-token vocabulary) and hidden states. Capturing batch size %d fails with the "
                "pool at %s. With --disable-cuda-graph (or a smaller --cuda-graph-max-bs / mem-fraction-static) the "
                "server starts." % (g(f["live_by_category"].get("parameters", 0)), g(r.notes["kv"]), r.notes["size"],
                                     g(f["private_pool_reserved"])))

    return Spec("sglang_llama3_70b_tp4_h200_decode_graphs_mem_fraction_095", "graph_capture", "SGLang", make, program,
                describe, "--disable-cuda-graph", phase="eval", rank_prefix=None)


def sdxl_graphs_per_resolution():
    """A diffusion service that captures its UNet step with torch.cuda.graph once per served
    resolution (a stable-fast / OneDiff-style wrapper), each capture in a pool of its own."""
    P = F.Paths("/usr/local/lib/python3.10/dist-packages", "/srv/imagine")
    unet_params = 2_567_000_000

    def make():
        return Run("L40S", outside=int(0.7 * GiB), device=0)

    def program(r, fixed):
        sp = P.sp
        app = "/srv/imagine/service.py"
        r.phase = "load"
        with r.at([(app, 38, "load", "pipe = StableDiffusionXLPipeline.from_pretrained(MODEL, torch_dtype=torch.float16).to(\"cuda\")")] + P.to_device(app, 38)[1:]):
            for i in range(64):
                r.alloc(2 * unet_params // 64, "parameters")
            r.alloc(2 * 817_000_000, "parameters")  # the two text encoders
            r.alloc(2 * 84_000_000, "parameters")  # the VAE
        r.phase = "eval"
        sizes = [(1024, 1024), (1152, 896), (896, 1152), (1216, 832), (832, 1216), (1344, 768), (768, 1344)]
        batch = 8
        for k, (h, w) in enumerate(sizes):
            tokens = (h // 16) * (w // 16)  # the first attention level's tokens per image
            r.notes["res"] = "%dx%d" % (w, h)
            pool = (k + 1, 0) if not fixed else (1, 0)
            cap = [(app, 71, "warm_up", "graphs[(h, w)] = capture_unet_step(pipe.unet, h, w, batch)"),
                   (app, 55, "capture_unet_step", "with torch.cuda.graph(graph%s):" % ("" if not fixed else ", pool=shared_pool")),
                   (app, 56, "capture_unet_step", "static_out = unet(static_latents, static_t, encoder_hidden_states=static_text, added_cond_kwargs=static_added).sample")]
            with r.at(cap, P.call(sp + "/diffusers/models/unets/unet_2d_condition.py", 1216, "forward", "sample, res_samples = downsample_block(")):
                r.a.begin_capture(CAPTURE, pool)
                px = (h // 8) * (w // 8) * batch * 2  # latents, classifier-free guidance doubles the batch
                skips = []
                for level, (ch, div) in enumerate([(320, 1), (640, 2), (1280, 4)]):
                    n = px // (div * div)
                    for j in range(3):
                        t = r.alloc(n * ch * 2 * 3, "temporaries", stream=CAPTURE)
                        skips.append(r.alloc(n * ch * 2, "activations", stream=CAPTURE))
                        r.free(t)
                    if level:
                        # the classic AttnProcessor materialises the scores: batch x heads x tokens^2
                        scores = tokens * tokens * 2 * batch * 2 * (10 if level == 1 else 20) // (1 if level == 1 else 16)
                        attn = r.alloc(scores, "temporaries", stream=CAPTURE)
                        r.free(attn)
                for t in reversed(skips):
                    up = r.alloc(t.requested * 2, "temporaries", stream=CAPTURE)
                    r.free(t)
                    r.free(up)
                r.alloc(px * 4 * 2, "activations", stream=CAPTURE)  # the static output the graph keeps
                r.a.end_capture(CAPTURE)

    def describe(r, rf):
        f = r.failure
        return ("Not training: an SDXL image service on one L40S (fp16 UNet, text encoders and VAE: %s) that captures "
                "its UNet step with torch.cuda.graph for each of seven served resolutions at batch 8 with classifier-free "
                "guidance, each capture without pool=, so each gets a private pool that keeps every block its capture "
                "touched (the down path's skip connections and the attention scores, which the classic AttnProcessor "
                "materialises). The pools hold %s when the capture for "
                "%s fails. Captured into one shared pool (replays never overlap), all seven graphs need %s reserved."
                % (g(f["live_by_category"].get("parameters", 0)), g(f["private_pool_reserved"]), r.notes["res"],
                   g(rf.a.peak_reserved)))

    return Spec("sdxl_unet_graphs_per_resolution_l40s_private_pools", "graph_capture", "diffusers + torch.cuda.graph",
                make, program, describe, "one pool shared by the captures", phase="eval")


ALL = [vllm_capture_sizes, per_bucket_pools, sglang_capture, sdxl_graphs_per_resolution]
