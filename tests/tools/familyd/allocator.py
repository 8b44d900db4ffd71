"""An emulation of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp, 2.5-2.7)
with the parts family D needs: streams, record_stream and pending frees, private pools (CUDA graph
capture pools and torch.cuda.MemPool), and the allocator's out-of-memory path.

What it models, from the upstream source:
- sizes: requests round up to 512 B; up to 1 MiB from the small pool (2 MiB segments), 1-10 MiB
  from 20 MiB segments, larger ones get a segment of their size rounded up to 2 MiB;
- free lists per (pool, stream, small/large): a cached block of stream A never serves a request on
  stream B, and a private pool's blocks never serve the default pool (and the other way round);
- best fit, splitting (small pool: any remainder of 512 B or more; large pool: remainders above
  1 MiB), merging of free neighbours when a block becomes free;
- record_stream: a block used on another stream is, when freed, `active_pending_free` until an
  event recorded on that stream completes (trace `free_requested` now, `free_completed` later);
  events are polled at the start of every malloc (process_events), never while a capture is under
  way (then the free is deferred until no capture is under way);
- the OOM path: cudaMalloc fails -> release_cached_blocks(): synchronise every outstanding event
  (their blocks become free now: `free_completed`), release every completely free segment of the
  default pool and of private pools no longer in use (`segment_free`), retry cudaMalloc; if that
  fails too, record `oom` and raise. Live private pools keep their cached segments.

Each allocation carries the category the simulation knows it has (what the tensor is for), so
labels are counted from the physics, never from stack patterns.
"""

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB

SMALL_SIZE = 1 * MiB
SMALL_BUFFER = 2 * MiB
LARGE_BUFFER = 20 * MiB
MIN_LARGE_ALLOC = 10 * MiB
ROUND_LARGE = 2 * MiB
MIN_BLOCK = 512

DEFAULT_POOL = (0, 0)


class OutOfMemory(Exception):
    def __init__(self, request, alloc_size, info):
        super().__init__("CUDA out of memory")
        self.request = request
        self.alloc_size = alloc_size
        self.info = info


def round_size(size):
    if size < MIN_BLOCK:
        return MIN_BLOCK
    return (size + MIN_BLOCK - 1) // MIN_BLOCK * MIN_BLOCK


def allocation_size(size):
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return (size + ROUND_LARGE - 1) // ROUND_LARGE * ROUND_LARGE


class Segment:
    __slots__ = ("addr", "size", "stream", "pool", "small", "blocks", "frames", "unmapped")

    def __init__(self, addr, size, stream, pool, small, frames):
        self.addr, self.size, self.stream, self.pool, self.small = addr, size, stream, pool, small
        self.blocks = []
        self.frames = frames
        self.unmapped = False  # physical memory released under the allocator (vLLM sleep mode's cumem)


class Block:
    __slots__ = ("addr", "size", "segment", "requested", "state", "frames", "category", "uses", "event",
                 "tag", "freed_frames", "free_time")

    def __init__(self, addr, size, segment):
        self.addr, self.size, self.segment = addr, size, segment
        self.requested = 0
        self.state = "inactive"
        self.frames = []
        self.category = None
        self.uses = set()  # other streams that used it (record_stream)
        self.event = None  # {stream: work counter} recorded at free
        self.tag = None
        self.freed_frames = None
        self.free_time = None

    @property
    def stream(self):
        return self.segment.stream

    @property
    def pool(self):
        return self.segment.pool


class Allocator:
    """One device. `limit` is what cudaMalloc may still hand this process: the card minus the CUDA
    context, NCCL's and other libraries' memory outside PyTorch, and other processes."""

    def __init__(self, total, limit, device=0, base_addr=0x7F3A00000000, start_us=1764201600000000):
        self.total = total
        self.limit = limit
        self.device = device
        self.next_addr = base_addr
        self.segments = []
        self.trace = []
        self.now_us = start_us
        self.reserved = 0
        self.enqueued = {}  # stream -> work launched (a counter the scenario advances)
        self.completed = {}  # stream -> work finished
        self.pending = []  # blocks in active_pending_free, in free order
        self.deferred = []  # frees with stream uses while a capture is under way
        self.captures = {}  # stream -> private pool id being captured into
        self.live_pools = {DEFAULT_POOL}
        self.mempool_stack = []  # torch.cuda.use_mem_pool contexts (pool ids)
        self.ooms = 0
        self.retries = 0
        self.peak_reserved = 0
        self.live = {}  # addr -> Block currently active (allocated or pending)

    # ----- clock and streams -------------------------------------------------------------------
    def tick(self, us=1):
        self.now_us += us

    def launch(self, stream, n=1):
        self.enqueued[stream] = self.enqueued.get(stream, 0) + n

    def finish(self, stream, upto=None):
        """The GPU finished the work on `stream` up to `upto` (default: everything launched)."""
        self.completed[stream] = self.enqueued.get(stream, 0) if upto is None else upto

    def finish_all_but(self, stream, lag):
        self.completed[stream] = max(self.completed.get(stream, 0), self.enqueued.get(stream, 0) - lag)

    # ----- trace --------------------------------------------------------------------------------
    def _record(self, action, addr, size, stream, frames, **extra):
        self.tick(3)
        entry = {"action": action}
        if addr is not None:
            entry["addr"] = addr
        entry.update({"size": size, "stream": stream, "time_us": self.now_us})
        if frames is not None:
            entry["frames"] = frames
        entry.update(extra)
        self.trace.append(entry)

    # ----- accounting ---------------------------------------------------------------------------
    def live_by_category(self, include_pending=True):
        out = {}
        for b in self.live.values():
            if b.state == "active_allocated" or (include_pending and b.state == "active_pending_free"):
                out[b.category] = out.get(b.category, 0) + b.requested
        return out

    def pending_bytes(self):
        return sum(b.requested for b in self.pending) + sum(b.requested for b in self.deferred)

    def private_pool_reserved(self):
        return sum(s.size for s in self.segments if s.pool != DEFAULT_POOL)

    def private_pool_free_cached(self):
        return sum(b.size for s in self.segments if s.pool != DEFAULT_POOL for b in s.blocks
                   if b.state == "inactive")

    def allocated_bytes(self):
        return sum(b.size for s in self.segments for b in s.blocks if b.state == "active_allocated")

    # ----- events -------------------------------------------------------------------------------
    def _event_done(self, block):
        return all(self.completed.get(s, 0) >= n for s, n in block.event.items())

    def process_events(self):
        still = []
        for b in self.pending:
            if self._event_done(b):
                self._complete_free(b, b.freed_frames)
            else:
                still.append(b)
        self.pending = still

    def synchronize_and_free_events(self):
        for b in self.pending:
            for s, n in b.event.items():
                self.completed[s] = max(self.completed.get(s, 0), n)
            self._complete_free(b, b.freed_frames)
        self.pending = []

    def end_captures_deferred(self):
        """No capture is under way any more: deferred frees record their events now."""
        for b in self.deferred:
            b.event = {s: self.enqueued.get(s, 0) for s in b.uses}
            self.pending.append(b)
        self.deferred = []

    # ----- pools ---------------------------------------------------------------------------------
    def pool_for(self, stream):
        if stream in self.captures:
            return self.captures[stream]
        if self.mempool_stack:
            return self.mempool_stack[-1]
        return DEFAULT_POOL

    def begin_capture(self, stream, pool):
        self.captures[stream] = pool
        self.live_pools.add(pool)

    def end_capture(self, stream):
        del self.captures[stream]
        if not self.captures:
            self.end_captures_deferred()

    def unmap_pool(self, pool):
        """vLLM's sleep mode (CuMemAllocator) unmaps and releases the physical memory of a MemPool's
        allocations below the caching allocator: the segments and their blocks stay as they are in
        PyTorch's view (and in a snapshot), but the card gets the memory back."""
        for seg in self.segments:
            if seg.pool == pool and not seg.unmapped:
                seg.unmapped = True
                self.reserved -= seg.size

    def map_pool(self, pool):
        """wake_up(): the physical memory is created and mapped again at the same addresses."""
        need = sum(seg.size for seg in self.segments if seg.pool == pool and seg.unmapped)
        if self.reserved + need > self.limit:
            raise OutOfMemory(need, need, {"pending_before_sync": 0, "pending_blocks_before_sync": []})
        for seg in self.segments:
            if seg.pool == pool and seg.unmapped:
                seg.unmapped = False
                self.reserved += seg.size

    def release_pool(self, pool):
        """The graphs or the MemPool owning `pool` were destroyed: its cached segments may go."""
        self.live_pools.discard(pool)

    # ----- malloc / free ----------------------------------------------------------------------------
    def _find_free(self, pool, stream, small, size):
        best = None
        for seg in self.segments:
            if seg.pool != pool or seg.stream != stream or seg.small != small:
                continue
            for b in seg.blocks:
                if b.state == "inactive" and b.size >= size and (best is None or b.size < best.size
                                                                  or (b.size == best.size and b.addr < best.addr)):
                    best = b
        return best

    def _cuda_malloc(self, size, stream, pool, small, frames):
        if self.reserved + size > self.limit:
            return None
        seg = Segment(self.next_addr, size, stream, pool, small, frames)
        self.next_addr += size + 2 * MiB  # cudaMalloc ranges are not contiguous in general
        blk = Block(seg.addr, size, seg)
        seg.blocks.append(blk)
        self.segments.append(seg)
        self.reserved += size
        self.peak_reserved = max(self.peak_reserved, self.reserved)
        self._record("segment_alloc", seg.addr, size, stream, frames)
        return blk

    def _release_cached(self):
        self.synchronize_and_free_events()
        keep = []
        for seg in self.segments:
            whole_free = len(seg.blocks) == 1 and seg.blocks[0].state == "inactive"
            if whole_free and (seg.pool == DEFAULT_POOL or seg.pool not in self.live_pools):
                self.reserved -= seg.size
                self._record("segment_free", seg.addr, seg.size, seg.stream, seg.frames)
            else:
                keep.append(seg)
        self.segments = keep

    def empty_cache(self):
        self._release_cached()

    def device_free(self, outside):
        """cudaMemGetInfo's free: the card minus everything held by anyone (outside = context,
        NCCL, other processes)."""
        return self.total - outside - self.reserved

    def malloc(self, requested, frames, category, stream=0, tag=None):
        if not self.captures:
            self.process_events()
        pool = self.pool_for(stream)
        size = round_size(requested)
        small = size <= SMALL_SIZE
        blk = self._find_free(pool, stream, small, size)
        if blk is None:
            alloc_size = allocation_size(size)
            blk = self._cuda_malloc(alloc_size, stream, pool, small, frames)
            if blk is None:
                info = {"pending_before_sync": self.pending_bytes(),
                        "pending_blocks_before_sync": list(self.pending) + list(self.deferred)}
                # release_available_cached_blocks() frees nothing without max_split_size_mb;
                # release_cached_blocks() runs only when no capture is under way.
                self.retries += 1
                if not self.captures:
                    self._release_cached()
                blk = self._find_free(pool, stream, small, size)
                if blk is None:
                    blk = self._cuda_malloc(alloc_size, stream, pool, small, frames)
                if blk is None:
                    self.ooms += 1
                    raise OutOfMemory(requested, alloc_size, info)
        # split
        remaining = blk.size - size
        if (small and remaining >= MIN_BLOCK) or (not small and remaining > SMALL_SIZE):
            seg = blk.segment
            rest = Block(blk.addr + size, remaining, seg)
            idx = seg.blocks.index(blk)
            seg.blocks.insert(idx + 1, rest)
            blk.size = size
        blk.state = "active_allocated"
        blk.requested = requested
        blk.frames = frames
        blk.category = category
        blk.uses = set()
        blk.event = None
        blk.tag = tag
        self.live[blk.addr] = blk
        self._record("alloc", blk.addr, requested, stream, frames, _category=category)
        return blk

    def record_stream(self, blk, stream):
        if stream != blk.stream:
            blk.uses.add(stream)

    def free(self, blk, frames=None):
        assert blk.state == "active_allocated", blk.state
        blk.freed_frames = frames if frames is not None else blk.frames
        blk.free_time = self.now_us
        self._record("free_requested", blk.addr, blk.requested, blk.stream, blk.freed_frames)
        if blk.uses:
            blk.state = "active_pending_free"
            if self.captures:
                self.deferred.append(blk)
            else:
                blk.event = {s: self.enqueued.get(s, 0) for s in blk.uses}
                self.pending.append(blk)
        else:
            self._complete_free(blk, blk.freed_frames)

    def _complete_free(self, blk, frames):
        self._record("free_completed", blk.addr, blk.requested, blk.stream, frames)
        del self.live[blk.addr]
        blk.state = "inactive"
        blk.uses = set()
        blk.event = None
        seg = blk.segment
        idx = seg.blocks.index(blk)
        # merge with free neighbours
        if idx + 1 < len(seg.blocks) and seg.blocks[idx + 1].state == "inactive":
            nxt = seg.blocks.pop(idx + 1)
            blk.size += nxt.size
        if idx > 0 and seg.blocks[idx - 1].state == "inactive":
            prev = seg.blocks[idx - 1]
            prev.size += blk.size
            seg.blocks.pop(idx)
            blk = prev
        blk.requested = 0
        blk.frames = []
        blk.category = None

    def record_oom(self, request_rounded, device_free, stream, frames):
        self._record("oom", None, request_rounded, stream, frames, device_free=device_free)
