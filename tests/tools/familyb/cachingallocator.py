"""A best-fit caching allocator in the manner of PyTorch's CUDA one, written for family B.

Only the rules that shape a memory snapshot are kept:
  * requests round up to 512 B;
  * requests of at most 1 MiB come from the small pool, carved out of 2 MiB segments;
  * larger requests come from the large pool: a 1-10 MiB request reserves a 20 MiB segment,
    anything larger reserves its own size rounded up to 2 MiB;
  * the smallest cached free block of the pool that is big enough is used (best fit), and split
    when the remainder is worth keeping (small pool: >= 512 B, large pool: > 1 MiB);
  * a freed block merges with free neighbours of its segment;
  * when the driver has no room for a new segment, every cached segment that is entirely free
    is returned (cudaFree) and the request is tried once more; only then is it an OOM;
  * optional expandable segments: one growing segment per pool, mapped in 2 MiB (small) or
    20 MiB (large) pages.
The driver side is a card of `total` bytes of which `context` (this process's CUDA context) and
`others` (other processes) are not ours; a per-process fraction caps what we may reserve.
"""

import bisect

KiB = 1024
MiB = 1024 * KiB
GiB = 1024 * MiB

SMALL_LIMIT = 1 * MiB
SMALL_SEGMENT = 2 * MiB
MID_SEGMENT = 20 * MiB
MID_LIMIT = 10 * MiB
LARGE_ROUND = 2 * MiB


def round_request(size):
    if size < 512:
        return 512
    return (size + 511) // 512 * 512


def segment_size_for(rounded):
    if rounded <= SMALL_LIMIT:
        return SMALL_SEGMENT
    if rounded < MID_LIMIT:
        return MID_SEGMENT
    return (rounded + LARGE_ROUND - 1) // LARGE_ROUND * LARGE_ROUND


class OutOfMemory(Exception):
    def __init__(self, report):
        super().__init__("out of memory")
        self.report = report


class Block:
    __slots__ = ("addr", "size", "requested", "allocated", "segment", "frames", "tag")

    def __init__(self, addr, size, segment):
        self.addr = addr
        self.size = size
        self.requested = 0
        self.allocated = False
        self.segment = segment
        self.frames = []
        self.tag = None


class Segment:
    __slots__ = ("addr", "size", "small", "blocks", "frames", "expandable")

    def __init__(self, addr, size, small, frames, expandable=False):
        self.addr = addr
        self.size = size
        self.small = small
        self.blocks = []
        self.frames = frames
        self.expandable = expandable


class Counter:
    """current/peak/allocated/freed, the four columns of memory_summary()."""

    __slots__ = ("current", "peak", "allocated", "freed")

    def __init__(self):
        self.current = self.peak = self.allocated = self.freed = 0

    def add(self, n):
        self.current += n
        self.allocated += n
        self.peak = max(self.peak, self.current)

    def sub(self, n):
        self.current -= n
        self.freed += n


class Stats:
    NAMES = ("allocated_bytes", "active_bytes", "requested_bytes", "reserved_bytes", "inactive_split_bytes",
             "allocation", "active", "segment", "inactive_split")

    def __init__(self):
        self.pools = {pool: {name: Counter() for name in self.NAMES} for pool in ("all", "large_pool", "small_pool")}
        self.num_ooms = 0
        self.num_alloc_retries = 0

    def change(self, name, small, n):
        for pool in ("all", "small_pool" if small else "large_pool"):
            if n >= 0:
                self.pools[pool][name].add(n)
            else:
                self.pools[pool][name].sub(-n)


class Device:
    def __init__(self, total, context, others=0, fraction=None, expandable=False, clock=None):
        self.total = total
        self.context = context
        self.others = others
        self.allowed = int(total * fraction) if fraction else None
        self.expandable = expandable
        self.segments = []
        self.trace = []
        self.stats = Stats()
        self.reserved = 0
        self.allocated = 0
        self.next_address = 0x7F3C_0000_0000
        self.free_index = {True: [], False: []}  # per pool: sorted (size, addr, block) of free blocks
        self.clock = clock if clock is not None else [1_732_000_000_000_000]

    # -- driver -------------------------------------------------------------------------------
    def driver_free(self):
        return self.total - self.context - self.others - self.reserved

    def _driver_can_give(self, size):
        if self.allowed is not None and self.reserved + size > self.allowed:
            return False
        return size <= self.driver_free()

    def _event(self, action, addr, size, frames, **extra):
        self.clock[0] += 7
        entry = {"action": action}
        if action != "oom":
            entry["addr"] = addr
        entry.update(extra)
        entry["size"] = size
        entry["stream"] = 0
        entry["time_us"] = self.clock[0]
        if frames is not None:
            entry["frames"] = frames
        self.trace.append(entry)

    def tick(self, micros):
        self.clock[0] += micros

    # -- the free-block index (best fit = first entry not smaller than the request) ----------
    def _index_add(self, block):
        bisect.insort(self.free_index[block.segment.small], (block.size, block.addr, block))

    def _index_remove(self, block):
        entries = self.free_index[block.segment.small]
        i = bisect.bisect_left(entries, (block.size, block.addr))
        assert entries[i][2] is block
        del entries[i]

    # -- segments -----------------------------------------------------------------------------
    def _new_segment(self, size, small, frames):
        addr = self.next_address
        self.next_address += (size + 2 * MiB - 1) // (2 * MiB) * (2 * MiB) + 2 * MiB
        segment = Segment(addr, size, small, frames)
        block = Block(addr, size, segment)
        segment.blocks.append(block)
        self.segments.append(segment)
        self._index_add(block)
        self.reserved += size
        self.stats.change("reserved_bytes", small, size)
        self.stats.change("segment", small, 1)
        self._event("segment_alloc", addr, size, frames)
        return block

    def _expandable_segment(self, small):
        for segment in self.segments:
            if segment.expandable and segment.small == small:
                return segment
        return None

    def _grow_expandable(self, rounded, small, frames):
        """Maps pages at the end of the pool's one segment so a free tail of `rounded` exists."""
        page = SMALL_SEGMENT if small else MID_SEGMENT
        segment = self._expandable_segment(small)
        tail_free = 0
        if segment and not segment.blocks[-1].allocated:
            tail_free = segment.blocks[-1].size
        need = rounded - tail_free
        grow = (need + page - 1) // page * page
        if not self._driver_can_give(grow):
            return None
        if segment is None:
            addr = self.next_address
            self.next_address += 64 * GiB
            segment = Segment(addr, 0, small, frames, expandable=True)
            self.segments.append(segment)
            self.stats.change("segment", small, 1)
        start = segment.addr + segment.size
        if segment.blocks and not segment.blocks[-1].allocated:
            self._index_remove(segment.blocks[-1])
            segment.blocks[-1].size += grow
        else:
            segment.blocks.append(Block(start, grow, segment))
        self._index_add(segment.blocks[-1])
        segment.size += grow
        self.reserved += grow
        self.stats.change("reserved_bytes", small, grow)
        self._event("segment_map", start, grow, frames)
        return segment.blocks[-1]

    def release_cached(self):
        """cudaFree of every segment that holds no live block (empty_cache, or the OOM retry)."""
        released = 0
        for segment in list(self.segments):
            if segment.expandable:
                tail = segment.blocks[-1]
                if not tail.allocated and tail.size > 0:
                    self._event("segment_unmap", tail.addr, tail.size, segment.frames)
                    self._index_remove(tail)
                    segment.size -= tail.size
                    self.reserved -= tail.size
                    released += tail.size
                    self.stats.change("reserved_bytes", segment.small, -tail.size)
                    segment.blocks.pop()
                continue
            if len(segment.blocks) == 1 and not segment.blocks[0].allocated:
                self._index_remove(segment.blocks[0])
                self.segments.remove(segment)
                self.reserved -= segment.size
                released += segment.size
                self.stats.change("reserved_bytes", segment.small, -segment.size)
                self.stats.change("segment", segment.small, -1)
                self._event("segment_free", segment.addr, segment.size, segment.frames)
        return released

    # -- blocks -------------------------------------------------------------------------------
    def _best_fit(self, rounded, small):
        entries = self.free_index[small]
        i = bisect.bisect_left(entries, (rounded, 0))
        return entries[i][2] if i < len(entries) else None

    def _split(self, block, rounded):
        remainder = block.size - rounded
        worth = remainder >= 512 if block.segment.small else remainder > SMALL_LIMIT
        if not worth:
            return
        segment = block.segment
        rest = Block(block.addr + rounded, remainder, segment)
        block.size = rounded
        segment.blocks.insert(segment.blocks.index(block) + 1, rest)
        self._index_add(rest)

    def malloc(self, size, frames, tag=None):
        rounded = round_request(size)
        small = rounded <= SMALL_LIMIT
        block = self._best_fit(rounded, small)
        if block is None:
            if self.expandable:
                block = self._grow_expandable(rounded, small, frames)
                if block is None:
                    self.stats.num_alloc_retries += 1
                    self.release_cached()
                    block = self._grow_expandable(rounded, small, frames)
            else:
                want = segment_size_for(rounded)
                if not self._driver_can_give(want):
                    self.stats.num_alloc_retries += 1
                    self.release_cached()
                if self._driver_can_give(want):
                    block = self._new_segment(want, small, frames)
            if block is None:
                self.stats.num_ooms += 1
                want = segment_size_for(rounded) if not self.expandable else rounded
                report = self.oom_report(size, rounded, want)
                self._event("oom", None, rounded, frames, device_free=max(0, self.driver_free()))
                raise OutOfMemory(report)
        self._index_remove(block)
        self._split(block, rounded)
        block.allocated = True
        block.requested = size
        block.frames = frames
        block.tag = tag
        self.allocated += block.size
        small = block.segment.small
        self.stats.change("allocated_bytes", small, block.size)
        self.stats.change("active_bytes", small, block.size)
        self.stats.change("requested_bytes", small, size)
        self.stats.change("allocation", small, 1)
        self.stats.change("active", small, 1)
        self._event("alloc", block.addr, size, frames)
        return block

    def free(self, block, frames=None):
        assert block.allocated, "double free in the simulation"
        small = block.segment.small
        self.allocated -= block.size
        self.stats.change("allocated_bytes", small, -block.size)
        self.stats.change("active_bytes", small, -block.size)
        self.stats.change("requested_bytes", small, -block.requested)
        self.stats.change("allocation", small, -1)
        self.stats.change("active", small, -1)
        event_frames = block.frames if frames is None else frames
        self._event("free_requested", block.addr, block.requested, event_frames)
        self._event("free_completed", block.addr, block.requested, event_frames)
        block.allocated = False
        block.requested = 0
        block.frames = []
        block.tag = None
        segment = block.segment
        index = segment.blocks.index(block)
        if index + 1 < len(segment.blocks) and not segment.blocks[index + 1].allocated:
            self._index_remove(segment.blocks[index + 1])
            block.size += segment.blocks.pop(index + 1).size
        if index > 0 and not segment.blocks[index - 1].allocated:
            previous = segment.blocks[index - 1]
            self._index_remove(previous)
            previous.size += block.size
            segment.blocks.pop(index)
            block = previous
        self._index_add(block)

    # -- reading the state --------------------------------------------------------------------
    def largest_free_block(self, small=False):
        entries = self.free_index[small]
        return entries[-1][0] if entries else 0

    def inactive_split(self):
        total = count = 0
        for segment in self.segments:
            if len(segment.blocks) > 1:
                for block in segment.blocks:
                    if not block.allocated:
                        total += block.size
                        count += 1
        return total, count

    def oom_report(self, size, rounded, segment_size):
        return {
            "requested": size,
            "rounded": rounded,
            "tried": segment_size,
            "total": self.total,
            "free": max(0, self.driver_free()),
            "allocated": self.allocated,
            "reserved": self.reserved,
            "allowed": self.allowed,
            "context": self.context,
            "others": self.others,
            "largest_free": self.largest_free_block(rounded <= SMALL_LIMIT),
        }

    def live_bytes_by_tag(self):
        out = {}
        for segment in self.segments:
            for block in segment.blocks:
                if block.allocated:
                    out[block.tag] = out.get(block.tag, 0) + block.size
        return out

    def snapshot_segments(self, device=0):
        segments = []
        for segment in sorted(self.segments, key=lambda s: s.addr):
            blocks = []
            allocated = requested = 0
            for block in segment.blocks:
                state = "active_allocated" if block.allocated else "inactive"
                blocks.append({"address": block.addr, "size": block.size,
                               "requested_size": block.requested if block.allocated else 0,
                               "state": state, "frames": block.frames if block.allocated else []})
                if block.allocated:
                    allocated += block.size
                    requested += block.requested
            segments.append({
                "device": device, "address": segment.addr, "total_size": segment.size,
                "allocated_size": allocated, "active_size": allocated, "requested_size": requested,
                "stream": 0, "segment_type": "small" if segment.small else "large",
                "segment_pool_id": (0, 0), "is_expandable": segment.expandable,
                "frames": segment.frames, "blocks": blocks})
        return segments
