"""SGLang, Text Generation Inference and TensorRT-LLM failures.

- SGLang 0.4 model_runner.profile_max_num_token: rest = avail mem after loading - avail mem before
  loading x (1 - mem_fraction_static); max_total_num_tokens = rest // (KV bytes per token); a
  non-positive result raises "Not enough memory. Please try to increase --mem-fraction-static."
  SGLang's "GB" figures are get_available_gpu_memory()'s free bytes / 2^30.
- TGI flash_causal_lm.warmup runs one prefill of max_batch_prefill_tokens tokens with a KV cache for
  that batch; an OOM there becomes "Not enough memory to handle N prefill tokens".
- TensorRT-LLM deserialises the whole engine (weights included) onto one GPU per rank.
"""

from common import (GiB, MiB, LLAMA31_8B, LLAMA31_70B, MIXTRAL_8X7B, QWEN25_7B, QWEN25_32B, Clock,
                    allocation_size, format_size, gib, torch_oom)
from text import Log, traceback

SGL = "/usr/local/lib/python3.10/dist-packages/sglang/srt"
TORCH310 = "/usr/local/lib/python3.10/dist-packages/torch"
TGI = "/usr/src/server/text_generation_server"
TGI_VENV = "/usr/src/.venv/lib/python3.11/site-packages"


def sgl(c, msg, tp=0):
    return f"[{c.sglang()} TP{tp}] {msg}" if tp is not None else f"[{c.sglang()}] {msg}"


def sgl_server_args(model, tp, mfs, extra=""):
    return (f"server_args=ServerArgs(model_path='{model}', tokenizer_path='{model}', tokenizer_mode='auto', "
            "skip_tokenizer_init=False, load_format='auto', trust_remote_code=False, dtype='auto', "
            "kv_cache_dtype='auto', quantization=None, context_length=None, device='cuda', "
            f"served_model_name='{model}', chat_template=None, is_embedding=False, revision=None, host='0.0.0.0', "
            f"port=30000, mem_fraction_static={mfs}, max_running_requests=None, max_total_tokens=None, "
            f"schedule_policy='fcfs', schedule_conservativeness=1.0, cpu_offload_gb=0, tp_size={tp}, "
            f"stream_interval=1, random_seed=571391277, log_level='info'{extra})")


def mmss(seconds):
    return "%02d:%02d" % divmod(seconds, 60)


def shards(n, label="Loading safetensors checkpoint shards"):
    return ([f"{label}:   0% Completed | 0/{n} [00:00<?, ?it/s]"] +
            [f"{label}: {i * 100 // n:3d}% Completed | {i}/{n} [{mmss(2 * i)}<{mmss(2 * (n - i))},  0.50it/s]"
             for i in (n // 2, n)] + [""])


def scheduler_frames(tail):
    return [
        (f"{SGL}/managers/scheduler.py", 2215, "run_scheduler_process",
         "scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, pp_rank, dp_rank)"),
        (f"{SGL}/managers/scheduler.py", 268, "__init__", "self.tp_worker = TpWorkerClass("),
        (f"{SGL}/managers/tp_worker_overlap_thread.py", 64, "__init__", "self.worker = TpModelWorker("),
        (f"{SGL}/managers/tp_worker.py", 81, "__init__", "self.model_runner = ModelRunner("),
        (f"{SGL}/model_executor/model_runner.py", 185, "__init__", "self.initialize(min_per_gpu_memory)"),
    ] + tail


def sglang_qwen25_32b_h100_mem_fraction_070():
    """SGLang 0.4.6.post4 serving Qwen2.5-32B-Instruct in bf16 on one H100 with
    --mem-fraction-static 0.7: the static share (weights and KV pool) is smaller than the weights."""
    m, version = QWEN25_32B, "0.4.6.post4"
    total = gib(79.19)
    before = gib(78.49)
    usage = m.weight_bytes() + gib(0.15)
    after = before - usage
    mfs = 0.70
    rest = after / GiB - before / GiB * (1 - mfs)
    assert rest <= 0
    c = Clock(2025, 5, 22, 10, 14, 3)
    log = Log()
    log.add(sgl(c, sgl_server_args(m.hf_id, 1, mfs, ", chunked_prefill_size=8192, max_prefill_tokens=16384"), tp=None))
    c.tick(6)
    log.add(sgl(c, "Attention backend not set. Use flashinfer backend by default."),
            sgl(c, "Init torch distributed begin."))
    c.tick(1)
    log.add(sgl(c, "Init torch distributed ends. mem usage=0.00 GB"),
            sgl(c, f"Load weight begin. avail mem={before / GiB:.2f} GB"),
            sgl(c, "Using model weights format ['*.safetensors']"))
    log.extend(shards(17))
    c.tick(31)
    log.add(sgl(c, f"Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem={after / GiB:.2f} GB, "
                   f"mem usage={usage / GiB:.2f} GB."))
    err = "RuntimeError: Not enough memory. Please try to increase --mem-fraction-static."
    lines = traceback(scheduler_frames([
        (f"{SGL}/model_executor/model_runner.py", 227, "initialize", "self.init_memory_pool("),
        (f"{SGL}/model_executor/model_runner.py", 902, "init_memory_pool", "raise RuntimeError("),
    ]), err)
    log.add(sgl(c, "Scheduler hit an exception: " + lines[0]))
    log.extend(lines[1:])
    log.add("", sgl(c, "Received sigquit from a child process. It usually means the child failed.", tp=None), "Killed")
    fixed = 0.85
    fixed_tokens = int((after / GiB - before / GiB * (1 - fixed)) * GiB // m.kv_bytes_per_token())
    return "sglang_qwen25_32b_h100_mem_fraction_070.log", log.text(), dict(
        engine="sglang", version=version, stage="kv_cache_init", expected="kv_cache_budget",
        first_fix_knob="--mem-fraction-static",
        physics=(f"rest = {after / GiB:.2f} - {before / GiB:.2f} x (1 - 0.70) = {rest:.2f} GB: the 0.70 static share "
                 f"({before / GiB * mfs:.2f} GB) is smaller than the {usage / GiB:.2f} GB of bf16 weights (32.76e9 x 2 B), so "
                 f"no KV pool is left. --mem-fraction-static {fixed} gives {fixed_tokens} tokens at 256 KiB/token "
                 "(2 x 64 layers x 8 KV heads x 128 x 2 B)."),
        noise=["shard progress bars"])


def sglang_llama31_70b_tp4_capture_mem_fraction_098():
    """SGLang 0.4.6.post4, Llama-3.1-70B-Instruct over four A100-80GB with --mem-fraction-static 0.98
    and --cuda-graph-max-bs 512: the KV pool and the request-to-token table leave too little for the
    CUDA graph of batch 512, the first one captured."""
    m, version = LLAMA31_70B, "0.4.6.post4"
    total, tp, mfs = gib(79.15), 4, 0.98
    before = gib(78.43)
    usage = m.weight_bytes(tp=tp) + gib(0.04)
    after = before - usage
    cell = m.kv_bytes_per_token(tp=tp)
    rest = after / GiB - before / GiB * (1 - mfs)
    tokens = int(rest * GiB // cell)
    kv = tokens * cell
    context = 131072
    reqs = min(max(int(tokens / context * 512), 2048), 4096)
    req_to_token = reqs * (context + 4) * 4
    pool_end = after - kv - req_to_token
    capture_begin = pool_end - 64 * MiB  # flashinfer workspace and sampling buffers
    bs = 512
    request = bs * m.vocab * 4  # the gathered logits of batch 512 in fp32
    non_torch = total - before + gib(0.06)
    slack = total - non_torch - usage - kv - req_to_token - 64 * MiB
    pool_reserved = slack - allocation_size(request) + 8 * MiB
    pool_alloc = pool_reserved - 6 * MiB
    reserved = usage + kv + req_to_token + 64 * MiB + pool_reserved
    allocated = usage + kv + req_to_token + 64 * MiB + pool_alloc
    msg = torch_oom(request, total, allocated, reserved, non_torch, private=pool_alloc, torch_version=(2, 6))
    c = Clock(2025, 6, 2, 21, 40, 50)
    log = Log()
    log.add(sgl(c, sgl_server_args(m.hf_id, tp, mfs, ", cuda_graph_max_bs=512, disable_cuda_graph=False"), tp=None))
    c.tick(8)
    for r in range(tp):
        log.add(sgl(c, f"Load weight begin. avail mem={before / GiB:.2f} GB", tp=r))
    log.extend(shards(30))
    c.tick(64)
    for r in range(tp):
        log.add(sgl(c, f"Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail mem={after / GiB:.2f} GB, "
                       f"mem usage={usage / GiB:.2f} GB.", tp=r))
    c.tick(1)
    for r in range(tp):
        log.add(sgl(c, f"KV Cache is allocated. #tokens: {tokens}, K size: {kv / 2 / GiB:.2f} GB, V size: "
                       f"{kv / 2 / GiB:.2f} GB", tp=r))
    for r in range(tp):
        log.add(sgl(c, f"Memory pool end. avail mem={pool_end / GiB:.2f} GB", tp=r))
    graph_bs = [1, 2, 4, 8] + list(range(16, 257, 8)) + list(range(272, 513, 16))
    for r in range(tp):
        log.add(sgl(c, f"Capture cuda graph begin. This can take up to several minutes. avail mem={capture_begin / GiB:.2f} GB", tp=r))
    log.add(sgl(c, f"Capture cuda graph bs {graph_bs}"))
    log.add(f"Capturing batches (bs=512 avail_mem={capture_begin / GiB:.2f} GB):   0%|          | 0/{len(graph_bs)} [00:00<?, ?it/s]")
    c.tick(2)
    solutions = ("Possible solutions:\n"
                 "1. set --mem-fraction-static to a smaller value (e.g., 0.8 or 0.7)\n"
                 "2. set --cuda-graph-max-bs to a smaller value (e.g., 16)\n"
                 "3. disable torch compile by not using --enable-torch-compile\n"
                 "4. disable CUDA graph by --disable-cuda-graph. (Not recommended. Huge performance loss)\n"
                 "Open an issue on GitHub https://github.com/sgl-project/sglang/issues/new/choose \n")
    err = f"Exception: Capture cuda graph failed: {msg.split(': ', 1)[1]}\n{solutions}"
    # The runner raises inside its except block, so the OOM's own traceback comes first.
    cause = traceback([
        (f"{SGL}/model_executor/cuda_graph_runner.py", 268, "__init__", "self.capture()"),
        (f"{SGL}/model_executor/cuda_graph_runner.py", 352, "capture", ") = self.capture_one_batch_size(bs, forward)"),
        (f"{SGL}/model_executor/cuda_graph_runner.py", 489, "capture_one_batch_size", "run_once()"),
        (f"{SGL}/model_executor/cuda_graph_runner.py", 476, "run_once", "logits_output = forward(input_ids, forward_batch.positions, forward_batch)"),
        (f"{TORCH310}/utils/_contextlib.py", 116, "decorate_context", "return func(*args, **kwargs)"),
        (f"{SGL}/models/llama.py", 452, "forward", "return self.logits_processor("),
        (f"{TORCH310}/nn/modules/module.py", 1750, "_call_impl", "return forward_call(*args, **kwargs)"),
        (f"{SGL}/layers/logits_processor.py", 332, "forward", "logits = self._get_logits(pruned_states, lm_head, logits_metadata)"),
        (f"{SGL}/layers/logits_processor.py", 470, "_get_logits", "logits = logits[:, : self.config.vocab_size].float()"),
    ], msg)
    lines = cause + ["", "During handling of the above exception, another exception occurred:", ""] + traceback(scheduler_frames([
        (f"{SGL}/model_executor/model_runner.py", 233, "initialize", "self.init_cuda_graphs()"),
        (f"{SGL}/model_executor/model_runner.py", 1029, "init_cuda_graphs", "self.cuda_graph_runner = CudaGraphRunner(self)"),
        (f"{SGL}/model_executor/cuda_graph_runner.py", 272, "__init__", "raise Exception("),
    ]), err)
    log.add(sgl(c, "Scheduler hit an exception: " + lines[0]))
    log.extend(lines[1:])
    log.add(sgl(c, "Received sigquit from a child process. It usually means the child failed.", tp=None), "Killed")
    return "sglang_llama31_70b_tp4_capture_mem_fraction_098.log", log.text(), dict(
        engine="sglang", version=version, stage="cuda_graph_capture", expected="graph_capture",
        first_fix_knob="--mem-fraction-static",
        physics=(f"Per rank {usage / GiB:.2f} GB of bf16 weights (70.55e9 x 2 B / 4); 0.98 sizes the KV pool at {tokens} tokens "
                 f"x {cell // 1024} KiB = {kv / GiB:.2f} GB, the request-to-token table ({reqs} x {context + 4} int32) "
                 f"takes {format_size(req_to_token)}, and the graph of batch 512 (captured first) needs its "
                 f"{format_size(request)} fp32 logits in a pool that no longer fits. 0.90 leaves 6 GB for capture."),
        noise=["four ranks' interleaved lines", "tqdm capture bar"])


def sglang_qwen25_7b_l4_prompt_logprobs_31k():
    """SGLang 0.4.6.post4 serving Qwen2.5-7B-Instruct on an L4 with chunked prefill turned off. An
    evaluation harness asks for the log-probabilities of every prompt token (logprob_start_len=0) of a
    31500-token document: the logits of the whole prompt are one 31500 x 152064 matrix."""
    m, version = QWEN25_7B, "0.4.6.post4"
    total, mfs = gib(22.05), 0.85
    before = gib(21.62)
    usage = m.weight_bytes() + gib(0.05)
    after = before - usage
    rest = after / GiB - before / GiB * (1 - mfs)
    cell = m.kv_bytes_per_token()
    tokens = int(rest * GiB // cell)
    kv = tokens * cell
    context = 32768
    reqs = min(max(int(tokens / context * 512), 2048), 4096)
    req_to_token = reqs * (context + 4) * 4
    pool_end = after - kv - req_to_token
    graphs = gib(0.31)
    prompt = 31500
    request = prompt * m.vocab * 2  # bf16 logits of every prompt position
    acts = prompt * m.hidden * 2 * 3 + gib(0.2)  # final hidden states, normed copy, pruned states
    non_torch = total - before + gib(0.04)
    reserved = usage + kv + req_to_token + graphs + acts + 40 * MiB
    allocated = usage + kv + req_to_token + gib(0.29) + acts
    msg = torch_oom(request, total, allocated, reserved, non_torch, private=gib(0.29), torch_version=(2, 6))
    c = Clock(2025, 6, 11, 4, 2, 19)
    log = Log()
    log.add(sgl(c, sgl_server_args(m.hf_id, 1, mfs, ", chunked_prefill_size=-1, max_prefill_tokens=32768"), tp=None))
    c.tick(7)
    log.add(sgl(c, f"Load weight begin. avail mem={before / GiB:.2f} GB"))
    log.extend(shards(4))
    c.tick(9)
    log.add(sgl(c, f"Load weight end. type=Qwen2ForCausalLM, dtype=torch.bfloat16, avail mem={after / GiB:.2f} GB, "
                   f"mem usage={usage / GiB:.2f} GB."),
            sgl(c, f"KV Cache is allocated. #tokens: {tokens}, K size: {kv / 2 / GiB:.2f} GB, V size: {kv / 2 / GiB:.2f} GB"),
            sgl(c, f"Memory pool end. avail mem={pool_end / GiB:.2f} GB"),
            sgl(c, f"Capture cuda graph begin. This can take up to several minutes. avail mem={pool_end / GiB:.2f} GB"))
    c.tick(14)
    log.add(sgl(c, f"Capture cuda graph end. Time elapsed: 13.72 s. mem usage={graphs / GiB:.2f} GB. avail mem="
                   f"{(pool_end - graphs) / GiB:.2f} GB."),
            sgl(c, f"max_total_num_tokens={tokens}, chunked_prefill_size=-1, max_prefill_tokens=32768, "
                   f"max_running_requests={reqs}, context_len={context}, available_gpu_mem={(pool_end - graphs) / GiB:.2f} GB"))
    c.tick(1)
    log.add(sgl(c, "INFO:     Started server process [61]", tp=None),
            sgl(c, "INFO:     Uvicorn running on http://0.0.0.0:30000 (Press CTRL+C to quit)", tp=None),
            sgl(c, "The server is fired up and ready to roll!", tp=None))
    for i, n in enumerate((1840, 2617, 977)):
        c.tick(3)
        log.add(sgl(c, f"Prefill batch. #new-seq: 1, #new-token: {n}, #cached-token: 0, token usage: 0.00, "
                       "#running-req: 0, #queue-req: 0"),
                sgl(c, f'INFO:     127.0.0.1:5{1804 + i} - "POST /generate HTTP/1.1" 200 OK', tp=None))
    c.tick(4)
    log.add(sgl(c, f"Prefill batch. #new-seq: 1, #new-token: {prompt}, #cached-token: 0, token usage: 0.00, "
                   "#running-req: 0, #queue-req: 0"))
    lines = traceback([
        (f"{SGL}/managers/scheduler.py", 2225, "run_scheduler_process", "scheduler.event_loop_overlap()"),
        (f"{TORCH310}/utils/_contextlib.py", 116, "decorate_context", "return func(*args, **kwargs)"),
        (f"{SGL}/managers/scheduler.py", 669, "event_loop_overlap", "batch_result = self.run_batch(batch)"),
        (f"{SGL}/managers/scheduler.py", 1629, "run_batch", "logits_output, next_token_ids, can_run_cuda_graph = ("),
        (f"{SGL}/managers/tp_worker_overlap_thread.py", 240, "resolve_last_batch_result", "copy_done.synchronize()"),
        (f"{SGL}/managers/tp_worker_overlap_thread.py", 139, "forward_thread_func_", "self.worker.forward_batch_generation("),
        (f"{SGL}/managers/tp_worker.py", 207, "forward_batch_generation", "logits_output, can_run_cuda_graph = self.model_runner.forward("),
        (f"{SGL}/model_executor/model_runner.py", 1130, "forward", "return self.forward_extend("),
        (f"{SGL}/model_executor/model_runner.py", 1073, "forward_extend", "return self.model.forward("),
        (f"{TORCH310}/utils/_contextlib.py", 116, "decorate_context", "return func(*args, **kwargs)"),
        (f"{SGL}/models/qwen2.py", 398, "forward", "return self.logits_processor("),
        (f"{TORCH310}/nn/modules/module.py", 1750, "_call_impl", "return forward_call(*args, **kwargs)"),
        (f"{SGL}/layers/logits_processor.py", 332, "forward", "logits = self._get_logits(pruned_states, lm_head, logits_metadata)"),
        (f"{SGL}/layers/logits_processor.py", 452, "_get_logits", "logits = torch.matmul("),
    ], msg)
    log.add(sgl(c, "Scheduler hit an exception: " + lines[0]))
    log.extend(lines[1:])
    log.add("", sgl(c, "Received sigquit from a child process. It usually means the child failed.", tp=None), "Killed")
    return "sglang_qwen25_7b_l4_prompt_logprobs_31k.log", log.text(), dict(
        engine="sglang", version=version, stage="prefill", expected="large_allocation",
        first_fix_knob="logprob_start_len",
        physics=(f"Input log-probabilities from position 0 need the logits of all {prompt} prompt positions at once: "
                 f"{prompt} x {m.vocab} x 2 B = {format_size(request)}, {request / total * 100:.0f}% of the "
                 f"{total / GiB:.2f} GiB L4, beside the {usage / GiB:.2f} GB weights and the {kv / GiB:.2f} GB KV pool. "
                 "Asking only for the positions that are scored (logprob_start_len near the answer), or chunked "
                 "prefill, keeps the buffer small."),
        noise=["request access log lines", "uvicorn lines"])


def tgi_line(c, level, target, msg, micros):
    return f"{c.tgi(micros)} {level:>5} {target}: {msg}"


def tgi_args(m, **kv):
    base = dict(model_id=f'"{m.hf_id}"', revision="None", validation_workers="2", sharded="None",
                num_shard="None", quantize="None", speculate="None", dtype="None", kv_cache_dtype="None",
                trust_remote_code="false", max_concurrent_requests="128", max_best_of="2", max_stop_sequences="4",
                max_top_n_tokens="5", max_input_tokens="None", max_input_length="None", max_total_tokens="None",
                waiting_served_ratio="0.3", max_batch_prefill_tokens="None", max_batch_total_tokens="None",
                max_waiting_tokens="20", max_batch_size="None", cuda_graphs="None", hostname='"0d5a1e9c2b7f"',
                port="80", shard_uds_path='"/tmp/text-generation-server"', master_addr='"localhost"',
                master_port="29500", huggingface_hub_cache="None", weights_cache_override="None",
                disable_custom_kernels="false", cuda_memory_fraction="1.0", rope_scaling="None", rope_factor="None",
                json_output="false", otlp_endpoint="None", otlp_service_name='"text-generation-inference.router"',
                cors_allow_origin="[]", api_key="None", watermark_gamma="None", watermark_delta="None",
                ngrok="false", ngrok_authtoken="None", ngrok_edge="None", tokenizer_config_path="None",
                disable_grammar_support="false", env="false", max_client_batch_size="4", lora_adapters="None",
                usage_stats="On")
    base.update(kv)
    return "Args { " + ", ".join(f"{k}: {v}" for k, v in base.items()) + " }"


def tgi_llama31_8b_l4_prefill_32k():
    """TGI 2.4.1 serving Llama-3.1-8B-Instruct on one L4 for 32k-token contexts with
    --max-batch-prefill-tokens 32768: warm-up runs one 32768-token prefill with its KV cache and the
    MLP's activations of that many tokens do not fit beside the weights."""
    m, version = LLAMA31_8B, "2.4.1"
    total = gib(22.05)
    tokens = 32768
    weights = m.weight_bytes() + 32 * MiB
    kv = tokens * m.kv_bytes_per_token()
    hidden = tokens * m.hidden * 2
    gate_up = tokens * 2 * m.intermediate * 2
    act_out = tokens * m.intermediate * 2
    ctx = gib(0.38)
    allocated = weights + kv + 3 * hidden + gate_up + 16 * MiB
    reserved = allocated + 26 * MiB
    msg = torch_oom(act_out, total, allocated, reserved, ctx, torch_version=(2, 4))
    c = Clock(2024, 10, 22, 9, 12, 31)
    launcher = "text_generation_launcher"
    log = Log()
    log.add(tgi_line(c, "INFO", launcher, tgi_args(m, max_input_tokens="Some(32000)", max_total_tokens="Some(32768)",
                                                     max_batch_prefill_tokens="Some(32768)"), 118204),
            tgi_line(c, "INFO", launcher, "Using attention flashinfer - Prefix caching true", 118390),
            tgi_line(c, "INFO", "download: " + launcher, "Starting check and download process for "
                     f"{m.hf_id}", 118502))
    c.tick(4)
    log.add(tgi_line(c, "INFO", "download: " + launcher, f"Successfully downloaded weights for {m.hf_id}", 301977),
            tgi_line(c, "INFO", "shard-manager: " + launcher, "Starting shard rank=0", 302311))
    c.tick(10)
    log.add(tgi_line(c, "INFO", "shard-manager: " + launcher, "Waiting for shard to be ready... rank=0", 312050))
    c.tick(17)
    log.add(tgi_line(c, "INFO", launcher, "Server started at unix:///tmp/text-generation-server-0", 120117),
            tgi_line(c, "INFO", "shard-manager: " + launcher, "Shard ready in 27.317436502s rank=0", 120544),
            tgi_line(c, "INFO", launcher, "Starting Webserver", 211009),
            tgi_line(c, "INFO", "text_generation_router_v3", "backends/v3/src/lib.rs:125: Warming up model", 239871))
    c.tick(2)
    log.add(tgi_line(c, "ERROR", launcher, "Method Warmup encountered an error.", 884213))
    runtime = ("RuntimeError: Not enough memory to handle 32768 prefill tokens. You need to decrease "
               "`--max-batch-prefill-tokens`")
    frames = traceback([
        (f"{TGI}/models/flash_causal_lm.py", 1537, "warmup", "_, _batch, _ = self.generate_token(batch)"),
        ("/usr/src/.venv/lib/python3.11/contextlib.py", 81, "inner", "return func(*args, **kwds)"),
        (f"{TGI}/models/flash_causal_lm.py", 1866, "generate_token", "out, speculative_logits = self.forward(batch, adapter_data)"),
        (f"{TGI}/models/flash_causal_lm.py", 1788, "forward", "logits, speculative_logits = self.model.forward("),
        (f"{TGI}/models/custom_modeling/flash_llama_modeling.py", 679, "forward", "hidden_states = self.model("),
        (f"{TGI_VENV}/torch/nn/modules/module.py", 1562, "_call_impl", "return forward_call(*args, **kwargs)"),
        (f"{TGI}/models/custom_modeling/flash_llama_modeling.py", 603, "forward", "hidden_states, residual = layer("),
        (f"{TGI_VENV}/torch/nn/modules/module.py", 1562, "_call_impl", "return forward_call(*args, **kwargs)"),
        (f"{TGI}/models/custom_modeling/flash_llama_modeling.py", 525, "forward", "mlp_output = self.mlp(normed_attn_res_output, adapter_data)"),
        (f"{TGI_VENV}/torch/nn/modules/module.py", 1562, "_call_impl", "return forward_call(*args, **kwargs)"),
        (f"{TGI}/models/custom_modeling/flash_llama_modeling.py", 405, "forward", "self.act(gate_up_states[:, 0]) * gate_up_states[:, 1],"),
    ], msg) + ["", "The above exception was the direct cause of the following exception:", ""] + traceback([
        (f"{TGI_VENV}/grpc_interceptor/server.py", 165, "invoke_intercept_method", "return await self.intercept("),
        (f"{TGI}/interceptor.py", 24, "intercept", "return await response"),
        (f"{TGI}/server.py", 142, "Warmup", "self.model.warmup(batch, max_input_tokens, max_total_tokens)"),
        (f"{TGI}/models/flash_causal_lm.py", 1550, "warmup", "raise RuntimeError("),
    ], runtime)
    log.extend(frames)
    log.add(tgi_line(c, "ERROR", "warmup{max_input_length=Some(32000) max_prefill_tokens=32768 max_total_tokens=Some(32768) "
                     "max_batch_size=None}:warmup: text_generation_router_v3::client",
                     f"backends/v3/src/client/mod.rs:45: Server error: {runtime.split(': ', 1)[1]}", 885101))
    log.add(f'Error: Backend(Warmup(Generation("{runtime.split(": ", 1)[1]}")))')
    log.add(tgi_line(c, "ERROR", launcher, "Webserver Crashed", 902377),
            tgi_line(c, "INFO", launcher, "Shutting down shards", 902401))
    c.tick(1)
    log.add(tgi_line(c, "INFO", "shard-manager: " + launcher, "Terminating shard rank=0", 112004),
            tgi_line(c, "INFO", "shard-manager: " + launcher, "Waiting for shard to gracefully shutdown rank=0", 112160),
            tgi_line(c, "INFO", "shard-manager: " + launcher, "shard terminated rank=0", 412899))
    return "tgi_llama31_8b_l4_max_batch_prefill_tokens_32k.log", log.text(), dict(
        engine="tgi", version=version, stage="warmup_prefill", expected="engine_batch",
        first_fix_knob="--max-batch-prefill-tokens",
        physics=(f"Warm-up prefill of 32768 tokens: its KV cache {format_size(kv)} (128 KiB/token), hidden states "
                 f"{format_size(hidden)} each, gate_up {format_size(gate_up)} and the activation output "
                 f"{format_size(act_out)} beside {weights / GiB:.2f} GiB of weights on a {total / GiB:.2f} GiB L4. "
                 "--max-batch-prefill-tokens 8192 (prefill chunking keeps 32k contexts) cuts the activations by 4."),
        noise=["launcher and router lines", "chained exception"])


def tgi_mixtral_8x7b_single_a100_capacity():
    """TGI 2.4.1 asked to serve Mixtral-8x7B-Instruct in bf16 on one A100-80GB (no --num-shard): the
    shard runs out of memory while loading the experts."""
    m, version = MIXTRAL_8X7B, "2.4.1"
    total = gib(79.15)
    expert = m.intermediate * m.hidden * 2  # one of w1/w2/w3 of one expert
    embed = m.vocab * m.hidden * 2
    attn = (m.hidden * (m.heads + 2 * m.kv_heads) * m.head_dim + m.heads * m.head_dim * m.hidden) * 2
    per_layer = attn + 8 * 3 * expert + 8 * m.hidden * 2
    ctx = gib(0.41)
    allocated, layer, loaded = embed, 0, 0
    while True:  # layers load in order: attention, then w1, w3, w2 of each expert
        parts = [attn] + [expert] * 24
        for i, b in enumerate(parts):
            if allocated + allocation_size(b) + ctx + 2 * MiB > total:
                break
            allocated += b
        else:
            layer += 1
            continue
        loaded = i
        break
    reserved = allocated + 2 * MiB
    msg = torch_oom(expert, total, allocated, reserved, ctx, torch_version=(2, 4))
    c = Clock(2024, 10, 28, 15, 3, 9)
    launcher = "text_generation_launcher"
    log = Log()
    log.add(tgi_line(c, "INFO", launcher, tgi_args(m, max_input_tokens="Some(8191)", max_total_tokens="Some(8192)"), 410331),
            tgi_line(c, "INFO", launcher, "Using attention flashinfer - Prefix caching true", 410517),
            tgi_line(c, "INFO", "download: " + launcher, f"Starting check and download process for {m.hf_id}", 410688))
    c.tick(3)
    log.add(tgi_line(c, "INFO", "download: " + launcher, f"Successfully downloaded weights for {m.hf_id}", 220150),
            tgi_line(c, "INFO", "shard-manager: " + launcher, "Starting shard rank=0", 220533))
    c.tick(10)
    log.add(tgi_line(c, "INFO", "shard-manager: " + launcher, "Waiting for shard to be ready... rank=0", 230877))
    c.tick(10)
    log.add(tgi_line(c, "INFO", "shard-manager: " + launcher, "Waiting for shard to be ready... rank=0", 241019))
    c.tick(9)
    log.add(tgi_line(c, "ERROR", launcher, "Error when initializing model", 650344))
    tb = traceback([
        ("/usr/src/.venv/bin/text-generation-server", 10, "<module>", "sys.exit(app())"),
        (f"{TGI}/cli.py", 116, "serve", "server.serve("),
        (f"{TGI}/server.py", 315, "serve", "asyncio.run("),
        (f"{TGI}/server.py", 266, "serve_inner", "model = get_model_with_lora_adapters("),
        (f"{TGI}/models/__init__.py", 1322, "get_model_with_lora_adapters", "model = get_model("),
        (f"{TGI}/models/__init__.py", 1016, "get_model", "return FlashCausalLM("),
        (f"{TGI}/models/flash_causal_lm.py", 1193, "__init__", "model = model_class(prefix, config, weights)"),
        (f"{TGI}/models/custom_modeling/flash_mixtral_modeling.py", 489, "__init__", "self.model = MixtralModel("),
        (f"{TGI}/models/custom_modeling/flash_mixtral_modeling.py", 419, "__init__", "MixtralLayer("),
        (f"{TGI}/models/custom_modeling/flash_mixtral_modeling.py", 349, "__init__", "self.moe = moe_layer_cls("),
        (f"{TGI}/layers/moe/__init__.py", 190, "__init__", "self.model = SparseMoELayer("),
        (f"{TGI}/layers/moe/unquantized.py", 52, "__init__", "self.gate_up_proj = _load_expert_multi_weights_col("),
        (f"{TGI}/layers/moe/unquantized.py", 132, "_load_expert_multi_weights_col", "slice_ = weights._get_slice(f\"{prefix}.{i}.{gate_proj_name}.weight\")"),
        (f"{TGI}/utils/weights.py", 232, "get_tensor", "tensor = tensor.to(device=self.device)"),
    ], msg)
    log.extend(tb)
    log.add(tgi_line(c, "ERROR", "shard-manager: " + launcher, "Shard complete standard error output:", 980215))
    log.add("", "  [the traceback above, repeated]", msg.split("\n")[0], " rank=0")
    log.add(tgi_line(c, "ERROR", launcher, "Shard 0 failed to start", 993007),
            tgi_line(c, "INFO", launcher, "Shutting down shards", 993040),
            "Error: ShardCannotStart")
    return "tgi_mixtral_8x7b_bf16_single_a100_80gb.log", log.text(), dict(
        engine="tgi", version=version, stage="load_weights", expected="capacity",
        first_fix_knob="--num-shard",
        physics=(f"46.70e9 parameters x 2 B = {m.weight_bytes() / GiB:.2f} GiB of bf16 weights on a {total / GiB:.2f} GiB card; "
                 f"loading stops in layer {layer} of 32 with {allocated / GiB:.2f} GiB allocated. --num-shard 2 puts "
                 f"{m.weight_bytes() / 2 / GiB:.1f} GiB on each of two GPUs (or --quantize to 8/4 bits)."),
        noise=["repeated stderr dump"])


def trtllm_llama31_70b_fp16_engine_one_h100():
    """TensorRT-LLM 0.14.0: an engine built from Llama-3.1-70B in fp16 with --tp_size 1, run on one
    H100. Deserialising it needs the whole engine in device memory and fails."""
    m, version = LLAMA31_70B, "0.14.0"
    total = gib(79.19)
    engine_mib = (m.weight_bytes() + 27 * MiB) // MiB  # weights plus the engine's own tables
    assert engine_mib * MiB > total
    log = Log()
    log.add("$ mpirun -n 1 --allow-run-as-root python3 examples/run.py --engine_dir ./engines/llama31_70b_fp16_tp1 \\",
            "    --tokenizer_dir ./Llama-3.1-70B-Instruct --max_output_len 512 --input_text \"What is the capital of France?\"")
    log.add(f"[TensorRT-LLM] TensorRT-LLM version: {version}",
            f"[TensorRT-LLM][INFO] Engine version {version} found in the config file, assuming engine(s) built by new builder API.",
            "[TensorRT-LLM][INFO] Refreshed the MPI local session",
            "[TensorRT-LLM][INFO] MPI size: 1, MPI local size: 1, rank: 0",
            "[TensorRT-LLM][INFO] Rank 0 is using GPU 0",
            "[TensorRT-LLM][INFO] TRTGptModel maxNumSequences: 64",
            "[TensorRT-LLM][INFO] TRTGptModel maxBatchSize: 64",
            "[TensorRT-LLM][INFO] TRTGptModel maxBeamWidth: 1",
            "[TensorRT-LLM][INFO] TRTGptModel maxSequenceLen: 8192",
            "[TensorRT-LLM][INFO] TRTGptModel maxDraftLen: 0",
            "[TensorRT-LLM][INFO] TRTGptModel mMaxAttentionWindowSize: (8192) * 80",
            "[TensorRT-LLM][INFO] TRTGptModel enableTrtOverlap: 0",
            "[TensorRT-LLM][INFO] TRTGptModel normalizeLogProbs: 1",
            "[TensorRT-LLM][INFO] TRTGptModel maxNumTokens: 8192",
            "[TensorRT-LLM][INFO] TRTGptModel maxInputLen: 8191 = maxSequenceLen - 1 since chunked context is enabled",
            "[TensorRT-LLM][INFO] TRTGptModel If model type is encoder, maxInputLen would be reset in trtEncoderModel to maxInputLen: 8192 = maxSequenceLen.",
            "[TensorRT-LLM][INFO] Capacity Scheduler Policy: GUARANTEED_NO_EVICT",
            "[TensorRT-LLM][INFO] Context Chunking Scheduler Policy: None",
            f"[TensorRT-LLM][INFO] Loaded engine size: {engine_mib} MiB",
            f"[TensorRT-LLM][WARNING] Requested amount of GPU memory ({engine_mib * MiB} bytes) could not be allocated. "
            "There may not be enough free memory for allocation to succeed.",
            "[TensorRT-LLM][ERROR] 1: [defaultAllocator.cpp::allocate::31] Error Code 1: Cuda Runtime (out of memory)",
            "[TensorRT-LLM][ERROR] 2: [runtime.cpp::loadPlan::153] Error Code 2: OutOfMemory (Requested size was "
            f"{engine_mib * MiB} bytes.)")
    log.extend(traceback([
        ("/app/tensorrt_llm/examples/run.py", 887, "<module>", "main(args)"),
        ("/app/tensorrt_llm/examples/run.py", 708, "main", "runner = runner_cls.from_dir(**runner_kwargs)"),
        ("/usr/local/lib/python3.10/dist-packages/tensorrt_llm/runtime/model_runner_cpp.py", 258, "from_dir",
         "executor = trtllm.Executor(engine_dir, trtllm.ModelType.DECODER_ONLY,"),
    ], "RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: Failed to deserialize cuda engine. "
       "(/home/jenkins/agent/workspace/LLM/release-0.14/L0_PostMerge/llm/cpp/tensorrt_llm/runtime/tllmRuntime.cpp:239)\n"
       "1       0x7f4c6a2e6f5b tensorrt_llm::common::throwRuntimeError(char const*, int, std::string const&) + 82\n"
       "2       0x7f4c6a8f0c31 tensorrt_llm::runtime::TllmRuntime::TllmRuntime(tensorrt_llm::runtime::RawEngine const&, "
       "nvinfer1::ILogger*, float, bool) + 1217\n"
       "3       0x7f4c6ab81f2e tensorrt_llm::batch_manager::TrtGptModelInflightBatching::TrtGptModelInflightBatching("
       "std::shared_ptr<nvinfer1::ILogger>, tensorrt_llm::runtime::ModelConfig const&, tensorrt_llm::runtime::WorldConfig "
       "const&, tensorrt_llm::runtime::RawEngine const&, bool, tensorrt_llm::batch_manager::TrtGptModelOptionalParams const&) + 734"))
    log.add("--------------------------------------------------------------------------",
            "Primary job  terminated normally, but 1 process returned",
            "a non-zero exit code. Per user-direction, the job has been aborted.",
            "--------------------------------------------------------------------------")
    return "trtllm_llama31_70b_fp16_engine_tp1_one_h100.log", log.text(), dict(
        engine="trtllm", version=version, stage="load_weights", expected="capacity",
        first_fix_knob="--tp_size",
        physics=(f"The fp16 engine carries the 70.55e9 parameters x 2 B = {engine_mib} MiB of weights, more than the "
                 f"{total / GiB:.2f} GiB of one H100; rebuilding with --tp_size 2 (convert_checkpoint and trtllm-build, run "
                 "with mpirun -n 2) puts half on each GPU; fp8 or int4-AWQ weights would also fit."),
        noise=["mpirun banner", "C++ stack frames"])


SCENARIOS = [
    sglang_qwen25_32b_h100_mem_fraction_070,
    sglang_llama31_70b_tp4_capture_mem_fraction_098,
    sglang_qwen25_7b_l4_prompt_logprobs_31k,
    tgi_llama31_8b_l4_prefill_32k,
    tgi_mixtral_8x7b_single_a100_capacity,
    trtllm_llama31_70b_fp16_engine_one_h100,
]
