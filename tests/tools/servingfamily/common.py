"""What every serving scenario shares: byte units, PyTorch's out-of-memory message as the caching
allocator writes it, the allocator's request rounding, a clock for log timestamps and the model
shapes the scenarios serve (parameter counts and attention geometry from each model's config.json).

Nothing here reads oomlens. Every figure a log prints is derived from the inputs of its scenario,
so the numbers of one log agree with each other the way the engine's own arithmetic makes them.
"""

import datetime

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30


def gib(x):
    """Bytes of x GiB, rounded to a whole MiB (device totals and budgets are MiB-granular)."""
    return int(round(x * GiB / MiB)) * MiB


def format_size(n):
    """c10::CUDACachingAllocator's format_size: bytes, KiB, MiB or GiB with two decimals."""
    if n <= 1024:
        return f"{n} bytes"
    if n <= 1048576:
        return f"{n / 1024.0:.2f} KiB"
    if n <= 1073741824:
        return f"{n / 1048576.0:.2f} MiB"
    return f"{n / 1073741824.0:.2f} GiB"


def allocation_size(n):
    """The segment size the allocator asks cudaMalloc for, which is what 'Tried to allocate' names:
    requests are rounded to 512 bytes; up to 1 MiB come from a 2 MiB small-pool segment, under
    10 MiB from a 20 MiB large-pool segment, larger ones are rounded up to 2 MiB."""
    n = (n + 511) // 512 * 512
    if n <= MiB:
        return 2 * MiB
    if n < 10 * MiB:
        return 20 * MiB
    return (n + 2 * MiB - 1) // (2 * MiB) * (2 * MiB)


def torch_oom(request, total, allocated, reserved, non_torch, others=(), own_pid=None, private=0,
              torch_version=(2, 5), device=0):
    """PyTorch 2.4+'s out-of-memory message (c10/cuda/CUDACachingAllocator.cpp). The free figure is
    what the driver reports: the card minus this process (PyTorch's reserved bytes plus its CUDA
    context and other non-PyTorch memory) minus every other process. Refuses a message whose request
    would have fitted, so every log's OOM is real."""
    size = allocation_size(request)
    used = reserved + non_torch
    free = total - used - sum(b for _, b in others)
    assert free >= 0, "processes use more than the card"
    assert free < size, f"request {size} fits in {free} free"
    assert allocated <= reserved
    procs = ""
    for pid, b in others:
        procs += f"Process {pid} has {format_size(b)} memory in use. "
    if own_pid is None:
        procs += f"Including non-PyTorch memory, this process has {format_size(used)} memory in use. "
    else:
        procs += f"Process {own_pid} has {format_size(used)} memory in use. "
    pools = f"with {format_size(private)} allocated in private pools (e.g., CUDA Graphs), " if private else ""
    name = "torch.OutOfMemoryError" if torch_version >= (2, 5) else "torch.cuda.OutOfMemoryError"
    return (f"{name}: CUDA out of memory. Tried to allocate {format_size(size)}. GPU {device} has a total "
            f"capacity of {format_size(total)} of which {format_size(free)} is free. {procs}Of the allocated "
            f"memory {format_size(allocated)} is allocated by PyTorch, {pools}and "
            f"{format_size(reserved - allocated)} is reserved by PyTorch but unallocated. If reserved but "
            "unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
            "fragmentation.  See documentation for Memory Management  "
            "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")


class Clock:
    """Log timestamps that move forward by the seconds each step takes."""

    def __init__(self, year, month, day, hour, minute, second):
        self.t = datetime.datetime(year, month, day, hour, minute, second)

    def tick(self, seconds=0.0):
        self.t += datetime.timedelta(seconds=seconds)
        return self

    def vllm_v0(self):  # INFO 11-22 07:19:26
        return self.t.strftime("%m-%d %H:%M:%S")

    def sglang(self):  # [2025-01-23 19:35:14]
        return self.t.strftime("%Y-%m-%d %H:%M:%S")

    def tgi(self, micros):  # 2024-10-17T08:12:44.123456Z
        return self.t.strftime("%Y-%m-%dT%H:%M:%S") + f".{micros:06d}Z"


class Model:
    """A decoder's shapes from its config.json: parameter count, layers, KV heads, head size,
    hidden size, MLP size and vocabulary."""

    def __init__(self, hf_id, params, layers, kv_heads, head_dim, hidden, intermediate, vocab, heads):
        self.hf_id = hf_id
        self.params = params
        self.layers = layers
        self.kv_heads = kv_heads
        self.head_dim = head_dim
        self.hidden = hidden
        self.intermediate = intermediate
        self.vocab = vocab
        self.heads = heads

    def weight_bytes(self, dtype_bytes=2, tp=1):
        return self.params * dtype_bytes // tp

    def kv_bytes_per_token(self, dtype_bytes=2, tp=1):
        """2 (K and V) x layers x KV heads x head size x dtype bytes, the KV heads split over TP."""
        return 2 * self.layers * max(self.kv_heads // tp, 1) * self.head_dim * dtype_bytes


LLAMA31_8B = Model("meta-llama/Llama-3.1-8B-Instruct", 8_030_261_248, 32, 8, 128, 4096, 14336, 128256, 32)
LLAMA31_70B = Model("meta-llama/Llama-3.1-70B-Instruct", 70_553_706_496, 80, 8, 128, 8192, 28672, 128256, 64)
LLAMA3_70B = Model("meta-llama/Meta-Llama-3-70B-Instruct", 70_553_706_496, 80, 8, 128, 8192, 28672, 128256, 64)
QWEN25_7B = Model("Qwen/Qwen2.5-7B-Instruct", 7_615_616_512, 28, 4, 128, 3584, 18944, 152064, 28)
QWEN25_14B = Model("Qwen/Qwen2.5-14B-Instruct", 14_770_033_664, 48, 8, 128, 5120, 13824, 152064, 40)
QWEN25_32B = Model("Qwen/Qwen2.5-32B-Instruct", 32_763_876_352, 64, 8, 128, 5120, 27648, 152064, 40)
MIXTRAL_8X7B = Model("mistralai/Mixtral-8x7B-Instruct-v0.1", 46_702_792_704, 32, 8, 128, 4096, 14336, 32000, 32)
