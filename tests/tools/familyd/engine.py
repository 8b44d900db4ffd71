"""A colocated inference engine (vLLM or SGLang) on the trainer's GPU: its weights, its KV cache
(in the default pool, or in MemPools of its own when it runs with sleep mode / a memory saver),
generation's transient tensors, and the sleep / wake-up / offload calls of RL frameworks."""

from allocator import MiB

WEIGHTS_POOL = (0, 1)
KV_POOL = (0, 2)


class Engine:
    def __init__(self, r, P, model, tp=1, kind="vllm", pools=False, v1=True):
        self.r, self.P, self.m, self.tp, self.kind, self.pools = r, P, model, tp, kind, pools
        self.weights = []
        self.kv = []
        sp = P.sp
        if kind == "vllm":
            v = sp + "/vllm"
            self.load_frames = [(v + "/worker/worker.py" if not v1 else v + "/v1/worker/gpu_worker.py", 183, "load_model", "self.model_runner.load_model()"),
                                (v + "/model_executor/model_loader/loader.py", 483, "load_model", "model = _initialize_model(vllm_config=vllm_config)"),
                                (v + "/model_executor/layers/linear.py", 410, "__init__", "self.quant_method.create_weights(")]
            self.kv_frames = ([(v + "/worker/worker.py", 312, "_init_cache_engine", "self.cache_engine = ["),
                               (v + "/worker/cache_engine.py", 64, "__init__", "self.gpu_cache = self._allocate_kv_cache("),
                               (v + "/worker/cache_engine.py", 83, "_allocate_kv_cache", "torch.zeros(kv_cache_shape,")] if not v1 else
                              [(v + "/v1/worker/gpu_worker.py", 230, "initialize_from_config", "self.model_runner.initialize_kv_cache(kv_cache_config)"),
                               (v + "/v1/worker/gpu_model_runner.py", 2002, "_allocate_kv_cache_tensors", "tensor = torch.zeros(kv_cache_tensor.size, dtype=torch.int8, device=self.device)")])
            self.gen_frames = [(v + "/entrypoints/llm.py", 465, "generate", "outputs = self._run_engine(use_tqdm=use_tqdm)"),
                               (v + "/engine/llm_engine.py", 1390, "step", "outputs = self.model_executor.execute_model("),
                               (v + "/worker/model_runner.py", 1742, "execute_model", "hidden_or_intermediate_states = model_executable("),
                               (v + "/model_executor/models/qwen2.py", 338, "forward", "hidden_states, residual = layer(")]
        else:
            s = sp + "/sglang/srt"
            self.load_frames = [(s + "/model_executor/model_runner.py", 222, "initialize", "self.load_model()"),
                                (s + "/model_loader/loader.py", 381, "load_model", "model = _initialize_model(")]
            self.kv_frames = [(s + "/model_executor/model_runner.py", 1154, "init_memory_pool", "self.token_to_kv_pool = MHATokenToKVPool("),
                              (s + "/mem_cache/memory_pool.py", 367, "_create_buffers", "self.k_buffer = [")]
            self.gen_frames = [(s + "/managers/scheduler.py", 1010, "run_batch", "logits_output, next_token_ids, can_run_cuda_graph = ("),
                               (s + "/model_executor/model_runner.py", 1480, "forward_extend", "return self.model.forward(")]

    def _pool(self, pool):
        if self.pools:
            self.r.a.mempool_stack.append(pool)
            self.r.a.live_pools.add(pool)  # a MemPool in use: release_cached_blocks leaves it alone

    def _unpool(self):
        if self.pools:
            self.r.a.mempool_stack.pop()

    def load_weights(self, outer=()):
        r, m = self.r, self.m
        self._pool(WEIGHTS_POOL)
        with r.at(outer, self.load_frames):
            for i in range(m.layers):
                self.weights.append(r.alloc(2 * m.layer_params // self.tp, "parameters"))
            self.weights.append(r.alloc(2 * (m.embed_params + m.head_params) // self.tp, "parameters"))
        self._unpool()

    def alloc_kv(self, total, outer=()):
        r, m = self.r, self.m
        per = total // m.layers // (2 * MiB) * (2 * MiB)
        self._pool(KV_POOL)
        with r.at(outer, self.kv_frames):
            for i in range(m.layers):
                self.kv.append(r.alloc(per, "kv_cache"))
        self._unpool()
        return per * m.layers

    def free_kv(self, frames=None):
        for t in self.kv:
            self.r.free(t, frames)
        self.kv = []

    def offload_weights(self, frames=None):
        for t in self.weights:
            self.r.free(t, frames)
        self.weights = []

    def sleep(self):
        """vLLM sleep mode: the weights and KV cache pools lose their physical memory; PyTorch's view
        of them (segments, blocks, a snapshot) does not change."""
        self.r.a.unmap_pool(WEIGHTS_POOL)
        self.r.a.unmap_pool(KV_POOL)

    def wake_up(self):
        self.r.a.map_pool(WEIGHTS_POOL)
        self.r.a.map_pool(KV_POOL)

    def generate(self, prefill_tokens, seqs, outer=()):
        """One prefill chunk and one decode step's transient tensors (default pool)."""
        r, m = self.r, self.m
        with r.at(outer, self.gen_frames):
            tmp = r.tensors([prefill_tokens * m.h * 2 * 2, prefill_tokens * m.f // self.tp * 2 * 2], "temporaries")
            for t in tmp:
                r.free(t)
            logits = r.alloc(seqs * m.vocab * 4, "temporaries")
            r.free(logits)
