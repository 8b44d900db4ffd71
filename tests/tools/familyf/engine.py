"""An inference engine in the training process (vLLM's LLM in colocate mode, or a vLLM server):
its weights, its KV cache (one tensor per layer, sized from gpu_memory_utilization), the
transient memory of a generation step, sleep/wake and CUDA-graph capture of decode sizes."""
from run import DEFAULT


class Engine:
    def __init__(self, run, model, kv_bytes, vllm_root):
        self.run, self.m, self.kv_bytes = run, model, kv_bytes
        self.v = run.fr.lib(vllm_root) if not vllm_root.startswith("/") else vllm_root
        self.weights, self.kv = [], []

    def f(self, rel, fn, line):
        return (self.run.fr.lib("vllm/" + rel), fn, line)

    def load(self, base):
        run, m = self.run, self.m
        run.at(*base, self.f("entrypoints/llm.py", "__init__", 243), self.f("v1/engine/llm_engine.py", "from_engine_args", 180),
               self.f("v1/worker/gpu_worker.py", "load_model", 211), self.f("v1/worker/gpu_model_runner.py", "load_model", 1789),
               self.f("model_executor/model_loader/base_loader.py", "load_model", 44),
               self.f("model_executor/model_loader/utils.py", "initialize_model", 64))
        self.weights = [run.new(m.embed_numel() * 2, "parameters", op="empty")]
        for _ in range(m.layers):
            self.weights.append(run.new(m.attn_numel() * 2, "parameters", op="empty"))
            self.weights.append(run.new(m.mlp_numel() * 2, "parameters", op="empty"))
        if m.head_numel():
            self.weights.append(run.new(m.head_numel() * 2, "parameters", op="empty"))
        run.tick(3)

    def profile(self, base, tokens):
        run, m = self.run, self.m
        run.at(*base, self.f("v1/worker/gpu_worker.py", "determine_available_memory", 243),
               self.f("v1/worker/gpu_model_runner.py", "profile_run", 2613), self.f("v1/worker/gpu_model_runner.py", "_dummy_run", 2321))
        h = run.new(tokens * m.hidden * 2, "temporaries", op="empty")
        mlp = run.new(tokens * m.inter * 4, "temporaries", op="mm")
        run.free(mlp)
        logits = run.new(256 * m.vocab * 4, "temporaries", op="mm")
        run.free(logits)
        run.free(h)
        run.alloc.empty_cache(run.frames())
        run.tick(2)

    def init_kv(self, base):
        run, m = self.run, self.m
        run.at(*base, self.f("v1/worker/gpu_worker.py", "initialize_from_config", 290),
               self.f("v1/worker/gpu_model_runner.py", "initialize_kv_cache", 3105),
               self.f("v1/worker/gpu_model_runner.py", "initialize_kv_cache_tensors", 3060),
               self.f("v1/worker/gpu_model_runner.py", "_allocate_kv_cache_tensors", 2950))
        per = self.kv_bytes // m.layers // (2 << 20) * (2 << 20)
        self.kv = [run.new(per, "kv_cache", op="zeros_like") for _ in range(m.layers)]
        run.tick(2)

    def generate(self, base, prompts, prompt_len, new_tokens):
        """Prefill in chunks of max_num_batched_tokens, then decode steps: per step the hidden
        states, the MLP's intermediate and the sampler's fp32 logits for the running sequences."""
        run, m = self.run, self.m
        run.at(*base, self.f("entrypoints/llm.py", "generate", 395), self.f("entrypoints/llm.py", "_run_engine", 1520),
               self.f("v1/engine/llm_engine.py", "step", 241), self.f("v1/worker/gpu_model_runner.py", "execute_model", 1578))
        chunk = 8192
        total = prompts * prompt_len
        while total > 0:
            t = min(chunk, total)
            h = run.new(t * m.hidden * 2, "temporaries", op="empty")
            g = run.new(t * m.inter * 4, "temporaries", op="mm")
            run.free(g)
            run.free(h)
            total -= t
            run.tick()
        for step in range(0, new_tokens, 256):
            h = run.new(prompts * m.hidden * 2, "temporaries", op="empty")
            lg = run.new(prompts * m.vocab * 4, "temporaries", op="mm")
            run.free(lg)
            run.free(h)
            run.tick()
        out = run.new(prompts * (prompt_len + new_tokens) * 8, "inputs", op="copy")
        return out

    def sleep(self, base):
        run = self.run
        run.at(*base, self.f("entrypoints/llm.py", "sleep", 1390), self.f("v1/worker/gpu_worker.py", "sleep", 114),
               self.f("device_allocator/cumem.py", "sleep", 220))
        run.free_all(self.kv)
        run.free_all(self.weights)
        self.kv, self.weights = [], []
        run.alloc.empty_cache(run.frames())
        run.tick()

    def wake(self, base):
        run, m = self.run, self.m
        run.at(*base, self.f("entrypoints/llm.py", "wake_up", 1410), self.f("v1/worker/gpu_worker.py", "wake_up", 140),
               self.f("device_allocator/cumem.py", "wake_up", 256))
        self.weights = [run.new(m.embed_numel() * 2, "parameters", op="empty")]
        for _ in range(m.layers):
            self.weights.append(run.new(m.layer_numel() * 2, "parameters", op="empty"))
        if m.head_numel():
            self.weights.append(run.new(m.head_numel() * 2, "parameters", op="empty"))
        per = self.kv_bytes // m.layers // (2 << 20) * (2 << 20)
        self.kv = [run.new(per, "kv_cache", op="zeros_like") for _ in range(m.layers)]
        run.tick()

    def load_weights(self, base, nbytes):
        """model_runner.model.load_weights from the trainer: a copy into the engine's weights, with a
        bf16 staging tensor per loaded parameter."""
        run = self.run
        run.at(*base, self.f("model_executor/models/qwen2.py", "load_weights", 551),
               self.f("model_executor/model_loader/weight_utils.py", "default_weight_loader", 800))
        t = run.new(nbytes, "temporaries", op="copy")
        run.free(t)

    def capture(self, base, sizes, pool_id, stream):
        """capture_model: for each batch size, largest first, one eager warm-up on the default stream
        and the capture into the graph pool shared by all sizes (graph_pool_handle())."""
        run, m = self.run, self.m
        graphs = []
        for b in sizes:
            run.at(*base, self.f("v1/worker/gpu_model_runner.py", "capture_model", 3311),
                   self.f("v1/worker/gpu_model_runner.py", "_capture_cudagraphs", 3372),
                   self.f("v1/worker/gpu_model_runner.py", "_dummy_run", 2385),
                   self.f("compilation/cuda_graph.py", "__call__", 121))
            run.phase = "capture"
            self._forward(b, DEFAULT)  # warm-up
            run.alloc.begin_capture(pool_id, stream)
            out = self._forward(b, stream, keep_output=True)
            run.alloc.end_capture(pool_id)
            graphs.append(out)
            run.tick()
        return graphs

    def _forward(self, b, stream, keep_output=False):
        run, m = self.run, self.m
        h = run.new(b * m.hidden * 2, "activations", op="empty", stream=stream)
        for _ in range(m.layers):
            qkv = run.new(b * (m.hidden + 2 * m.kv_dim) * 2, "temporaries", op="mm", stream=stream)
            attn = run.new(b * m.hidden * 2, "temporaries", op="sdpa", stream=stream)
            run.free(qkv)
            gu = run.new(b * m.inter * 4, "temporaries", op="mm", stream=stream)
            act = run.new(b * m.inter * 2, "temporaries", op="pointwise", stream=stream)
            run.free(gu)
            h2 = run.new(b * m.hidden * 2, "activations", op="mm", stream=stream)
            run.free(act)
            run.free(attn)
            run.free(h)
            h = h2
        if keep_output:
            return h
        run.free(h)
        return None
