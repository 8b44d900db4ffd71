"""An emulation of PyTorch's CUDA caching allocator (c10/cuda/CUDACachingAllocator.cpp, native backend).

It reproduces what a memory snapshot and an OOM message can show: the small pool (requests <= 1 MiB packed
into 2 MiB segments), the large pool (1-10 MiB requests get 20 MiB segments, bigger ones are rounded up to
2 MiB), requests rounded to 512 B, best-fit reuse of cached free blocks on the same stream, block
splitting and merging, the release of unsplit cached segments before an OOM is raised, and
expandable segments that grow by mapping pages at their end. Every state change is reported to a sink as
a trace event (action, addr, size, stream, context), in the order PyTorch records them.

Standard library only: it runs with /usr/bin/python3 on a plain Debian 12.
"""

import bisect

KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30

MIN_BLOCK_SIZE = 512            # kMinBlockSize: every request is rounded to a multiple of this
SMALL_SIZE = 1 * MiB            # kSmallSize: largest request served from the small pool
SMALL_BUFFER = 2 * MiB          # kSmallBuffer: segment size of the small pool
LARGE_BUFFER = 20 * MiB         # kLargeBuffer: segment size for 1-10 MiB requests
MIN_LARGE_ALLOC = 10 * MiB      # kMinLargeAlloc
ROUND_LARGE = 2 * MiB           # kRoundLarge: larger requests get their own segment, rounded to this

# Where the emulated cudaMalloc hands out addresses: a typical device VA on Linux.
VA_BASE = 0x7F3A_0000_0000


def round_size(size):
    if size < MIN_BLOCK_SIZE:
        return MIN_BLOCK_SIZE
    return MIN_BLOCK_SIZE * ((size + MIN_BLOCK_SIZE - 1) // MIN_BLOCK_SIZE)


def allocation_size(rounded):
    """The cudaMalloc size for a request that no cached block can serve (get_allocation_size)."""
    if rounded <= SMALL_SIZE:
        return SMALL_BUFFER
    if rounded < MIN_LARGE_ALLOC:
        return LARGE_BUFFER
    return ROUND_LARGE * ((rounded + ROUND_LARGE - 1) // ROUND_LARGE)


def format_size(size):
    """c10's format_size, used in every CUDA OOM message."""
    if size <= 1024:
        return "%d bytes" % size
    if size <= 1048576:
        return "%.2f KiB" % (size / 1024.0)
    if size <= 1073741824:
        return "%.2f MiB" % (size / 1048576.0)
    return "%.2f GiB" % (size / 1073741824.0)


class OutOfMemory(Exception):
    def __init__(self, info):
        super().__init__("CUDA out of memory")
        self.info = info


class Block:
    __slots__ = ("addr", "size", "requested", "allocated", "prev", "next", "seg", "ctx", "seq")

    def __init__(self, addr, size, seg):
        self.addr = addr
        self.size = size
        self.requested = 0
        self.allocated = False
        self.prev = None
        self.next = None
        self.seg = seg
        self.ctx = None
        self.seq = -1

    def is_split(self):
        return self.prev is not None or self.next is not None


class Segment:
    __slots__ = ("addr", "size", "stream", "small", "expandable", "head", "page")

    def __init__(self, addr, size, stream, small, expandable, page=0):
        self.addr = addr
        self.size = size            # mapped bytes for an expandable segment
        self.stream = stream
        self.small = small
        self.expandable = expandable
        self.head = None
        self.page = page

    def blocks(self):
        b = self.head
        while b is not None:
            yield b
            b = b.next

    def tail(self):
        b = self.head
        while b is not None and b.next is not None:
            b = b.next
        return b


class FreeBlocks:
    """The cached free blocks of one pool, ordered like PyTorch's BlockComparator: (stream, size, addr)."""

    def __init__(self):
        self.keys = []
        self.blocks = {}

    def add(self, block):
        key = (block.seg.stream, block.size, block.addr)
        bisect.insort(self.keys, key)
        self.blocks[key] = block

    def remove(self, block):
        key = (block.seg.stream, block.size, block.addr)
        i = bisect.bisect_left(self.keys, key)
        del self.keys[i]
        del self.blocks[key]

    def best_fit(self, stream, size):
        i = bisect.bisect_left(self.keys, (stream, size, -1))
        if i == len(self.keys) or self.keys[i][0] != stream:
            return None
        return self.blocks[self.keys[i]]

    def all(self):
        return [self.blocks[k] for k in self.keys]


class Stats:
    """The counters behind torch.cuda.memory_stats() and memory_summary(): [current, peak, allocated, freed]
    for the whole device, the large pool and the small pool."""

    NAMES = ("allocated_bytes", "active_bytes", "requested_bytes", "reserved_bytes", "inactive_split_bytes",
             "allocation", "active", "segment", "inactive_split")

    def __init__(self):
        self.values = {name: [[0, 0, 0, 0] for _ in range(3)] for name in self.NAMES}
        self.num_alloc_retries = 0
        self.num_ooms = 0

    def update(self, name, small, delta):
        if delta == 0:
            return
        rows = self.values[name]
        for stat in (rows[0], rows[2 if small else 1]):
            stat[0] += delta
            if delta > 0:
                stat[2] += delta
                if stat[0] > stat[1]:
                    stat[1] = stat[0]
            else:
                stat[3] -= delta

    def reset_peak(self):
        for rows in self.values.values():
            for stat in rows:
                stat[1] = stat[0]


class CachingAllocator:
    """One device. `sink.record(action, addr, size, stream, ctx, device_free=None)` receives the trace.

    `capacity` is the card's total memory as cudaMemGetInfo reports it; `overhead` is what the process
    holds outside the allocator (CUDA context, cuBLAS workspaces), so cudaMalloc fails once
    reserved + overhead + request > capacity. `other` is what other processes hold on the same card (it leaves
    less for this one, and the snapshot cannot show it); `allowed` is torch.cuda.set_per_process_memory_fraction's
    cap on the allocator's reserved bytes (a cudaMalloc past it fails while the card still has memory free)."""

    def __init__(self, sink, capacity, overhead=300 * MiB, expandable=False, device=0, va_base=VA_BASE, other=0,
                 allowed=None):
        self.sink = sink
        self.capacity = capacity
        self.overhead = overhead
        self.other = other
        self.allowed = allowed
        self.expandable = expandable
        self.device = device
        self.pools = {True: FreeBlocks(), False: FreeBlocks()}
        self.segments = {}          # addr -> Segment
        self.live = {}              # addr -> allocated Block
        self.expandable_segments = {}   # (small, stream) -> Segment
        self.reserved = 0
        self.allocated = 0
        self.window_peak = 0        # highest reserved since the caller last reset it
        self.stats = Stats()
        self.alloc_seq = 0
        self.va_next = va_base + device * (1 << 40)
        self.va_free = []           # released (addr, size) ranges, reused first-fit like the driver does

    # -- public API -------------------------------------------------------------------------------------
    def malloc(self, size, stream=0, ctx=None):
        rounded = round_size(size)
        small = rounded <= SMALL_SIZE
        pool = self.pools[small]
        block = pool.best_fit(stream, rounded)
        if block is not None:
            pool.remove(block)
            before = self._isplit(block)
        else:
            block = self._grow(rounded, small, stream, ctx)
            before = self._isplit(block)
        remaining = block.size - rounded
        if (remaining >= MIN_BLOCK_SIZE) if small else (remaining > SMALL_SIZE):
            rest = Block(block.addr + rounded, remaining, block.seg)
            rest.prev = block
            rest.next = block.next
            if block.next is not None:
                block.next.prev = rest
            block.next = rest
            block.size = rounded
            pool.add(rest)
            self._count_isplit(small, self._isplit(rest), before)
        else:
            self._count_isplit(small, 0, before)
        block.allocated = True
        block.requested = size
        block.ctx = ctx
        block.seq = self.alloc_seq
        self.alloc_seq += 1
        self.live[block.addr] = block
        self.allocated += block.size
        st = self.stats
        st.update("allocated_bytes", small, block.size)
        st.update("active_bytes", small, block.size)
        st.update("requested_bytes", small, size)
        st.update("allocation", small, 1)
        st.update("active", small, 1)
        self.sink.record("alloc", block.addr, size, stream, ctx)
        return block.addr

    def free(self, addr, ctx=None):
        block = self.live.pop(addr)
        seg = block.seg
        small = seg.small
        self.sink.record("free_requested", addr, block.requested, seg.stream, ctx)
        self.sink.record("free_completed", addr, block.requested, seg.stream, ctx)
        st = self.stats
        st.update("allocated_bytes", small, -block.size)
        st.update("active_bytes", small, -block.size)
        st.update("requested_bytes", small, -block.requested)
        st.update("allocation", small, -1)
        st.update("active", small, -1)
        self.allocated -= block.size
        block.allocated = False
        block.requested = 0
        block.ctx = None
        pool = self.pools[small]
        gone = []
        for neighbour in (block.prev, block.next):
            if neighbour is not None and not neighbour.allocated:
                gone.append(self._isplit(neighbour))
                pool.remove(neighbour)
                self._merge(block, neighbour)
        self._count_isplit(small, self._isplit(block), *gone)
        pool.add(block)

    def empty_cache(self, ctx=None):
        self._release_cached(ctx)

    def size_of(self, addr):
        return self.live[addr].requested

    def device_free(self):
        return self.capacity - self.overhead - self.other - self.reserved

    def snapshot_segments(self, frames_of):
        """Segment dicts as torch.cuda.memory._snapshot() builds them, sorted by address. `frames_of(block)`
        returns the frame list of an allocated block (the same object its `alloc` trace entry uses)."""
        out = []
        empty = []
        for addr in sorted(self.segments):
            seg = self.segments[addr]
            if seg.size == 0:
                continue
            blocks = []
            allocated = active = requested = 0
            for b in seg.blocks():
                if b.allocated:
                    allocated += b.size
                    active += b.size
                    requested += b.requested
                blocks.append({"address": b.addr, "size": b.size, "requested_size": b.requested,
                               "state": "active_allocated" if b.allocated else "inactive",
                               "frames": frames_of(b) if b.allocated else []})
            out.append({"device": self.device, "address": seg.addr, "total_size": seg.size,
                        "allocated_size": allocated, "active_size": active, "requested_size": requested,
                        "stream": seg.stream, "segment_type": "small" if seg.small else "large",
                        "segment_pool_id": (0, 0), "is_expandable": seg.expandable, "frames": empty,
                        "blocks": blocks})
        return out

    def live_blocks(self):
        return list(self.live.values())

    # -- segments ---------------------------------------------------------------------------------------
    def _fits(self, nbytes):
        if self.allowed is not None and self.reserved + nbytes > self.allowed:
            return False
        return self.reserved + nbytes <= self.capacity - self.overhead - self.other

    def _grow(self, rounded, small, stream, ctx):
        """Returns a free block (not in the pool) of at least `rounded` bytes from new device memory."""
        if self.expandable:
            return self._grow_expandable(rounded, small, stream, ctx)
        size = allocation_size(rounded)
        if not self._fits(size):
            self.stats.num_alloc_retries += 1
            self._release_cached(ctx)
            if not self._fits(size):
                self._oom(rounded, size, stream, ctx)
        addr = self._va_alloc(size)
        seg = Segment(addr, size, stream, small, False)
        seg.head = Block(addr, size, seg)
        self.segments[addr] = seg
        self.reserved += size
        self.window_peak = max(self.window_peak, self.reserved)
        self.stats.update("reserved_bytes", small, size)
        self.stats.update("segment", small, 1)
        self.sink.record("segment_alloc", addr, size, stream, ctx)
        return seg.head

    def _grow_expandable(self, rounded, small, stream, ctx):
        # One expandable segment per pool and stream; it grows at its end by whole pages (2 MiB for the
        # small pool, 20 MiB for the large one) and the new pages join the trailing free block.
        key = (small, stream)
        seg = self.expandable_segments.get(key)
        page = SMALL_BUFFER if small else LARGE_BUFFER
        if seg is None:
            reservation = ((self.capacity + page - 1) // page) * page
            seg = Segment(self._va_alloc(reservation), 0, stream, small, True, page)
            self.expandable_segments[key] = seg
            self.segments[seg.addr] = seg
        tail = seg.tail()
        have = tail.size if tail is not None and not tail.allocated else 0
        need = ((rounded - have + page - 1) // page) * page
        if not self._fits(need):
            self.stats.num_alloc_retries += 1
            self._release_cached(ctx)
            tail = seg.tail()
            have = tail.size if tail is not None and not tail.allocated else 0
            need = ((rounded - have + page - 1) // page) * page
            if not self._fits(need):
                self._oom(rounded, need, stream, ctx)
        start = seg.addr + seg.size
        self.sink.record("segment_map", start, need, stream, ctx)
        seg.size += need
        self.reserved += need
        self.window_peak = max(self.window_peak, self.reserved)
        self.stats.update("reserved_bytes", small, need)
        if tail is not None and not tail.allocated:
            old = self._isplit(tail)
            self.pools[small].remove(tail)
            tail.size += need
            self._count_isplit(small, self._isplit(tail), old)
            return tail
        block = Block(start, need, seg)
        if tail is None:
            seg.head = block
            self.stats.update("segment", small, 1)
        else:
            tail.next = block
            block.prev = tail
            self._count_isplit(small, self._isplit(block))
        return block

    def _release_cached(self, ctx):
        """release_cached_blocks(): cudaFree every cached segment that is not split, unmap free tails. The
        events carry the context of the malloc that triggered the release."""
        for small in (False, True):
            pool = self.pools[small]
            for block in pool.all():
                seg = block.seg
                if seg.expandable:
                    self._unmap_tail(block, ctx)
                elif not block.is_split():
                    pool.remove(block)
                    del self.segments[seg.addr]
                    self.reserved -= seg.size
                    self.stats.update("reserved_bytes", small, -seg.size)
                    self.stats.update("segment", small, -1)
                    self._va_release(seg.addr, seg.size)
                    self.sink.record("segment_free", seg.addr, seg.size, seg.stream, ctx)

    def _unmap_tail(self, block, ctx):
        seg = block.seg
        if block.next is not None:
            return
        keep = ((block.addr - seg.addr + seg.page - 1) // seg.page) * seg.page
        release = seg.size - keep
        if release <= 0:
            return
        pool = self.pools[seg.small]
        old = self._isplit(block)
        pool.remove(block)
        self.sink.record("segment_unmap", seg.addr + keep, release, seg.stream, ctx)
        seg.size = keep
        self.reserved -= release
        self.stats.update("reserved_bytes", seg.small, -release)
        if block.addr == seg.addr + keep:
            if block.prev is None:
                seg.head = None
                self.stats.update("segment", seg.small, -1)
            else:
                block.prev.next = None
            self._count_isplit(seg.small, 0, old)
        else:
            block.size -= release
            pool.add(block)
            self._count_isplit(seg.small, self._isplit(block), old)

    def _oom(self, rounded, alloc_size, stream, ctx):
        free = self.device_free()
        self.stats.num_ooms += 1
        self.sink.record("oom", 0, rounded, stream, ctx, device_free=free)
        raise OutOfMemory({"requested_bytes": rounded, "alloc_size": alloc_size, "device_free": free,
                           "capacity": self.capacity, "allocated": self.allocated, "reserved": self.reserved,
                           "overhead": self.overhead, "device": self.device, "other": self.other,
                           "allowed": self.allowed})

    # -- helpers ----------------------------------------------------------------------------------------
    def _merge(self, block, other):
        if other is block.prev:
            block.addr = other.addr
            block.prev = other.prev
            if other.prev is not None:
                other.prev.next = block
            else:
                block.seg.head = block
        else:
            block.next = other.next
            if other.next is not None:
                other.next.prev = block
        block.size += other.size

    @staticmethod
    def _isplit(block):
        return block.size if (not block.allocated and block.is_split()) else 0

    def _count_isplit(self, small, added, *removed):
        """Inactive-split accounting: `added` is the new contribution of a block, `removed` the old ones."""
        self.stats.update("inactive_split_bytes", small, added - sum(removed))
        self.stats.update("inactive_split", small, (1 if added else 0) - sum(1 for r in removed if r))

    def _va_alloc(self, size):
        for i, (addr, avail) in enumerate(self.va_free):
            if avail >= size:
                if avail == size:
                    del self.va_free[i]
                else:
                    self.va_free[i] = (addr + size, avail - size)
                return addr
        addr = self.va_next
        self.va_next += ((size + ROUND_LARGE - 1) // ROUND_LARGE) * ROUND_LARGE
        return addr

    def _va_release(self, addr, size):
        bisect.insort(self.va_free, (addr, size))


def _format_size(size, reference):
    prefix = "B  "
    for unit in ("KiB", "MiB", "GiB", "TiB", "PiB"):
        if reference < 768 * 1024:
            break
        prefix = unit
        size //= 1024
        reference /= 1024
    return "%6d %s" % (size, prefix)


def _format_count(count, reference):
    prefix = " "
    for unit in ("K", "M"):
        if reference < 750 * 1000:
            break
        prefix = unit
        count //= 1000
        reference /= 1000
    return "%7d %s " % (count, prefix)


SUMMARY_METRICS = (
    ("allocated_bytes", "Allocated memory", _format_size),
    ("active_bytes", "Active memory", _format_size),
    ("requested_bytes", "Requested memory", _format_size),
    ("reserved_bytes", "GPU reserved memory", _format_size),
    ("inactive_split_bytes", "Non-releasable memory", _format_size),
    ("allocation", "Allocations", _format_count),
    ("active", "Active allocs", _format_count),
    ("segment", "GPU reserved segments", _format_count),
    ("inactive_split", "Non-releasable allocs", _format_count),
)


def memory_summary(stats, device=0):
    """torch.cuda.memory_summary() as PyTorch 2.x renders it (torch/cuda/memory.py)."""
    lines = ["=" * 75,
             " " * 18 + "PyTorch CUDA memory summary, device ID %-17d " % device,
             "-" * 75,
             "  " + " " * 9 + " CUDA OOMs: %-12d | " % stats.num_ooms + " " * 6
             + " cudaMalloc retries: %-8d  " % stats.num_alloc_retries,
             "=" * 75,
             "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  "]
    for key, name, formatter in SUMMARY_METRICS:
        lines.append("-" * 75)
        rows = stats.values[key]
        reference = rows[0]
        for label, stat in ((name, rows[0]), ("      from large pool", rows[1]), ("      from small pool", rows[2])):
            cells = [formatter(stat[i], reference[i]) for i in range(4)]
            lines.append(" %-21s | %s | %s | %s | %s " % (label, cells[0], cells[1], cells[2], cells[3]))
    for name in ("Oversize allocations", "Oversize GPU segments"):
        lines.append("-" * 75)
        cells = [_format_count(0, 0)] * 4
        lines.append(" %-21s | %s | %s | %s | %s " % (name, cells[0], cells[1], cells[2], cells[3]))
    lines.append("=" * 75)
    return "|" + "|\n|".join(lines) + "|\n"
