"""vLLM start-up and serving failures, V0 (0.5-0.6, `INFO mm-dd hh:mm:ss file.py:line]`) and V1
(0.8-0.11, `INFO mm-dd hh:mm:ss [file.py:line]`, with `(EngineCore_DP0 pid=N)` and
`(VllmWorker rank=N pid=N)` tags from 0.9 on). The budget arithmetic is the engine's own:

- V0 0.6.4 worker.determine_num_available_blocks: kv = total x gpu_memory_utilization - peak torch
  memory (weights included) - non-torch memory; blocks = kv // (block_size x bytes per token).
- V1 gpu_worker.determine_available_memory: kv = total x gpu_memory_utilization - (weights +
  activation peak + non-torch increase); kv_cache_utils turns it into blocks of 16 tokens per layer
  and refuses a max_model_len that does not fit one request (check_enough_kv_cache_memory).
"""

from common import (GiB, MiB, LLAMA31_8B, LLAMA3_70B, QWEN25_7B, QWEN25_14B, Clock, allocation_size,
                    format_size, gib, torch_oom)
from text import Log, traceback

PY312 = "/usr/local/lib/python3.12/dist-packages"
PY310 = "/usr/local/lib/python3.10/dist-packages"
V0_CAPTURE = ("Capturing cudagraphs for decoding. This may lead to unexpected consequences if the model is not "
              "static. To run the model in eager mode, set 'enforce_eager=True' or use '--enforce-eager' in the CLI.")
V0_CAPTURE_HINT = ("If out-of-memory error occurs during cudagraph capture, consider decreasing "
                   "`gpu_memory_utilization` or switching to eager mode. You can also reduce the `max_num_seqs` as "
                   "needed to decrease memory usage.")


def shards(n, rate):
    lines = [f"Loading safetensors checkpoint shards:   0% Completed | 0/{n} [00:00<?, ?it/s]"]
    for i in range(1, n + 1):
        pct = i * 100 // n
        lines.append(f"Loading safetensors checkpoint shards: {pct:3d}% Completed | {i}/{n} [00:{int(i / rate):02d}<00:"
                     f"{int((n - i) / rate):02d},  {rate:.2f}it/s]")
    lines.append(lines[-1])
    lines.append("")
    return lines


def v0(clock, level, where, msg):
    return f"{level} {clock.vllm_v0()} {where}] {msg}"


def v1(clock, level, where, msg):
    return f"{level} {clock.vllm_v0()} [{where}] {msg}"


def v0_engine_config(version, m, max_len, tp=1, eager=False, chunked=False, seed=0):
    return (f"Initializing an LLM engine (v{version}) with config: model='{m.hf_id}', speculative_config=None, "
            f"tokenizer='{m.hf_id}', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
            "override_neuron_config=None, tokenizer_revision=None, trust_remote_code=False, dtype=torch.bfloat16, "
            f"max_seq_len={max_len}, download_dir=None, load_format=LoadFormat.AUTO, tensor_parallel_size={tp}, "
            "pipeline_parallel_size=1, disable_custom_all_reduce=False, quantization=None, "
            f"enforce_eager={eager}, kv_cache_dtype=auto, quantization_param_path=None, device_config=cuda, "
            "decoding_config=DecodingConfig(guided_decoding_backend='outlines'), "
            "observability_config=ObservabilityConfig(otlp_traces_endpoint=None, collect_model_forward_time=False, "
            f"collect_model_execute_time=False), seed={seed}, served_model_name={m.hf_id}, num_scheduler_steps=1, "
            f"chunked_prefill_enabled={chunked} multi_step_stream_outputs=True, enable_prefix_caching=False, "
            "use_async_output_proc=True, use_cached_outputs=True, chat_template_text_format=string, "
            "mm_processor_kwargs=None, pooler_config=None)")


def v1_engine_config(version, m, max_len, tp=1, eager=False, quant="None", extra=""):
    return (f"Initializing a V1 LLM engine (v{version}) with config: model='{m}', speculative_config=None, "
            f"tokenizer='{m}', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
            "tokenizer_revision=None, trust_remote_code=False, dtype=torch.bfloat16, "
            f"max_seq_len={max_len}, download_dir=None, load_format=auto, tensor_parallel_size={tp}, "
            "pipeline_parallel_size=1, disable_custom_all_reduce=False, "
            f"quantization={quant}, enforce_eager={eager}, kv_cache_dtype=auto, device_config=cuda, seed=0, "
            f"served_model_name={m}, enable_prefix_caching=True, chunked_prefill_enabled=True{extra}")


def v05_engine_config(version, m, max_len, prefix_caching=False):
    return (f"Initializing an LLM engine (v{version}) with config: model='{m.hf_id}', speculative_config=None, "
            f"tokenizer='{m.hf_id}', skip_tokenizer_init=False, tokenizer_mode=auto, revision=None, "
            "rope_scaling=None, rope_theta=None, tokenizer_revision=None, trust_remote_code=False, "
            f"dtype=torch.bfloat16, max_seq_len={max_len}, download_dir=None, load_format=LoadFormat.AUTO, "
            "tensor_parallel_size=1, pipeline_parallel_size=1, disable_custom_all_reduce=False, quantization=None, "
            "enforce_eager=False, kv_cache_dtype=auto, quantization_param_path=None, device_config=cuda, "
            "decoding_config=DecodingConfig(guided_decoding_backend='outlines'), "
            f"observability_config=ObservabilityConfig(otlp_traces_endpoint=None), seed=0, served_model_name={m.hf_id}, "
            f"use_v2_block_manager=False, enable_prefix_caching={prefix_caching})")


def v05_api_frames(root):
    """vllm.entrypoints.openai.api_server in 0.5: the engine is built in the server's process."""
    return [
        (f"{root}/vllm/entrypoints/openai/api_server.py", 317, "<module>", "asyncio.run(run_server(args))"),
        ("/usr/lib/python3.10/asyncio/runners.py", 44, "run", "return loop.run_until_complete(main)"),
        ("/usr/lib/python3.10/asyncio/base_events.py", 649, "run_until_complete", "return future.result()"),
        (f"{root}/vllm/entrypoints/openai/api_server.py", 292, "run_server",
         "async with build_async_engine_client(args) as async_engine_client:"),
        ("/usr/lib/python3.10/contextlib.py", 199, "__aenter__", "return await anext(self.gen)"),
        (f"{root}/vllm/entrypoints/openai/api_server.py", 122, "build_async_engine_client",
         "async_engine_client = AsyncLLMEngine.from_engine_args("),
        (f"{root}/vllm/engine/async_llm_engine.py", 466, "from_engine_args", "engine = cls("),
    ]


def mp_engine_frames(root, line_offset=0):
    """vllm serve in 0.6: the engine runs in a spawned process (MQLLMEngine)."""
    return [
        ("/usr/lib/python3.12/multiprocessing/process.py", 314, "_bootstrap", "self.run()"),
        ("/usr/lib/python3.12/multiprocessing/process.py", 108, "run", "self._target(*self._args, **self._kwargs)"),
        (f"{root}/vllm/engine/multiprocessing/engine.py", 366, "run_mp_engine", "raise e"),
        (f"{root}/vllm/engine/multiprocessing/engine.py", 355, "run_mp_engine", "engine = MQLLMEngine.from_engine_args("),
        (f"{root}/vllm/engine/multiprocessing/engine.py", 119, "from_engine_args", "return cls(ipc_path=ipc_path,"),
        (f"{root}/vllm/engine/multiprocessing/engine.py", 71, "__init__", "self.engine = LLMEngine(*args, **kwargs)"),
    ]


def api_server_tail(root):
    return traceback([
        ("<frozen runpy>", 198, "_run_module_as_main", None),
        ("<frozen runpy>", 88, "_run_code", None),
        (f"{root}/vllm/entrypoints/openai/api_server.py", 643, "<module>", "uvloop.run(run_server(args))"),
        (f"{root}/uvloop/__init__.py", 109, "run", "return __asyncio.run("),
        ("/usr/lib/python3.12/asyncio/runners.py", 194, "run", "return runner.run(main)"),
        ("/usr/lib/python3.12/asyncio/runners.py", 118, "run", "return self._loop.run_until_complete(task)"),
        ("uvloop/loop.pyx", 1517, "uvloop.loop.Loop.run_until_complete", None),
        (f"{root}/uvloop/__init__.py", 61, "wrapper", "return await main"),
        (f"{root}/vllm/entrypoints/openai/api_server.py", 609, "run_server",
         "async with build_async_engine_client(args) as engine_client:"),
        ("/usr/lib/python3.12/contextlib.py", 210, "__aenter__", "return await anext(self.gen)"),
        (f"{root}/vllm/entrypoints/openai/api_server.py", 113, "build_async_engine_client",
         "async with build_async_engine_client_from_engine_args("),
        ("/usr/lib/python3.12/contextlib.py", 210, "__aenter__", "return await anext(self.gen)"),
        (f"{root}/vllm/entrypoints/openai/api_server.py", 210, "build_async_engine_client_from_engine_args",
         "raise RuntimeError("),
    ], "RuntimeError: Engine process failed to start")


def strip_none(lines):
    """Frames of frozen or compiled modules print no source line."""
    return [l for l in lines if l != "    None"]


# ---------------------------------------------------------------------------------------------------


def v0_llama31_8b_l4_max_model_len_128k():
    """vLLM 0.6.4.post1 serving Llama-3.1-8B-Instruct on one L4 with the model's own 131072-token
    context. The KV cache left by the budget holds 31088 tokens; one request of max_model_len needs
    131072, and raise_if_cache_size_invalid refuses to start."""
    m, version = LLAMA31_8B, "0.6.4.post1"
    total, util, block = gib(22.05), 0.90, 16
    weights = m.weight_bytes() + 32 * MiB  # bf16 parameters plus rotary caches and buffers
    ctx_before = gib(0.27)  # CUDA context and cuBLAS workspace before the profile
    act_peak = gib(0.68)  # one chunked-prefill step of 2048 tokens and the sampler of 256 sequences
    non_torch = gib(0.38)
    peak_torch = weights + act_peak
    kv = int(total * util - peak_torch - non_torch)
    block_bytes = block * m.kv_bytes_per_token()
    gpu_blocks = kv // block_bytes
    cpu_blocks = (4 * GiB) // block_bytes
    max_len = 131072
    kv_tokens = gpu_blocks * block
    assert kv_tokens < max_len
    c = Clock(2024, 11, 22, 7, 18, 41)
    log = Log("vllm-1  | ")
    log.add(v0(c, "INFO", "api_server.py:585", f"vLLM API server version {version}"),
            v0(c, "INFO", "api_server.py:586", "args: Namespace(subparser='serve', model_tag='meta-llama/Llama-3.1-8B-Instruct', "
               "config='', host=None, port=8000, uvicorn_log_level='info', allow_credentials=False, "
               f"api_key=None, model='{m.hf_id}', task='auto', tokenizer=None, skip_tokenizer_init=False, "
               "revision=None, dtype='auto', max_model_len=None, gpu_memory_utilization=0.9, swap_space=4, "
               "max_num_seqs=256, enforce_eager=False, enable_chunked_prefill=None, tensor_parallel_size=1, "
               "dispatch_function=<function serve at 0x7f3e1c8a2ac0>)"))
    c.tick(8)
    log.add(v0(c, "INFO", "config.py:350", "This model supports multiple tasks: {'generate', 'embedding'}. Defaulting to 'generate'."),
            v0(c, "WARNING", "arg_utils.py:1075", "Chunked prefill is enabled by default for models with max_model_len > 32K. "
               "Currently, chunked prefill might not work with some features or models. If you encounter any issues, "
               "please disable chunked prefill by setting --enable-chunked-prefill=False."),
            v0(c, "INFO", "config.py:1136", "Chunked prefill is enabled with max_num_batched_tokens=2048."),
            v0(c, "INFO", "api_server.py:195", "Started engine process with PID 78"))
    c.tick(5)
    log.add(v0(c, "INFO", "llm_engine.py:249", v0_engine_config(version, m, max_len, chunked=True)))
    c.tick(1)
    log.add(v0(c, "INFO", "selector.py:135", "Using Flash Attention backend."),
            v0(c, "INFO", "model_runner.py:1072", f"Starting to load model {m.hf_id}..."),
            v0(c, "INFO", "weight_utils.py:243", "Using model weights format ['*.safetensors']"))
    log.extend(shards(4, 0.71))
    c.tick(6)
    log.add(v0(c, "INFO", "model_runner.py:1077", f"Loading model weights took {weights / GiB:.4f} GB"))
    c.tick(2)
    post_profile = weights + non_torch
    log.add(v0(c, "INFO", "worker.py:232",
               f"Memory profiling results: total_gpu_memory={total / GiB:.2f}GiB "
               f"initial_memory_usage={(weights + ctx_before) / GiB:.2f}GiB peak_torch_memory={peak_torch / GiB:.2f}GiB "
               f"memory_usage_post_profile={post_profile / GiB:.2f}Gib non_torch_memory={non_torch / GiB:.2f}GiB "
               f"kv_cache_size={kv / GiB:.2f}GiB gpu_memory_utilization={util:.2f}"),
            v0(c, "INFO", "gpu_executor.py:113", f"# GPU blocks: {gpu_blocks}, # CPU blocks: {cpu_blocks}"),
            v0(c, "INFO", "gpu_executor.py:117",
               f"Maximum concurrency for {max_len} tokens per request: {kv_tokens / max_len:.2f}x"))
    err = (f"ValueError: The model's max seq len ({max_len}) is larger than the maximum number of tokens that can be "
           f"stored in KV cache ({kv_tokens}). Try increasing `gpu_memory_utilization` or decreasing `max_model_len` "
           "when initializing the engine.")
    log.add("Process SpawnProcess-1:")
    log.extend(traceback(mp_engine_frames(PY312) + [
        (f"{PY312}/vllm/engine/llm_engine.py", 350, "__init__", "self._initialize_kv_caches()"),
        (f"{PY312}/vllm/engine/llm_engine.py", 500, "_initialize_kv_caches",
         "self.model_executor.initialize_cache(num_gpu_blocks, num_cpu_blocks)"),
        (f"{PY312}/vllm/executor/gpu_executor.py", 120, "initialize_cache",
         "self.driver_worker.initialize_cache(num_gpu_blocks, num_cpu_blocks)"),
        (f"{PY312}/vllm/worker/worker.py", 264, "initialize_cache", "raise_if_cache_size_invalid(num_gpu_blocks,"),
        (f"{PY312}/vllm/worker/worker.py", 489, "raise_if_cache_size_invalid", "raise ValueError("),
    ], err))
    log.extend(strip_none(api_server_tail(PY312)))
    log.add("vllm-1 exited with code 1", prefix="")
    fits = 16384
    assert fits <= kv_tokens
    return "vllm_v0_llama31_8b_l4_max_model_len_128k.log", log.text(), dict(
        engine="vllm", version=version, stage="kv_cache_init", expected="kv_cache_budget",
        first_fix_knob="--max-model-len",
        physics=(f"Budget {util} x {total / GiB:.2f} GiB - peak torch {peak_torch / GiB:.2f} GiB (14.99 GiB bf16 weights + "
                 f"profile activations) - non-torch {non_torch / GiB:.2f} GiB leaves {kv / GiB:.2f} GiB = {gpu_blocks} "
                 f"blocks of 16 tokens x 128 KiB/token (2 x 32 layers x 8 KV heads x 128 x 2 B) = {kv_tokens} tokens, "
                 f"less than one 131072-token sequence; --max-model-len {fits} fits."),
        noise=["docker compose prefix", "interleaved INFO lines"])


def v1_085_qwen25_14b_a100_40gb_yarn_131k():
    """vLLM 0.8.5 (V1) serving Qwen2.5-14B-Instruct on one A100-40GB with YaRN to 131072 tokens."""
    m, version = QWEN25_14B, "0.8.5"
    total, util = gib(39.38), 0.90
    weights = m.weight_bytes() + 6 * MiB
    non_torch = gib(0.24)
    act = gib(1.52)  # one step of max_num_batched_tokens=8192 (V1 chunked prefill) and the sampler
    kv = int(total * util) - weights - non_torch - act
    page = 16 * m.kv_bytes_per_token()
    max_len = 131072
    needed = -(-max_len // 16) * page
    assert needed > kv
    estimated = kv // page * 16
    c = Clock(2025, 5, 6, 14, 2, 11)
    log = Log()
    log.add(v1(c, "INFO", "api_server.py:1043", f"vLLM API server version {version}"),
            v1(c, "INFO", "api_server.py:1044", f"args: Namespace(subparser='serve', model_tag='{m.hf_id}', host=None, "
               f"port=8000, model='{m.hf_id}', max_model_len={max_len}, "
               "hf_overrides={'rope_scaling': {'type': 'yarn', 'factor': 4.0, 'original_max_position_embeddings': 32768}}, "
               "gpu_memory_utilization=0.9, max_num_seqs=None, enforce_eager=False, tensor_parallel_size=1)"))
    c.tick(9)
    log.add(v1(c, "INFO", "config.py:717", "This model supports multiple tasks: {'reward', 'generate', 'embed', 'classify', 'score'}. Defaulting to 'generate'."),
            v1(c, "INFO", "config.py:2003", "Chunked prefill is enabled with max_num_batched_tokens=8192."))
    c.tick(4)
    log.add(v1(c, "INFO", "core.py:58", v1_engine_config(version, m.hf_id, max_len)))
    c.tick(1)
    log.add(v1(c, "INFO", "parallel_state.py:1004", "rank 0 in world size 1 is assigned as DP rank 0, PP rank 0, TP rank 0"),
            v1(c, "INFO", "cuda.py:221", "Using Flash Attention backend on V1 engine."),
            v1(c, "INFO", "topk_topp_sampler.py:59", "Using FlashInfer for top-p & top-k sampling."),
            v1(c, "INFO", "gpu_model_runner.py:1329", f"Starting to load model {m.hf_id}..."),
            v1(c, "INFO", "weight_utils.py:265", "Using model weights format ['*.safetensors']"))
    log.extend(shards(8, 0.84))
    c.tick(10)
    log.add(v1(c, "INFO", "loader.py:458", "Loading weights took 9.61 seconds"),
            v1(c, "INFO", "gpu_model_runner.py:1347", f"Model loading took {weights / GiB:.4f} GiB and 10.082417 seconds"))
    c.tick(7)
    log.add(v1(c, "INFO", "backends.py:420", "Using cache directory: /root/.cache/vllm/torch_compile_cache/5c0a7e1f2b/rank_0_0 for vLLM's torch.compile"),
            v1(c, "INFO", "backends.py:430", "Dynamo bytecode transform time: 6.88 s"))
    c.tick(31)
    log.add(v1(c, "INFO", "backends.py:148", "Compiling a graph for general shape takes 28.41 s"),
            v1(c, "INFO", "monitor.py:33", "torch.compile takes 35.29 s in total"))
    c.tick(3)
    usable = int(total * util)
    log.add(v1(c, "INFO", "gpu_worker.py:227", "Memory profiling takes 38.02 seconds"))
    log.add(f"the current vLLM instance can use total_gpu_memory ({total / GiB:.2f}GiB) x gpu_memory_utilization "
            f"({util:.2f}) = {usable / GiB:.2f}GiB",
            f"model weights take {weights / GiB:.2f}GiB; non_torch_memory takes {non_torch / GiB:.2f}GiB; PyTorch "
            f"activation peak memory takes {act / GiB:.2f}GiB; the rest of the memory reserved for KV Cache is "
            f"{kv / GiB:.2f}GiB.")
    err = (f"ValueError: To serve at least one request with the models's max seq len ({max_len}), "
           f"({needed / GiB:.2f} GiB KV cache is needed, which is larger than the available KV cache memory "
           f"({kv / GiB:.2f} GiB). Based on the available memory, the estimated maximum model length is {estimated}. "
           "Try increasing `gpu_memory_utilization` or decreasing `max_model_len` when initializing the engine.")
    pfx = lambda: f"ERROR {c.vllm_v0()} [core.py:396] "  # noqa: E731
    log.add(pfx() + "EngineCore failed to start.")
    log.extend(traceback([
        (f"{PY312}/vllm/v1/engine/core.py", 387, "run_engine_core", "engine_core = EngineCoreProc(*args, **kwargs)"),
        (f"{PY312}/vllm/v1/engine/core.py", 329, "__init__",
         "super().__init__(vllm_config, executor_class, log_stats,"),
        (f"{PY312}/vllm/v1/engine/core.py", 71, "__init__",
         "self._initialize_kv_caches(vllm_config)"),
        (f"{PY312}/vllm/v1/engine/core.py", 134, "_initialize_kv_caches",
         "get_kv_cache_config(vllm_config, kv_cache_spec_one_worker,"),
        (f"{PY312}/vllm/v1/core/kv_cache_utils.py", 699, "get_kv_cache_config",
         "check_enough_kv_cache_memory(vllm_config, kv_cache_spec, available_memory)"),
        (f"{PY312}/vllm/v1/core/kv_cache_utils.py", 527, "check_enough_kv_cache_memory", "raise ValueError("),
    ], err), prefix=pfx())
    log.add("Process EngineCore_0:")
    log.add("Traceback (most recent call last):", "  ...", err)
    log.add(v1(c, "ERROR", "launcher.py:116", "Engine core initialization failed. See root cause above."))
    log.add("RuntimeError: Engine core initialization failed. See root cause above.")
    return "vllm_v1_085_qwen25_14b_a100_40gb_yarn_131k.log", log.text(), dict(
        engine="vllm", version=version, stage="kv_cache_init", expected="kv_cache_budget",
        first_fix_knob="--max-model-len",
        physics=(f"0.9 x {total / GiB:.2f} GiB = {usable / GiB:.2f} GiB - {weights / GiB:.2f} GiB bf16 weights (14.77e9 x 2 B) - "
                 f"{act / GiB:.2f} GiB activation peak - {non_torch / GiB:.2f} GiB non-torch = {kv / GiB:.2f} GiB of KV cache; "
                 f"one 131072-token request needs 131072 x 192 KiB (2 x 48 layers x 8 KV heads x 128 x 2 B) = "
                 f"{needed / GiB:.2f} GiB; {estimated} tokens fit."),
        noise=["torch.compile lines", "truncated second traceback"])


def v1_011_llama31_8b_a100_40gb_utilization_040():
    """vLLM 0.11.0 told to take 40% of an A100-40GB (the card was meant to be shared) for an 8B model in
    bf16: the weights and the profile's activations exceed the share and no KV cache is left."""
    m, version = LLAMA31_8B, "0.11.0"
    total, util = gib(39.38), 0.40
    weights = m.weight_bytes() + 32 * MiB
    act, non_torch = gib(1.38), gib(0.17)
    kv = int(total * util) - weights - act - non_torch
    assert kv <= 0
    c = Clock(2025, 10, 14, 9, 40, 3)
    e = "(EngineCore_DP0 pid=2417) "
    a = "(APIServer pid=2233) "
    log = Log()
    log.add(a + v1(c, "INFO", "api_server.py:1839", f"vLLM API server version {version}"),
            a + v1(c, "INFO", "utils.py:233", f"non-default args: {{'model_tag': '{m.hf_id}', 'model': '{m.hf_id}', "
                   f"'max_model_len': 16384, 'gpu_memory_utilization': {util}}}"))
    c.tick(8)
    log.add(a + v1(c, "INFO", "model.py:547", "Resolved architecture: LlamaForCausalLM"),
            a + v1(c, "INFO", "model.py:1510", "Using max model len 16384"),
            a + v1(c, "INFO", "scheduler.py:205", "Chunked prefill is enabled with max_num_batched_tokens=2048."))
    c.tick(6)
    log.add(e + v1(c, "INFO", "core.py:644", "Waiting for init message from front-end."),
            e + v1(c, "INFO", "core.py:77", v1_engine_config(version, m.hf_id, 16384)),
            e + v1(c, "INFO", "parallel_state.py:1208", "rank 0 in world size 1 is assigned as DP rank 0, PP rank 0, TP rank 0, EP rank 0"),
            e + v1(c, "INFO", "gpu_model_runner.py:2602", f"Starting to load model {m.hf_id}..."),
            e + v1(c, "INFO", "gpu_model_runner.py:2634", "Loading model from scratch..."),
            e + v1(c, "INFO", "cuda.py:366", "Using Flash Attention backend on V1 engine."))
    log.extend(shards(4, 0.93))
    c.tick(5)
    log.add(e + v1(c, "INFO", "default_loader.py:267", "Loading weights took 4.41 seconds"),
            e + v1(c, "INFO", "gpu_model_runner.py:2653", f"Model loading took {weights / GiB:.4f} GiB and 4.903321 seconds"))
    c.tick(9)
    log.add(e + v1(c, "INFO", "backends.py:548", "Using cache directory: /root/.cache/vllm/torch_compile_cache/91d2c0e4aa/rank_0_0/backbone for vLLM's torch.compile"),
            e + v1(c, "INFO", "backends.py:559", "Dynamo bytecode transform time: 5.12 s"),
            e + v1(c, "INFO", "backends.py:197", "Cache the graph for dynamic shape for later use"))
    c.tick(24)
    log.add(e + v1(c, "INFO", "backends.py:218", "Compiling a graph for dynamic shape takes 22.87 s"),
            e + v1(c, "INFO", "monitor.py:34", "torch.compile takes 27.99 s in total"))
    c.tick(2)
    log.add(e + v1(c, "INFO", "gpu_worker.py:298", f"Available KV cache memory: {kv / GiB:.2f} GiB"))
    err = ("ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when "
           "initializing the engine.")
    pfx = e + f"ERROR {c.vllm_v0()} [core.py:708] "
    log.add(pfx + "EngineCore failed to start.")
    log.extend(traceback([
        (f"{PY312}/vllm/v1/engine/core.py", 699, "run_engine_core", "engine_core = EngineCoreProc(*args, **kwargs)"),
        (f"{PY312}/vllm/v1/engine/core.py", 498, "__init__", "super().__init__(vllm_config, executor_class, log_stats,"),
        (f"{PY312}/vllm/v1/engine/core.py", 92, "__init__", "self._initialize_kv_caches(vllm_config)"),
        (f"{PY312}/vllm/v1/engine/core.py", 199, "_initialize_kv_caches",
         "kv_cache_configs = get_kv_cache_configs(vllm_config, kv_cache_specs,"),
        (f"{PY312}/vllm/v1/core/kv_cache_utils.py", 1243, "get_kv_cache_configs",
         "check_enough_kv_cache_memory(vllm_config, kv_cache_spec_one_worker,"),
        (f"{PY312}/vllm/v1/core/kv_cache_utils.py", 716, "check_enough_kv_cache_memory", "raise ValueError("),
    ], err), prefix=pfx)
    log.add(e + "Process EngineCore_DP0:")
    log.add(e + "Traceback (most recent call last):")
    log.add(e + '  File "/usr/lib/python3.12/multiprocessing/process.py", line 314, in _bootstrap')
    log.add(e + "    self.run()")
    log.add(e + "  [...]")
    log.add(e + err)
    log.add(a + "Traceback (most recent call last):",
            a + '  File "/usr/local/bin/vllm", line 10, in <module>',
            a + "    sys.exit(main())",
            a + "  [...]",
            a + f'  File "{PY312}/vllm/v1/engine/utils.py", line 802, in wait_for_engine_startup',
            a + "    raise RuntimeError(\"Engine core initialization failed. \"",
            a + "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}")
    return "vllm_v1_011_llama31_8b_a100_40gb_utilization_040.log", log.text(), dict(
        engine="vllm", version=version, stage="kv_cache_init", expected="kv_cache_budget",
        first_fix_knob="--gpu-memory-utilization",
        physics=(f"0.40 x {total / GiB:.2f} GiB = {total * util / GiB:.2f} GiB is less than {weights / GiB:.2f} GiB of bf16 "
                 f"weights + {act / GiB:.2f} GiB activation peak + {non_torch / GiB:.2f} GiB non-torch, so the KV cache budget "
                 f"is {kv / GiB:.2f} GiB; 0.6 leaves {(total * 0.6 - weights - act - non_torch) / GiB:.2f} GiB for the cache "
                 "(the card is otherwise empty)."),
        noise=["EngineCore_DP0 and APIServer prefixes", "torch.compile lines", "elided frames [...]"])


def v1_011_llama31_8b_4090_sampler_warmup_1024():
    """vLLM 0.11.0, Llama-3.1-8B on an RTX 4090 with max_num_seqs=1024 and utilization 0.95. The
    profile measured the sampler for 1024 requests, but the CUDA graphs captured after the KV cache
    (not part of the profiled budget in 0.11) took the room, and the sampler warm-up's second
    1024 x 128256 fp32 buffer does not fit."""
    m, version = LLAMA31_8B, "0.11.0"
    total, util = gib(23.64), 0.95
    weights = m.weight_bytes() + 32 * MiB
    non_torch = gib(0.35)
    reqs = 1024
    logits = reqs * m.vocab * 4
    act = 3 * logits + gib(0.15)  # logits, the top-k mask and probabilities of 1024 requests, plus the forward
    kv = int(total * util) - weights - non_torch - act
    page = 16 * m.kv_bytes_per_token()
    blocks = kv // page
    tokens = blocks * 16
    graphs_reserved, graphs_alloc = gib(1.86), gib(1.79)
    kv_alloc = blocks * page
    reserved = weights + kv_alloc + graphs_reserved + allocation_size(logits) + 20 * MiB
    allocated = weights + kv_alloc + graphs_alloc + logits + 9 * MiB
    msg = torch_oom(logits, total, allocated, reserved, non_torch, own_pid=None,
                    private=graphs_alloc, torch_version=(2, 8))
    c = Clock(2025, 10, 21, 19, 33, 2)
    e = "(EngineCore_DP0 pid=51822) "
    a = "(APIServer pid=51610) "
    log = Log()
    log.add(a + v1(c, "INFO", "api_server.py:1839", f"vLLM API server version {version}"),
            a + v1(c, "INFO", "utils.py:233", f"non-default args: {{'model_tag': '{m.hf_id}', 'model': '{m.hf_id}', "
                   f"'max_model_len': 8192, 'gpu_memory_utilization': {util}, 'max_num_seqs': {reqs}}}"))
    c.tick(7)
    log.add(a + v1(c, "INFO", "model.py:1510", "Using max model len 8192"),
            a + v1(c, "INFO", "scheduler.py:205", "Chunked prefill is enabled with max_num_batched_tokens=8192."))
    c.tick(5)
    log.add(e + v1(c, "INFO", "core.py:77", v1_engine_config(version, m.hf_id, 8192)),
            e + v1(c, "INFO", "gpu_model_runner.py:2602", f"Starting to load model {m.hf_id}..."),
            e + v1(c, "INFO", "cuda.py:366", "Using Flash Attention backend on V1 engine."))
    log.extend(shards(4, 1.12))
    c.tick(4)
    log.add(e + v1(c, "INFO", "default_loader.py:267", "Loading weights took 3.57 seconds"),
            e + v1(c, "INFO", "gpu_model_runner.py:2653", f"Model loading took {weights / GiB:.4f} GiB and 4.118932 seconds"))
    c.tick(40)
    log.add(e + v1(c, "INFO", "backends.py:218", "Compiling a graph for dynamic shape takes 33.20 s"),
            e + v1(c, "INFO", "monitor.py:34", "torch.compile takes 38.71 s in total"))
    c.tick(3)
    log.add(e + v1(c, "INFO", "gpu_worker.py:298", f"Available KV cache memory: {kv / GiB:.2f} GiB"),
            e + v1(c, "INFO", "kv_cache_utils.py:1087", f"GPU KV cache size: {tokens:,} tokens"),
            e + v1(c, "INFO", "kv_cache_utils.py:1091",
                   f"Maximum concurrency for 8,192 tokens per request: {tokens / 8192:.2f}x"))
    log.add("Capturing CUDA graphs (mixed prefill-decode, PIECEWISE): 100%|██████████| 67/67 [00:03<00:00, 21.07it/s]",
            "Capturing CUDA graphs (decode, FULL): 100%|██████████| 67/67 [00:02<00:00, 26.33it/s]")
    c.tick(7)
    log.add(e + v1(c, "INFO", "gpu_model_runner.py:3480",
                   f"Graph capturing finished in 7 secs, took {graphs_reserved / GiB:.2f} GiB"))
    pfx = e + f"ERROR {c.vllm_v0()} [core.py:708] "
    runtime = (f"RuntimeError: CUDA out of memory occurred when warming up sampler with {reqs} dummy requests. "
               "Please try lowering `max_num_seqs` or `gpu_memory_utilization` when initializing the engine.")
    log.add(pfx + "EngineCore failed to start.")
    lines = traceback([
        (f"{PY312}/vllm/v1/worker/gpu_model_runner.py", 3217, "_dummy_sampler_run", "sampler_output = self.sampler(logits=logits,"),
        (f"{PY312}/torch/nn/modules/module.py", 1773, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)"),
        (f"{PY312}/torch/nn/modules/module.py", 1784, "_call_impl", "return forward_call(*args, **kwargs)"),
        (f"{PY312}/vllm/v1/sample/sampler.py", 100, "forward", "sampled, processed_logprobs = self.sample(logits, sampling_metadata)"),
        (f"{PY312}/vllm/v1/sample/sampler.py", 180, "sample", "random_sampled, processed_logprobs = self.topk_topp_sampler("),
        (f"{PY312}/vllm/v1/sample/ops/topk_topp_sampler.py", 122, "forward_cuda",
         "return flashinfer_sample(logits.contiguous(), k, p, generators), None"),
        (f"{PY312}/vllm/v1/sample/ops/topk_topp_sampler.py", 289, "flashinfer_sample",
         "next_token_ids = flashinfer.sampling.top_k_top_p_sampling_from_logits("),
        (f"{PY312}/flashinfer/sampling.py", 980, "top_k_top_p_sampling_from_logits", "masked_logits = top_k_mask_logits(logits, top_k)"),
        (f"{PY312}/flashinfer/sampling.py", 374, "top_k_mask_logits", "mask_logits = torch.empty_like(logits)"),
    ], msg) + ["", "The above exception was the direct cause of the following exception:", ""] + traceback([
        (f"{PY312}/vllm/v1/engine/core.py", 699, "run_engine_core", "engine_core = EngineCoreProc(*args, **kwargs)"),
        (f"{PY312}/vllm/v1/engine/core.py", 498, "__init__", "super().__init__(vllm_config, executor_class, log_stats,"),
        (f"{PY312}/vllm/v1/engine/core.py", 92, "__init__", "self._initialize_kv_caches(vllm_config)"),
        (f"{PY312}/vllm/v1/engine/core.py", 207, "_initialize_kv_caches", "self.model_executor.initialize_from_config(kv_cache_configs)"),
        (f"{PY312}/vllm/v1/executor/abstract.py", 75, "initialize_from_config", 'self.collective_rpc("compile_or_warm_up_model")'),
        (f"{PY312}/vllm/executor/uniproc_executor.py", 83, "collective_rpc", "return [run_method(self.driver_worker, method, args, kwargs)]"),
        (f"{PY312}/vllm/utils/__init__.py", 3122, "run_method", "return func(*args, **kwargs)"),
        (f"{PY312}/vllm/v1/worker/gpu_worker.py", 413, "compile_or_warm_up_model", "self.model_runner._dummy_sampler_run("),
        (f"{PY312}/torch/utils/_contextlib.py", 120, "decorate_context", "return func(*args, **kwargs)"),
        (f"{PY312}/vllm/v1/worker/gpu_model_runner.py", 3221, "_dummy_sampler_run", "raise RuntimeError("),
    ], runtime)
    log.extend(lines, prefix=pfx)
    log.add(e + "Process EngineCore_DP0:")
    log.add(e + "Traceback (most recent call last):")
    log.add(e + "  [... the same two tracebacks without the ERROR prefix ...]")
    log.add(e + runtime)
    log.add(a + "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}")
    fit_seqs = 256
    return "vllm_v1_011_llama31_8b_4090_sampler_warmup_1024.log", log.text(), dict(
        engine="vllm", version=version, stage="sampler_warmup", expected="engine_batch",
        first_fix_knob="--max-num-seqs",
        physics=(f"The sampler warm-up holds {reqs} x {m.vocab} fp32 logits ({format_size(logits)}) and asks for a second "
                 f"buffer of the same size; after weights {weights / GiB:.2f} GiB, KV {kv_alloc / GiB:.2f} GiB and CUDA graphs "
                 f"{graphs_reserved / GiB:.2f} GiB on a {total / GiB:.2f} GiB card less than that is free. With "
                 f"--max-num-seqs {fit_seqs} each buffer is {format_size(fit_seqs * m.vocab * 4)}."),
        noise=["EngineCore_DP0 and APIServer prefixes", "tqdm capture bars", "elided repeat traceback"])


def v0_054_llama31_8b_l4_profile_run_64k_no_chunking():
    """vLLM 0.5.4 with prefix caching on, which in 0.5 rules out chunked prefill, and max_model_len
    65536: the profile run pushes one batch of 65536 tokens through the model and the MLP's
    activations of that many tokens do not fit beside the weights."""
    m, version = LLAMA31_8B, "0.5.4"
    total = gib(22.05)
    tokens = 65536
    weights = m.weight_bytes() + 32 * MiB
    ctx = gib(0.31)
    hidden = tokens * m.hidden * 2
    gate_up = tokens * 2 * m.intermediate * 2
    act_out = tokens * m.intermediate * 2
    live = weights + 3 * hidden + gate_up + 64 * MiB  # residual, normed input and attention output, the MLP input
    reserved = live + 20 * MiB
    msg = torch_oom(act_out, total, live, reserved, ctx, torch_version=(2, 4))
    c = Clock(2024, 8, 13, 16, 2, 55)
    log = Log()
    log.add(v0(c, "INFO", "api_server.py:339", f"vLLM API server version {version}"),
            v0(c, "INFO", "api_server.py:340", f"args: Namespace(host=None, port=8000, model='{m.hf_id}', "
               f"max_model_len={tokens}, enable_prefix_caching=True, enable_chunked_prefill=False, "
               "gpu_memory_utilization=0.9, max_num_seqs=256, max_num_batched_tokens=None, enforce_eager=False)"))
    c.tick(6)
    log.add(v0(c, "INFO", "llm_engine.py:174", v05_engine_config(version, m, tokens, prefix_caching=True)))
    c.tick(2)
    log.add(v0(c, "INFO", "model_runner.py:720", f"Starting to load model {m.hf_id}..."),
            v0(c, "INFO", "weight_utils.py:225", "Using model weights format ['*.safetensors']"))
    log.extend(shards(4, 0.68))
    c.tick(7)
    log.add(v0(c, "INFO", "model_runner.py:732", f"Loading model weights took {weights / GiB:.4f} GB"))
    err_frames = v05_api_frames(PY310) + [
        (f"{PY310}/vllm/engine/async_llm_engine.py", 380, "__init__", "self.engine = self._init_engine(*args, **kwargs)"),
        (f"{PY310}/vllm/engine/async_llm_engine.py", 547, "_init_engine", "return engine_class(*args, **kwargs)"),
        (f"{PY310}/vllm/engine/llm_engine.py", 265, "__init__", "self._initialize_kv_caches()"),
        (f"{PY310}/vllm/engine/llm_engine.py", 364, "_initialize_kv_caches",
         "self.model_executor.determine_num_available_blocks())"),
        (f"{PY310}/vllm/executor/gpu_executor.py", 94, "determine_num_available_blocks",
         "return self.driver_worker.determine_num_available_blocks()"),
        (f"{PY310}/torch/utils/_contextlib.py", 116, "decorate_context", "return func(*args, **kwargs)"),
        (f"{PY310}/vllm/worker/worker.py", 179, "determine_num_available_blocks", "self.model_runner.profile_run()"),
        (f"{PY310}/torch/utils/_contextlib.py", 116, "decorate_context", "return func(*args, **kwargs)"),
        (f"{PY310}/vllm/worker/model_runner.py", 940, "profile_run", "self.execute_model(model_input, kv_caches, intermediate_tensors)"),
        (f"{PY310}/torch/utils/_contextlib.py", 116, "decorate_context", "return func(*args, **kwargs)"),
        (f"{PY310}/vllm/worker/model_runner.py", 1363, "execute_model", "hidden_or_intermediate_states = model_executable("),
        (f"{PY310}/torch/nn/modules/module.py", 1553, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)"),
        (f"{PY310}/torch/nn/modules/module.py", 1562, "_call_impl", "return forward_call(*args, **kwargs)"),
        (f"{PY310}/vllm/model_executor/models/llama.py", 422, "forward", "model_output = self.model(input_ids, positions, kv_caches,"),
        (f"{PY310}/torch/nn/modules/module.py", 1562, "_call_impl", "return forward_call(*args, **kwargs)"),
        (f"{PY310}/vllm/model_executor/models/llama.py", 322, "forward", "hidden_states, residual = layer("),
        (f"{PY310}/torch/nn/modules/module.py", 1562, "_call_impl", "return forward_call(*args, **kwargs)"),
        (f"{PY310}/vllm/model_executor/models/llama.py", 245, "forward", "hidden_states = self.mlp(hidden_states)"),
        (f"{PY310}/torch/nn/modules/module.py", 1562, "_call_impl", "return forward_call(*args, **kwargs)"),
        (f"{PY310}/vllm/model_executor/models/llama.py", 86, "forward", "x = self.act_fn(gate_up)"),
        (f"{PY310}/vllm/model_executor/custom_op.py", 13, "forward", "return self._forward_method(*args, **kwargs)"),
        (f"{PY310}/vllm/model_executor/layers/activation.py", 36, "forward_cuda",
         "out = torch.empty(output_shape, dtype=x.dtype, device=x.device)"),
    ]
    log.extend(traceback(err_frames, msg))
    return "vllm_v0_054_llama31_8b_l4_profile_run_64k_no_chunking.log", log.text(), dict(
        engine="vllm", version=version, stage="profile_run", expected="engine_batch",
        first_fix_knob="--max-num-batched-tokens",
        physics=(f"Without chunked prefill the profile batch is max_model_len = {tokens} tokens: hidden states "
                 f"{format_size(hidden)} each, gate_up {format_size(gate_up)} and the SiLU output {format_size(act_out)} beside "
                 f"{weights / GiB:.2f} GiB of weights on a {total / GiB:.2f} GiB L4. --max-num-batched-tokens 8192 (with "
                 "chunked prefill) cuts every one of them by 8."),
        noise=[])


def v0_064_qwen25_7b_capture_util_098():
    """vLLM 0.6.4.post1, Qwen2.5-7B-Instruct on one L4 with gpu_memory_utilization 0.98. The budget
    gives the KV cache everything but 2% of the card and the profile's activations; CUDA graph
    capture comes after the cache and its private pool outgrows what is left."""
    m, version = QWEN25_7B, "0.6.4.post1"
    total, util = gib(22.05), 0.98
    weights = m.weight_bytes() + 8 * MiB
    act = gib(0.46)  # the profile: one batch of max_num_batched_tokens=8192 tokens
    non_torch = gib(0.36)
    peak_torch = weights + act
    kv = int(total * util - peak_torch - non_torch)
    page = 16 * m.kv_bytes_per_token()
    blocks = kv // page
    kv_alloc = blocks * page
    grown = gib(0.06)  # cuBLAS workspace of the capture stream, outside PyTorch's pools
    slack = total - weights - kv_alloc - non_torch - grown
    request = 136 * 2 * m.intermediate * 2  # gate_up of the batch of 136 being captured
    pool_reserved = slack - allocation_size(request) + 6 * MiB
    pool_alloc = pool_reserved - 4 * MiB
    reserved = weights + kv_alloc + pool_reserved
    allocated = weights + kv_alloc + pool_alloc
    msg = torch_oom(request, total, allocated, reserved, non_torch + grown, private=pool_alloc, torch_version=(2, 5))
    c = Clock(2024, 12, 3, 11, 20, 7)
    log = Log()
    log.add(v0(c, "INFO", "api_server.py:585", f"vLLM API server version {version}"),
            v0(c, "INFO", "api_server.py:586", f"args: Namespace(model='{m.hf_id}', max_model_len=8192, "
               f"gpu_memory_utilization={util}, max_num_seqs=256, enforce_eager=False, tensor_parallel_size=1)"))
    c.tick(7)
    log.add(v0(c, "INFO", "llm_engine.py:249", v0_engine_config(version, m, 8192)),
            v0(c, "INFO", "selector.py:135", "Using Flash Attention backend."),
            v0(c, "INFO", "model_runner.py:1072", f"Starting to load model {m.hf_id}..."))
    log.extend(shards(4, 1.03))
    c.tick(5)
    log.add(v0(c, "INFO", "model_runner.py:1077", f"Loading model weights took {weights / GiB:.4f} GB"))
    c.tick(3)
    log.add(v0(c, "INFO", "worker.py:232",
               f"Memory profiling results: total_gpu_memory={total / GiB:.2f}GiB initial_memory_usage="
               f"{(weights + gib(0.3)) / GiB:.2f}GiB peak_torch_memory={peak_torch / GiB:.2f}GiB "
               f"memory_usage_post_profile={(weights + non_torch) / GiB:.2f}Gib non_torch_memory={non_torch / GiB:.2f}GiB "
               f"kv_cache_size={kv / GiB:.2f}GiB gpu_memory_utilization={util:.2f}"),
            v0(c, "INFO", "gpu_executor.py:113", f"# GPU blocks: {blocks}, # CPU blocks: {4 * GiB // page}"),
            v0(c, "INFO", "gpu_executor.py:117", f"Maximum concurrency for 8192 tokens per request: {blocks * 16 / 8192:.2f}x"))
    c.tick(3)
    log.add(v0(c, "INFO", "model_runner.py:1400", V0_CAPTURE), v0(c, "INFO", "model_runner.py:1404", V0_CAPTURE_HINT))
    log.add("Process SpawnProcess-1:")
    log.extend(traceback(mp_engine_frames(PY312) + [
        (f"{PY312}/vllm/engine/llm_engine.py", 350, "__init__", "self._initialize_kv_caches()"),
        (f"{PY312}/vllm/engine/llm_engine.py", 500, "_initialize_kv_caches",
         "self.model_executor.initialize_cache(num_gpu_blocks, num_cpu_blocks)"),
        (f"{PY312}/vllm/executor/gpu_executor.py", 120, "initialize_cache",
         "self.driver_worker.initialize_cache(num_gpu_blocks, num_cpu_blocks)"),
        (f"{PY312}/vllm/worker/worker.py", 273, "initialize_cache", "self._warm_up_model()"),
        (f"{PY312}/vllm/worker/worker.py", 289, "_warm_up_model", "self.model_runner.capture_model(self.gpu_cache)"),
        (f"{PY312}/torch/utils/_contextlib.py", 116, "decorate_context", "return func(*args, **kwargs)"),
        (f"{PY312}/vllm/worker/model_runner.py", 1507, "capture_model", "graph_runner.capture(**capture_inputs)"),
        (f"{PY312}/vllm/worker/model_runner.py", 1786, "capture", "output_hidden_or_intermediate_states = self.model("),
        (f"{PY312}/torch/nn/modules/module.py", 1736, "_wrapped_call_impl", "return self._call_impl(*args, **kwargs)"),
        (f"{PY312}/torch/nn/modules/module.py", 1747, "_call_impl", "return forward_call(*args, **kwargs)"),
        (f"{PY312}/vllm/model_executor/models/qwen2.py", 465, "forward", "hidden_states = self.model(input_ids, positions, kv_caches,"),
        (f"{PY312}/vllm/compilation/decorators.py", 168, "__call__", "return self.forward(*args, **kwargs)"),
        (f"{PY312}/vllm/model_executor/models/qwen2.py", 340, "forward", "hidden_states, residual = layer("),
        (f"{PY312}/torch/nn/modules/module.py", 1747, "_call_impl", "return forward_call(*args, **kwargs)"),
        (f"{PY312}/vllm/model_executor/models/qwen2.py", 247, "forward", "hidden_states = self.mlp(hidden_states)"),
        (f"{PY312}/torch/nn/modules/module.py", 1747, "_call_impl", "return forward_call(*args, **kwargs)"),
        (f"{PY312}/vllm/model_executor/models/qwen2.py", 93, "forward", "gate_up, _ = self.gate_up_proj(x)"),
        (f"{PY312}/torch/nn/modules/module.py", 1747, "_call_impl", "return forward_call(*args, **kwargs)"),
        (f"{PY312}/vllm/model_executor/layers/linear.py", 382, "forward", "output_parallel = self.quant_method.apply(self, input_, bias)"),
        (f"{PY312}/vllm/model_executor/layers/linear.py", 135, "apply", "return F.linear(x, layer.weight, bias)"),
    ], msg))
    log.add("", "During handling of the above exception, another exception occurred:", "")
    log.add("Traceback (most recent call last):", "  [...]",
            "RuntimeError: CUDA error: operation failed due to a previous error during capture")
    log.extend(strip_none(api_server_tail(PY312)))
    return "vllm_v0_064_qwen25_7b_l4_capture_util_098.log", log.text(), dict(
        engine="vllm", version=version, stage="cuda_graph_capture", expected="graph_capture",
        first_fix_knob="--enforce-eager",
        physics=(f"0.98 of {total / GiB:.2f} GiB went to {weights / GiB:.2f} GiB of weights, the {act / GiB:.2f} GiB profile peak "
                 f"and a {kv_alloc / GiB:.2f} GiB KV cache; the decode graphs captured afterwards grew their private pool to "
                 f"{pool_reserved / GiB:.2f} GiB by batch 136 and its {format_size(allocation_size(request))} gate_up output "
                 "no longer fits. Eager mode captures nothing; --gpu-memory-utilization 0.9 also leaves room."),
        noise=["secondary exception", "API server traceback"])


def v1_092_qwen25_72b_awq_tp2_l40s_capture():
    """vLLM 0.9.2 (V1), Qwen2.5-72B-Instruct-AWQ over two L40S (TP=2) at utilization 0.98. V1 in 0.9
    does not count CUDA graph memory in its profile; capture of the 67 piecewise sizes after the KV
    cache fails on worker rank 1."""
    version = "0.9.2"
    model = "Qwen/Qwen2.5-72B-Instruct-AWQ"
    total, util = gib(44.39), 0.98
    weights = gib(19.47)  # int4 weights with fp16 scales, embeddings and lm_head in fp16, per rank
    act, non_torch = gib(1.12), gib(0.61)
    kv = int(total * util) - weights - act - non_torch
    kv_per_token = 2 * 80 * (8 // 2) * 128 * 2
    page = 16 * kv_per_token
    blocks = kv // page
    kv_alloc = blocks * page
    request = 512 * 2 * (29568 // 2) * 2  # gate_up of the 512-token piece being captured, this rank's half
    grown = gib(0.09)  # NCCL and custom all-reduce buffers registered for capture
    slack = total - weights - kv_alloc - non_torch - grown
    pool_reserved = slack - allocation_size(request) + 10 * MiB
    pool_alloc = pool_reserved - 6 * MiB
    reserved = weights + kv_alloc + pool_reserved
    allocated = weights + kv_alloc + pool_alloc
    msg = torch_oom(request, total, allocated, reserved, non_torch + grown, private=pool_alloc,
                    torch_version=(2, 7), device=1)
    c = Clock(2025, 7, 19, 2, 14, 40)
    w0, w1 = "(VllmWorker rank=0 pid=3301) ", "(VllmWorker rank=1 pid=3302) "
    log = Log()
    log.add(v1(c, "INFO", "api_server.py:1395", f"vLLM API server version {version}"),
            v1(c, "INFO", "cli_args.py:325", f"non-default args: {{'model': '{model}', 'max_model_len': 32768, "
               f"'tensor_parallel_size': 2, 'gpu_memory_utilization': {util}}}"))
    c.tick(9)
    log.add(v1(c, "INFO", "awq_marlin.py:116", "The model is convertible to awq_marlin during runtime. Using awq_marlin kernel."),
            v1(c, "INFO", "core.py:455", "Waiting for init message from front-end."),
            v1(c, "INFO", "core.py:70", v1_engine_config(version, model, 32768, tp=2, quant="awq_marlin")))
    for w in (w0, w1):
        log.add(w + v1(c, "INFO", "gpu_model_runner.py:1770", f"Starting to load model {model}..."))
    log.extend(shards(11, 1.41))
    c.tick(12)
    for w in (w0, w1):
        log.add(w + v1(c, "INFO", "gpu_model_runner.py:1801", f"Model loading took {weights / GiB:.4f} GiB and 11.904771 seconds"))
    c.tick(55)
    for w in (w0, w1):
        log.add(w + v1(c, "INFO", "gpu_worker.py:232", f"Available KV cache memory: {kv / GiB:.2f} GiB"))
    tokens = blocks * 16
    log.add(v1(c, "INFO", "kv_cache_utils.py:716", f"GPU KV cache size: {tokens:,} tokens"),
            v1(c, "INFO", "kv_cache_utils.py:720", f"Maximum concurrency for 32,768 tokens per request: {tokens / 32768:.2f}x"))
    log.add(w1 + "Capturing CUDA graph shapes:  40%|████      | 27/67 [00:09<00:13,  2.95it/s]")
    pfx = w1 + f"ERROR {c.vllm_v0()} [multiproc_executor.py:546] "
    log.add(pfx + "WorkerProc hit an exception.")
    log.extend(traceback([
        (f"{PY312}/vllm/v1/executor/multiproc_executor.py", 541, "worker_busy_loop", "output = func(*args, **kwargs)"),
        (f"{PY312}/vllm/v1/worker/gpu_worker.py", 269, "compile_or_warm_up_model", "self.model_runner.capture_model()"),
        (f"{PY312}/vllm/v1/worker/gpu_model_runner.py", 2072, "capture_model",
         "self._dummy_run(num_tokens, skip_attn=skip_attn)"),
        (f"{PY312}/torch/utils/_contextlib.py", 116, "decorate_context", "return func(*args, **kwargs)"),
        (f"{PY312}/vllm/v1/worker/gpu_model_runner.py", 1826, "_dummy_run", "outputs = model("),
        (f"{PY312}/vllm/compilation/decorators.py", 246, "__call__", "model_output = self.forward(*args, **kwargs)"),
        (f"{PY312}/vllm/model_executor/models/qwen2.py", 345, "forward", "def forward("),
        (f"{PY312}/vllm/compilation/cuda_piecewise_backend.py", 178, "__call__", "with torch.cuda.graph(cudagraph, pool=self.graph_pool):"),
        (f"{PY312}/torch/cuda/graphs.py", 186, "__exit__", "self.cuda_graph.capture_end()"),
    ], msg), prefix=pfx)
    log.add(v1(c, "ERROR", "core.py:515", "EngineCore failed to start."),
            "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}")
    return "vllm_v1_092_qwen25_72b_awq_tp2_l40s_capture.log", log.text(), dict(
        engine="vllm", version=version, stage="cuda_graph_capture", expected="graph_capture",
        first_fix_knob="--gpu-memory-utilization",
        physics=(f"Per rank: 0.98 x {total / GiB:.2f} GiB = weights {weights / GiB:.2f} + activation peak {act / GiB:.2f} + "
                 f"non-torch {non_torch / GiB:.2f} + KV {kv / GiB:.2f} GiB; the piecewise graphs captured afterwards are not in "
                 f"that budget and their private pool reached {pool_reserved / GiB:.2f} GiB (the 2% outside it plus the freed "
                 f"activation peak) at the 512-token piece. 0.92 leaves {(total * 0.08 + act) / GiB:.2f} GiB for capture "
                 "(or --enforce-eager)."),
        noise=["VllmWorker rank prefixes", "tqdm capture bar"])


def v1_011_other_process_stale_engine():
    """vLLM 0.11.0 restarted in Docker while the engine of the previous container still holds the
    card: the start-up check finds less free memory than utilization 0.9 asks for."""
    version = "0.11.0"
    model = "google/gemma-3-27b-it"
    total, util = gib(79.15), 0.9
    other = gib(38.62)
    free = total - other - gib(0.41)
    requested = total * util
    assert free < requested
    c = Clock(2025, 10, 30, 8, 55, 12)
    e = "(EngineCore_DP0 pid=274) "
    a = "(APIServer pid=1) "
    err = (f"ValueError: Free memory on device ({round(free / GiB, 2)}/{round(total / GiB, 2)} GiB) on startup is less "
           f"than desired GPU memory utilization ({util}, {round(requested / GiB, 2)} GiB). Decrease GPU memory "
           "utilization or reduce GPU memory used by other processes.")
    log = Log("vllm-gemma-1  | ")
    log.add(a + v1(c, "INFO", "api_server.py:1839", f"vLLM API server version {version}"),
            a + v1(c, "INFO", "utils.py:233", f"non-default args: {{'model_tag': '{model}', 'model': '{model}', "
                   "'max_model_len': 32768, 'served_model_name': ['gemma3']}"))
    c.tick(10)
    log.add(a + v1(c, "INFO", "model.py:547", "Resolved architecture: Gemma3ForConditionalGeneration"),
            a + v1(c, "INFO", "model.py:1510", "Using max model len 32768"))
    c.tick(6)
    log.add(e + v1(c, "INFO", "core.py:644", "Waiting for init message from front-end."),
            e + v1(c, "INFO", "core.py:77", v1_engine_config(version, model, 32768)))
    pfx = e + f"ERROR {c.vllm_v0()} [core.py:708] "
    log.add(pfx + "EngineCore failed to start.")
    log.extend(traceback([
        (f"{PY312}/vllm/v1/engine/core.py", 699, "run_engine_core", "engine_core = EngineCoreProc(*args, **kwargs)"),
        (f"{PY312}/vllm/v1/engine/core.py", 498, "__init__", "super().__init__(vllm_config, executor_class, log_stats,"),
        (f"{PY312}/vllm/v1/engine/core.py", 83, "__init__", "self.model_executor = executor_class(vllm_config)"),
        (f"{PY312}/vllm/executor/executor_base.py", 54, "__init__", "self._init_executor()"),
        (f"{PY312}/vllm/executor/uniproc_executor.py", 54, "_init_executor", 'self.collective_rpc("init_device")'),
        (f"{PY312}/vllm/executor/uniproc_executor.py", 83, "collective_rpc", "return [run_method(self.driver_worker, method, args, kwargs)]"),
        (f"{PY312}/vllm/utils/__init__.py", 3122, "run_method", "return func(*args, **kwargs)"),
        (f"{PY312}/vllm/worker/worker_base.py", 259, "init_device", "self.worker.init_device()  # type: ignore"),
        (f"{PY312}/vllm/v1/worker/gpu_worker.py", 183, "init_device", "raise ValueError("),
    ], err), prefix=pfx)
    log.add(a + "RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}")
    log.add("vllm-gemma-1 exited with code 1", prefix="")
    log.add("$ nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader", prefix="")
    log.add(f"88121, VLLM::EngineCore, {other // MiB} MiB", prefix="")
    return "vllm_v1_011_gemma3_27b_startup_other_process.log", log.text(), dict(
        engine="vllm", version=version, stage="startup", expected="other_process",
        first_fix_knob="--gpu-memory-utilization",
        physics=(f"An orphaned EngineCore (pid 88121) holds {other / GiB:.2f} GiB, so only {free / GiB:.2f} of "
                 f"{total / GiB:.2f} GiB is free while 0.9 asks for {requested / GiB:.2f} GiB; the check runs before any "
                 "weight is loaded. Killing the orphan (or a utilization within what is free) fixes it."),
        noise=["docker compose prefix", "nvidia-smi output after the failure"])


def v0_054_llama3_70b_single_h100_capacity():
    """vLLM 0.5.4 asked to serve Llama-3-70B-Instruct in bf16 on one H100: model construction
    allocates the parameters on the GPU layer by layer and runs out at layer 36."""
    m, version = LLAMA3_70B, "0.5.4"
    total = gib(79.19)
    embed = m.vocab * m.hidden * 2
    qkv = m.hidden * (m.heads + 2 * m.kv_heads) * m.head_dim * 2
    o_proj = m.heads * m.head_dim * m.hidden * 2
    gate_up = 2 * m.intermediate * m.hidden * 2
    down = m.intermediate * m.hidden * 2
    ctx = gib(0.38)  # CUDA context of the H100 process
    # Construction allocates every parameter in order; the first one that does not fit fails.
    order = [("embed_tokens", embed)] + [(f"{i}.{name}", b) for i in range(m.layers) for name, b in
                                         (("qkv_proj", qkv), ("o_proj", o_proj), ("gate_up_proj", gate_up), ("down_proj", down))]
    allocated = 0
    for name, b in order:
        if allocated + allocation_size(b) + ctx + 4 * MiB > total:
            break
        allocated += b
    assert name.endswith("gate_up_proj"), name  # the traceback below shows that layer
    layer = int(name.split(".")[0])
    reserved = allocated + 4 * MiB
    msg = torch_oom(gate_up, total, allocated, reserved, ctx, torch_version=(2, 4))
    c = Clock(2024, 8, 20, 10, 4, 2)
    log = Log()
    log.add(v0(c, "INFO", "api_server.py:339", f"vLLM API server version {version}"),
            v0(c, "INFO", "api_server.py:340", f"args: Namespace(host=None, port=8000, model='{m.hf_id}', "
               "tensor_parallel_size=1, max_model_len=8192, gpu_memory_utilization=0.9)"))
    c.tick(5)
    log.add(v0(c, "INFO", "llm_engine.py:174", v05_engine_config(version, m, 8192)),
            v0(c, "INFO", "model_runner.py:720", f"Starting to load model {m.hf_id}..."))
    log.extend(traceback(v05_api_frames(PY310) + [
        (f"{PY310}/vllm/engine/async_llm_engine.py", 380, "__init__", "self.engine = self._init_engine(*args, **kwargs)"),
        (f"{PY310}/vllm/engine/async_llm_engine.py", 547, "_init_engine", "return engine_class(*args, **kwargs)"),
        (f"{PY310}/vllm/engine/llm_engine.py", 251, "__init__", "self.model_executor = executor_class("),
        (f"{PY310}/vllm/executor/executor_base.py", 47, "__init__", "self._init_executor()"),
        (f"{PY310}/vllm/executor/gpu_executor.py", 36, "_init_executor", "self.driver_worker.load_model()"),
        (f"{PY310}/vllm/worker/worker.py", 139, "load_model", "self.model_runner.load_model()"),
        (f"{PY310}/vllm/worker/model_runner.py", 722, "load_model", "self.model = get_model(model_config=self.model_config,"),
        (f"{PY310}/vllm/model_executor/model_loader/__init__.py", 21, "get_model", "return loader.load_model(model_config=model_config,"),
        (f"{PY310}/vllm/model_executor/model_loader/loader.py", 324, "load_model", "model = _initialize_model(model_config, self.load_config,"),
        (f"{PY310}/vllm/model_executor/model_loader/loader.py", 154, "_initialize_model", "return model_class(config=model_config.hf_config,"),
        (f"{PY310}/vllm/model_executor/models/llama.py", 384, "__init__", "self.model = LlamaModel(config,"),
        (f"{PY310}/vllm/model_executor/models/llama.py", 285, "__init__", "self.start_layer, self.end_layer, self.layers = make_layers("),
        (f"{PY310}/vllm/model_executor/models/utils.py", 144, "make_layers", "[PPMissingLayer() for _ in range(start_layer)] + ["),
        (f"{PY310}/vllm/model_executor/models/utils.py", 145, "<listcomp>", "maybe_offload_to_cpu(layer_fn(prefix=f\"{prefix}.{idx}\"))"),
        (f"{PY310}/vllm/model_executor/models/llama.py", 287, "<lambda>", "lambda prefix: LlamaDecoderLayer(config=config,"),
        (f"{PY310}/vllm/model_executor/models/llama.py", 220, "__init__", "self.mlp = LlamaMLP("),
        (f"{PY310}/vllm/model_executor/models/llama.py", 69, "__init__", "self.gate_up_proj = MergedColumnParallelLinear("),
        (f"{PY310}/vllm/model_executor/layers/linear.py", 372, "__init__", "super().__init__(input_size=input_size,"),
        (f"{PY310}/vllm/model_executor/layers/linear.py", 276, "__init__", "self.quant_method.create_weights("),
        (f"{PY310}/vllm/model_executor/layers/linear.py", 111, "create_weights", "weight = Parameter(torch.empty(sum(output_partition_sizes),"),
        (f"{PY310}/torch/utils/_device.py", 79, "__torch_function__", "return func(*args, **kwargs)"),
    ], msg))
    return "vllm_v0_054_llama3_70b_bf16_single_h100.log", log.text(), dict(
        engine="vllm", version=version, stage="load_weights", expected="capacity",
        first_fix_knob="--tensor-parallel-size",
        physics=(f"70.55e9 parameters x 2 B = {m.weight_bytes() / GiB:.1f} GiB of bf16 weights against {total / GiB:.2f} GiB; "
                 f"the construction stops at layer {layer} of 80 with {allocated / GiB:.2f} GiB allocated. "
                 f"--tensor-parallel-size 2 puts {m.weight_bytes() / 2 / GiB:.1f} GiB on each H100 (or use an 8/4-bit checkpoint)."),
        noise=[])


SCENARIOS = [
    v0_llama31_8b_l4_max_model_len_128k,
    v1_085_qwen25_14b_a100_40gb_yarn_131k,
    v1_011_llama31_8b_a100_40gb_utilization_040,
    v1_011_llama31_8b_4090_sampler_warmup_1024,
    v0_054_llama31_8b_l4_profile_run_64k_no_chunking,
    v0_064_qwen25_7b_capture_util_098,
    v1_092_qwen25_72b_awq_tp2_l40s_capture,
    v1_011_other_process_stale_engine,
    v0_054_llama3_70b_single_h100_capacity,
]
