"""An emulation of PyTorch's CUDA caching allocator (native backend), written from its documented
behaviour: 512-byte rounding, a small pool (requests up to 1 MiB, carved out of 2 MiB segments) and
a large pool (20 MiB segments for 1-10 MiB requests, requests above 10 MiB rounded up to 2 MiB),
best-fit search, splitting (small pool: any remainder of at least 512 B; large pool: remainders
above 1 MiB), merging of free neighbours, and before an OOM the release of every completely free
cached segment followed by one more cudaMalloc attempt.

The card is modelled as its total memory minus the CUDA context and whatever other processes
hold; a per-process memory fraction caps what this process may reserve. Every allocator event is
recorded into a ring buffer of trace entries shaped the way torch.cuda.memory._snapshot() writes
them; snapshot.py turns the final state into the pickle layout of a given PyTorch era."""

import bisect
from collections import deque

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB

MIN_BLOCK = 512
SMALL_SIZE = 1 * MiB
SMALL_BUFFER = 2 * MiB
MIN_LARGE_ALLOC = 10 * MiB
LARGE_BUFFER = 20 * MiB
ROUND_LARGE = 2 * MiB


def round_size(size):
    if size < MIN_BLOCK:
        return MIN_BLOCK
    return MIN_BLOCK * ((size + MIN_BLOCK - 1) // MIN_BLOCK)


def allocation_size(size):
    """The cudaMalloc size for a request that found no cached block."""
    if size <= SMALL_SIZE:
        return SMALL_BUFFER
    if size < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return ROUND_LARGE * ((size + ROUND_LARGE - 1) // ROUND_LARGE)


class OutOfMemory(Exception):
    def __init__(self, info):
        super().__init__("CUDA out of memory")
        self.info = info


class Block:
    __slots__ = ("addr", "size", "requested", "allocated", "segment", "prev", "next", "frames", "small", "tag")

    def __init__(self, addr, size, segment, small):
        self.addr = addr
        self.size = size
        self.requested = 0
        self.allocated = False
        self.segment = segment
        self.prev = None
        self.next = None
        self.frames = []
        self.small = small
        self.tag = None

    def key(self):
        return (self.size, self.addr)


class Segment:
    __slots__ = ("addr", "size", "small", "frames", "head")

    def __init__(self, addr, size, small, frames):
        self.addr = addr
        self.size = size
        self.small = small
        self.frames = frames
        self.head = None

    def blocks(self):
        b = self.head
        while b is not None:
            yield b
            b = b.next


class Stat:
    __slots__ = ("current", "peak", "allocated", "freed")

    def __init__(self):
        self.current = self.peak = self.allocated = self.freed = 0

    def add(self, n):
        if n >= 0:
            self.current += n
            self.allocated += n
            self.peak = max(self.peak, self.current)
        else:
            self.current += n
            self.freed -= n


class Stats:
    """memory_stats(): the rows memory_summary() prints, split by pool."""

    NAMES = ("allocated_bytes", "active_bytes", "requested_bytes", "reserved_bytes", "inactive_split_bytes",
             "allocation", "active", "segment", "inactive_split")

    def __init__(self):
        self.rows = {name: {"all": Stat(), "large_pool": Stat(), "small_pool": Stat()} for name in self.NAMES}
        self.oversize_allocations = Stat()
        self.oversize_segments = Stat()
        self.num_alloc_retries = 0
        self.num_ooms = 0

    def add(self, name, small, n):
        row = self.rows[name]
        row["all"].add(n)
        row["small_pool" if small else "large_pool"].add(n)


class Allocator:
    def __init__(self, card_total, context_bytes, other_process_bytes=0, fraction=None, trace_entries=3000,
                 base_address=0x7F2A40000000, clock=None, device=0):
        self.card_total = card_total
        self.context_bytes = context_bytes
        self.other_process_bytes = other_process_bytes
        self.allowed = int(fraction * card_total) if fraction is not None else None
        self.device = device
        self.segments = []  # address order
        self.free_small = []  # sorted (size, addr) of free blocks
        self.free_large = []
        self.by_key = {}
        self.reserved = 0
        self.allocated = 0  # sum of rounded sizes of allocated blocks
        self.requested = 0
        self.next_address = base_address
        self.trace = deque(maxlen=trace_entries)
        self.events = 0
        self.clock = clock
        self.stats = Stats()
        self.oom_info = None
        self.window_peak = 0

    # -- the card -------------------------------------------------------------------------
    def device_free(self):
        return self.card_total - self.context_bytes - self.other_process_bytes - self.reserved

    def _cuda_malloc(self, size):
        if self.allowed is not None and self.reserved + size > self.allowed:
            return False
        return size <= self.device_free()

    # -- trace ----------------------------------------------------------------------------
    def _record(self, action, addr, size, frames):
        self.events += 1
        entry = {"action": action}
        if action == "oom":
            entry["device_free"] = addr
        else:
            entry["addr"] = addr
        entry["size"] = size
        entry["stream"] = 0
        entry["time_us"] = self.clock.tick() if self.clock else 0
        entry["frames"] = frames
        self.trace.append(entry)

    # -- free lists -----------------------------------------------------------------------
    def _pool(self, small):
        return self.free_small if small else self.free_large

    def _insert_free(self, block):
        bisect.insort(self._pool(block.small), block.key())
        self.by_key[block.key()] = block

    def _remove_free(self, block):
        pool = self._pool(block.small)
        i = bisect.bisect_left(pool, block.key())
        assert pool[i] == block.key()
        del pool[i]
        del self.by_key[block.key()]

    def _best_fit(self, small, size):
        pool = self._pool(small)
        i = bisect.bisect_left(pool, (size, 0))
        if i == len(pool):
            return None
        return self.by_key[pool[i]]

    # -- segments -------------------------------------------------------------------------
    def _new_segment(self, size, small, frames):
        addr = self.next_address
        self.next_address += ((size + ROUND_LARGE - 1) // ROUND_LARGE) * ROUND_LARGE + 64 * MiB
        seg = Segment(addr, size, small, frames)
        block = Block(addr, size, seg, small)
        seg.head = block
        self._insert_segment(seg)
        self.reserved += size
        self.stats.add("reserved_bytes", small, size)
        self.stats.add("segment", small, 1)
        if size > 0 and not small and self._oversize(size):
            self.stats.oversize_segments.add(1)
        self._record("segment_alloc", addr, size, frames)
        return block

    def _insert_segment(self, seg):
        addrs = [s.addr for s in self.segments]
        self.segments.insert(bisect.bisect_left(addrs, seg.addr), seg)

    def _oversize(self, size):
        return False  # max_split_size is unset in every scenario

    def release_cached(self, frames=None):
        """empty_cache(), and the allocator's last resort before an OOM: cudaFree every segment
        whose only block is free."""
        for seg in list(self.segments):
            if seg.head.next is None and not seg.head.allocated:
                self._remove_free(seg.head)
                self.segments.remove(seg)
                self.reserved -= seg.size
                self.stats.add("reserved_bytes", seg.small, -seg.size)
                self.stats.add("segment", seg.small, -1)
                self._record("segment_free", seg.addr, seg.size, seg.frames if frames is None else frames)

    # -- malloc / free --------------------------------------------------------------------
    def malloc(self, size, frames, tag=None):
        small = size <= SMALL_SIZE
        rounded = round_size(size)
        block = self._best_fit(small, rounded)
        if block is not None:
            self._remove_free(block)
        else:
            alloc_size = allocation_size(size)
            if not self._cuda_malloc(alloc_size):
                self.stats.num_alloc_retries += 1
                self.release_cached()
                if not self._cuda_malloc(alloc_size):
                    self._oom(size, rounded, alloc_size, frames)
            block = self._new_segment(alloc_size, small, frames)
        # split
        remaining = block.size - rounded
        if (small and remaining >= MIN_BLOCK) or (not small and remaining > SMALL_SIZE):
            rest = Block(block.addr + rounded, remaining, block.segment, small)
            rest.prev = block
            rest.next = block.next
            if block.next is not None:
                block.next.prev = rest
            block.next = rest
            block.size = rounded
            self._insert_free(rest)
        block.allocated = True
        block.requested = size
        block.frames = frames
        block.tag = tag
        self.allocated += block.size
        self.requested += size
        if self.allocated > self.window_peak:
            self.window_peak = self.allocated
        self.stats.add("allocated_bytes", small, block.size)
        self.stats.add("active_bytes", small, block.size)
        self.stats.add("requested_bytes", small, size)
        self.stats.add("allocation", small, 1)
        self.stats.add("active", small, 1)
        self._record("alloc", block.addr, size, frames)
        return block

    def free(self, block, frames=None):
        assert block.allocated, "double free"
        small = block.small
        f = block.frames if frames is None else frames
        self._record("free_requested", block.addr, block.requested, f)
        self._record("free_completed", block.addr, block.requested, f)
        self.allocated -= block.size
        self.requested -= block.requested
        self.stats.add("allocated_bytes", small, -block.size)
        self.stats.add("active_bytes", small, -block.size)
        self.stats.add("requested_bytes", small, -block.requested)
        self.stats.add("allocation", small, -1)
        self.stats.add("active", small, -1)
        block.allocated = False
        block.requested = 0
        block.frames = []
        block.tag = None
        # merge with free neighbours
        for neighbour in (block.prev, block.next):
            if neighbour is not None and not neighbour.allocated:
                self._remove_free(neighbour)
                if neighbour is block.prev:
                    neighbour.size += block.size
                    neighbour.next = block.next
                    if block.next is not None:
                        block.next.prev = neighbour
                    block = neighbour
                else:
                    block.size += neighbour.size
                    block.next = neighbour.next
                    if neighbour.next is not None:
                        neighbour.next.prev = block
        self._insert_free(block)

    def _oom(self, size, rounded, alloc_size, frames):
        self.stats.num_ooms += 1
        free = self.device_free()
        self._record("oom", free, rounded, frames)
        self.oom_info = {
            "requested": size,
            "rounded": rounded,
            "alloc_size": alloc_size,
            "device_free": free,
            "allocated": self.allocated,
            "reserved": self.reserved,
            "largest_free": self.largest_free(rounded <= SMALL_SIZE),
            "free_cached": self.reserved - self.allocated,
        }
        raise OutOfMemory(self.oom_info)

    # -- queries --------------------------------------------------------------------------
    def largest_free(self, small=False):
        pool = self._pool(small)
        return pool[-1][0] if pool else 0

    def inactive_split_bytes(self):
        total = 0
        for seg in self.segments:
            if seg.head.next is None:
                continue
            total += sum(b.size for b in seg.blocks() if not b.allocated)
        return total

    def live_blocks(self):
        for seg in self.segments:
            for b in seg.blocks():
                if b.allocated:
                    yield b
