"""A simulated process on one GPU: the allocator, the call stack the program is in, the training
loop's phase and step, and the failure when it comes."""

import contextlib

from allocator import Allocator, OutOfMemory, DEFAULT_POOL, GiB, MiB, round_size
import frames as F


class Failed(Exception):
    pass


class Card:
    def __init__(self, name, total):
        self.name = name
        self.total = total


CARDS = {
    "A100-40": Card("NVIDIA A100-SXM4-40GB", 42298834944),
    "A100-80": Card("NVIDIA A100-SXM4-80GB", 85031714816),
    "H100": Card("NVIDIA H100 80GB HBM3", 85520809984),
    "H200": Card("NVIDIA H200", 150121545728),
    "L40S": Card("NVIDIA L40S", 47697362944),
    "A10G": Card("NVIDIA A10G", 23836098560),
    "RTX4090": Card("NVIDIA GeForce RTX 4090", 25393692672),
    "L4": Card("NVIDIA L4", 23580639232),
}


class Run:
    """`outside` is what the process holds outside PyTorch's allocator (CUDA context, cuBLAS
    workspaces' driver side, NCCL's communicator buffers); `others` are other processes' bytes."""

    def __init__(self, card, outside, others=(), device=0, stacks_all=True):
        self.card = CARDS[card]
        self.outside = outside
        self.others = list(others)
        limit = self.card.total - outside - sum(b for _, b in self.others)
        self.a = Allocator(self.card.total, limit, device=device)
        self.device = device
        self.stack = []
        self.phase = "load"
        self.rl_phase = None
        self.step = 0
        self.failure = None
        self.stacks_all = stacks_all
        self._frame_cache = {}
        self._list_cache = {}
        self.notes = {}
        self.visible_devices = 1
        self.annotations = []
        self.log_lines = []

    # ----- stacks ----------------------------------------------------------------------------------
    def _frame(self, f):
        key = f[:3]
        d = self._frame_cache.get(key)
        if d is None:
            d = {"filename": f[0], "line": f[1], "name": f[2]}
            self._frame_cache[key] = d
        return d

    def frames(self, extra=(), cpp=None):
        py = list(self.stack) + list(extra)
        full = (F.CPP_ALLOC + (cpp if cpp is not None else F.CPP_EMPTY) if self.stacks_all else []) + []
        # outermost first: python frames, then the C++ frames under them
        seq = tuple(py) + tuple(reversed(full))
        cached = self._list_cache.get(seq)
        if cached is None:
            cached = [self._frame(f) for f in reversed(seq)]
            self._list_cache[seq] = cached
        return cached

    @contextlib.contextmanager
    def at(self, *stacks):
        n = 0
        for s in stacks:
            self.stack.extend(s)
            n += len(s)
        try:
            yield
        finally:
            del self.stack[len(self.stack) - n:]

    # ----- memory ---------------------------------------------------------------------------------
    def alloc(self, nbytes, category, extra=(), stream=0, cpp=None, tag=None):
        nbytes = int(nbytes)
        fr = self.frames(extra, cpp)
        try:
            return self.a.malloc(nbytes, fr, category, stream=stream, tag=tag)
        except OutOfMemory as oom:
            free = self.a.device_free(self.outside + sum(b for _, b in self.others))
            self.a.record_oom(round_size(nbytes), free, stream, fr)
            self.failure = {
                "requested": nbytes,
                "alloc_size": oom.alloc_size,
                "device_free": free,
                "stack": list(self.stack) + list(extra),
                "phase": self.phase,
                "rl_phase": self.rl_phase,
                "step": self.step,
                "pending_before_sync": oom.info["pending_before_sync"],
                "pending_blocks": [(b.requested, b.freed_frames, b.category, b.tag)
                                   for b in oom.info["pending_blocks_before_sync"]],
                "live_by_category": self.a.live_by_category(include_pending=False),
                "private_pool_reserved": self.a.private_pool_reserved(),
                "private_pool_free_cached": self.a.private_pool_free_cached(),
                "reserved": sum(seg.size for seg in self.a.segments),  # PyTorch's view, unmapped pools included
                "physical_reserved": self.a.reserved,
                "allocated_block_bytes": self.a.allocated_bytes(),
                "stream": stream,
                "trace_index": len(self.a.trace) - 1,
            }
            raise Failed()

    def free(self, blk, extra=None):
        if blk is None:
            return
        fr = None if extra is None else self.frames(extra)
        self.a.free(blk, fr)

    def free_all(self, blocks, extra=None):
        for b in blocks:
            self.free(b, extra)
        blocks.clear() if isinstance(blocks, list) else None

    def record_stream(self, blk, stream):
        self.a.record_stream(blk, stream)

    def tensors(self, sizes, category, extra=(), stream=0, tag=None):
        return [self.alloc(s, category, extra, stream=stream, tag=tag) for s in sizes]
