"""A caching-allocator simulation written from c10/cuda/CUDACachingAllocator.cpp (PyTorch 2.4-2.8).

What it keeps from upstream, because every diagnosis reads it:
- sizes: round_size to 512 B; requests <= 1 MiB come from the small pool (2 MiB segments),
  1-10 MiB requests get a 20 MiB segment, larger ones a segment rounded up to 2 MiB;
- best fit per (stream, size) in the pool's free set, one free list per stream;
- split when the remainder is >= 512 B (small pool) or > 1 MiB (large pool), merge on free;
- record_stream: a freed block with uses on other streams waits for its events
  (free_requested now, free_completed when process_events or a synchronize sees them done);
- CUDA graph capture: allocations on the capturing stream go to the graph's private pool,
  process_events is skipped and the cache is not released while a capture is underway;
- the out-of-memory path: cudaMalloc fails -> (max_split_size unset, so no partial release)
  -> synchronize_and_free_events + release of every unsplit cached segment -> cudaMalloc once
  more -> the `oom` trace entry (device_free from cudaMemGetInfo) and the message.
"""
import bisect

KMIN_BLOCK = 512
KSMALL_SIZE = 1 << 20
KSMALL_BUFFER = 2 << 20
KMIN_LARGE_ALLOC = 10 << 20
KROUND_LARGE = 2 << 20
KLARGE_BUFFER = 20 << 20


def round_size(size):
    if size < KMIN_BLOCK:
        return KMIN_BLOCK
    return KMIN_BLOCK * ((size + KMIN_BLOCK - 1) // KMIN_BLOCK)


def allocation_size(size):
    if size <= KSMALL_SIZE:
        return KSMALL_BUFFER
    if size < KMIN_LARGE_ALLOC:
        return KLARGE_BUFFER
    return KROUND_LARGE * ((size + KROUND_LARGE - 1) // KROUND_LARGE)


class OutOfMemory(Exception):
    def __init__(self, info):
        super().__init__("CUDA out of memory")
        self.info = info


class Block:
    __slots__ = ("addr", "size", "requested", "allocated", "stream", "pool", "segment", "prev", "next",
                 "frames", "stream_uses", "ready_tick", "tag")

    def __init__(self, addr, size, stream, pool, segment):
        self.addr, self.size, self.stream, self.pool, self.segment = addr, size, stream, pool, segment
        self.requested = 0
        self.allocated = False
        self.prev = self.next = None
        self.frames = None
        self.stream_uses = set()
        self.ready_tick = None  # set while the block waits for another stream's events
        self.tag = None

    def is_free(self):
        return not self.allocated and self.ready_tick is None and not self.stream_uses


class Segment:
    def __init__(self, addr, size, stream, pool, frames):
        self.addr, self.size, self.stream, self.pool, self.frames = addr, size, stream, pool, frames
        self.head = None


class Pool:
    def __init__(self, pool_id, small):
        self.pool_id, self.small = pool_id, small
        self.keys = []  # sorted (stream, size, addr)
        self.by_addr = {}

    def insert(self, block):
        bisect.insort(self.keys, (block.stream, block.size, block.addr))
        self.by_addr[block.addr] = block

    def remove(self, block):
        i = bisect.bisect_left(self.keys, (block.stream, block.size, block.addr))
        assert self.keys[i] == (block.stream, block.size, block.addr)
        del self.keys[i]
        del self.by_addr[block.addr]

    def best_fit(self, stream, size):
        i = bisect.bisect_left(self.keys, (stream, size, -1))
        if i == len(self.keys) or self.keys[i][0] != stream:
            return None
        return self.by_addr[self.keys[i][2]]


class PrivatePool:
    def __init__(self, pool_id):
        self.large = Pool(pool_id, False)
        self.small = Pool(pool_id, True)
        self.use_count = 1
        self.malloc_count = 0


class Device:
    """The card: its total memory and what is not this process's cache (the CUDA context,
    NCCL's own buffers, other processes), each a function of the program's tick."""

    def __init__(self, total, context_bytes, others=None, nccl_bytes=0):
        self.total = total
        self.context_bytes = context_bytes
        self.nccl_bytes = nccl_bytes
        self.others = others or []  # [(pid, bytes, from_tick)]

    def other_bytes(self, tick):
        return sum(b for _, b, start in self.others if tick >= start)


class Allocator:
    def __init__(self, device, recorder, base_addr=0x7F3A00000000):
        self.device = device
        self.rec = recorder
        self.large = Pool((0, 0), False)
        self.small = Pool((0, 0), True)
        self.graph_pools = {}
        self.freeable = []
        self.captures = []  # [(pool_id, stream)]
        self.segments = {}  # addr -> Segment
        self.pending = []  # blocks waiting for events, in free order
        self.reserved = 0
        self.allocated = 0
        self.tick = 0
        self.next_addr = base_addr
        self.free_ranges = []  # (addr, size) released by cudaFree, reused first-fit

    # ---- what the process holds -------------------------------------------------------------
    def device_free(self):
        d = self.device
        return d.total - self.reserved - d.context_bytes - d.nccl_bytes - d.other_bytes(self.tick)

    def _cuda_malloc(self, size):
        if size > self.device_free():
            return None
        for i, (addr, rsize) in enumerate(self.free_ranges):
            if rsize >= size:
                if rsize == size:
                    del self.free_ranges[i]
                else:
                    self.free_ranges[i] = (addr + size, rsize - size)
                return addr
        addr = self.next_addr
        self.next_addr += size + (2 << 20)  # the driver leaves gaps between reservations
        return addr

    def _cuda_free(self, addr, size):
        self.free_ranges.append((addr, size))
        self.free_ranges.sort()

    # ---- pools --------------------------------------------------------------------------------
    def _capture_pool(self, stream):
        for pool_id, cstream in self.captures:
            if cstream == stream:
                return self.graph_pools[pool_id]
        return None

    def _get_pool(self, size, stream):
        private = self._capture_pool(stream) if self.captures else None
        if private is not None:
            return private.small if size <= KSMALL_SIZE else private.large
        return self.small if size <= KSMALL_SIZE else self.large

    def begin_capture(self, pool_id, stream):
        if pool_id in self.graph_pools:
            self.graph_pools[pool_id].use_count += 1
        else:
            self.graph_pools[pool_id] = PrivatePool(pool_id)
        self.captures.append((pool_id, stream))

    def end_capture(self, pool_id):
        self.captures = [c for c in self.captures if c[0] != pool_id]

    def release_graph(self, pool_id):
        pool = self.graph_pools[pool_id]
        pool.use_count -= 1
        if pool.use_count == 0:
            self.freeable.append(pool_id)

    # ---- malloc / free --------------------------------------------------------------------------
    def malloc(self, orig_size, stream, frames, tag=None):
        if not self.captures:
            self._process_events(frames)
        size = round_size(orig_size)
        pool = self._get_pool(size, stream)
        alloc_size = allocation_size(size)
        block = pool.best_fit(stream, size)
        if block is not None:
            pool.remove(block)
        else:
            block = self._alloc_block(pool, alloc_size, stream, frames)
            if block is None and not self.captures:
                self._release_cached_blocks(frames)
                block = self._alloc_block(pool, alloc_size, stream, frames)
            if block is None:
                self._raise_oom(size, alloc_size, stream, frames)
        remaining = block.size - size
        split = remaining >= KMIN_BLOCK if pool.small else remaining > KSMALL_SIZE
        if split:
            rest = Block(block.addr + size, remaining, stream, pool, block.segment)
            rest.prev, rest.next = block, block.next
            if block.next:
                block.next.prev = rest
            block.next = rest
            block.size = size
            pool.insert(rest)
        block.allocated = True
        block.requested = orig_size
        block.frames = frames
        block.tag = tag
        self.allocated += block.size
        self.rec.trace("alloc", block.addr, orig_size, stream, frames, tag)
        return block

    def _alloc_block(self, pool, alloc_size, stream, frames):
        addr = self._cuda_malloc(alloc_size)
        if addr is None:
            return None
        seg = Segment(addr, alloc_size, stream, pool, frames)
        block = Block(addr, alloc_size, stream, pool, seg)
        seg.head = block
        self.segments[addr] = seg
        self.reserved += alloc_size
        owner = self._owner(pool)
        if owner is not None:
            owner.malloc_count += 1
        self.rec.trace("segment_alloc", addr, alloc_size, stream, frames)
        return block

    def _owner(self, pool):
        for p in self.graph_pools.values():
            if pool is p.large or pool is p.small:
                return p
        return None

    def record_stream(self, block, stream):
        if stream != block.stream:
            block.stream_uses.add(stream)

    def free(self, block, frames, ready_after=1):
        """The program drops its last reference. With uses on other streams the block waits for
        their events: ready_after is how many program ticks that work takes."""
        block.allocated = False
        self.allocated -= block.size
        self.rec.trace("free_requested", block.addr, block.requested, block.stream, frames)
        if block.stream_uses:
            block.ready_tick = self.tick + ready_after
            self.pending.append(block)
        else:
            self._free_block(block, frames)

    def _free_block(self, block, frames):
        self.rec.trace("free_completed", block.addr, block.requested, block.stream, frames, block.tag)
        block.tag = None
        block.frames = None
        block.stream_uses = set()
        block.ready_tick = None
        pool = block.pool
        for other in (block.prev, block.next):
            if other is None or not other.is_free():
                continue
            pool.remove(other)
            if other is block.prev:
                block.addr = other.addr
                block.prev = other.prev
                if block.prev:
                    block.prev.next = block
                else:
                    block.segment.head = block
            else:
                block.next = other.next
                if block.next:
                    block.next.prev = block
            block.size += other.size
        pool.insert(block)

    def _process_events(self, frames):
        still = []
        for block in self.pending:
            if block.ready_tick <= self.tick:
                self._free_block(block, frames)
            else:
                still.append(block)
        self.pending = still

    def synchronize(self, frames):
        for block in self.pending:
            self._free_block(block, frames)
        self.pending = []

    def _release_pool(self, pool, frames):
        for key in list(pool.keys):
            block = pool.by_addr[key[2]]
            if block.prev is None and block.next is None:
                pool.remove(block)
                seg = block.segment
                self.rec.trace("segment_free", seg.addr, seg.size, seg.stream, frames)
                del self.segments[seg.addr]
                self.reserved -= seg.size
                self._cuda_free(seg.addr, seg.size)
                owner = self._owner(pool)
                if owner is not None:
                    owner.malloc_count -= 1

    def _release_cached_blocks(self, frames):
        self.synchronize(frames)
        self._release_pool(self.large, frames)
        self._release_pool(self.small, frames)
        for pool_id in list(self.freeable):
            private = self.graph_pools[pool_id]
            self._release_pool(private.small, frames)
            self._release_pool(private.large, frames)
            if private.malloc_count == 0:
                del self.graph_pools[pool_id]
                self.freeable.remove(pool_id)

    def empty_cache(self, frames):
        self._release_cached_blocks(frames)

    def _raise_oom(self, size, alloc_size, stream, frames):
        device_free = self.device_free()
        self.rec.trace_oom(device_free, size, stream, frames)
        private_free = 0
        for p in self.graph_pools.values():
            private_free += sum(k[1] for k in p.large.keys) + sum(k[1] for k in p.small.keys)
        raise OutOfMemory({
            "alloc_size": alloc_size, "size": size, "device_free": device_free,
            "device_total": self.device.total, "allocated": self.allocated, "reserved": self.reserved,
            "private_free": private_free, "stream": stream,
        })

    # ---- the snapshot's segments ------------------------------------------------------------------
    def pool_of(self, seg):
        return seg.pool.pool_id

    def segments_sorted(self):
        return [self.segments[a] for a in sorted(self.segments)]


class _IdealBlock:
    __slots__ = ("size", "requested", "tag", "addr")


class IdealAllocator:
    """The counterfactual of a cache that never fragments: every tensor takes exactly its bytes out
    of what the process could hold (the card less the context, NCCL and other processes). A run that
    fails with this allocator fails for want of memory, not for the cache's shape."""

    def __init__(self, device, recorder):
        self.device, self.rec = device, recorder
        self.used = 0
        self.tick = 0
        self.captures = []

    def limit(self):
        d = self.device
        return d.total - d.context_bytes - d.nccl_bytes - d.other_bytes(self.tick)

    def malloc(self, orig_size, stream, frames, tag=None):
        if self.used + orig_size > self.limit():
            raise OutOfMemory({"alloc_size": orig_size, "size": orig_size, "device_free": 0,
                               "device_total": self.device.total, "allocated": self.used, "reserved": self.used,
                               "private_free": 0, "stream": stream})
        b = _IdealBlock()
        b.size = b.requested = orig_size
        b.tag, b.addr = tag, 0
        self.used += orig_size
        return b

    def free(self, block, frames, ready_after=1):
        self.used -= block.size

    def record_stream(self, block, stream):
        pass

    def begin_capture(self, pool_id, stream):
        pass

    def end_capture(self, pool_id):
        pass

    def release_graph(self, pool_id):
        pass

    def empty_cache(self, frames):
        pass

    def synchronize(self, frames):
        pass
