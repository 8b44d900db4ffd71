"""The recorder (device trace entries as _record_memory_history writes them, with the truth of
what each allocation is for kept beside them) and the writer of the snapshot pickle (the layout
of PyTorch 2.8+: segments with blocks and states, device_traces, allocator_settings,
external_annotations) and of the OOM message."""
import pickle


class Recorder:
    def __init__(self, t0_us):
        self.entries = []
        self.tags = []  # per entry: category of an alloc/free_completed, else None
        self.time_us = t0_us
        self.live = {}
        self.live_total = 0
        self.totals = []  # live total after each entry
        self.by_cat = []  # live bytes by category after each entry (shared dicts when unchanged)
        self._current = {}

    def advance(self, us):
        self.time_us += us

    def _entry(self, action, key, value, size, stream, frames):
        self.time_us += 7 + (len(self.entries) * 13) % 29
        e = {"action": action, key: value, "size": size, "stream": stream, "time_us": self.time_us,
             "compile_context": "N/A", "user_metadata": ""}
        if frames is not None:
            e["frames"] = frames
        return e

    def trace(self, action, addr, size, stream, frames, tag=None):
        self.entries.append(self._entry(action, "addr", addr, size, stream, frames))
        if action == "alloc" or action == "free_completed":
            sign = 1 if action == "alloc" else -1
            self._current = dict(self._current)
            self._current[tag] = self._current.get(tag, 0) + sign * size
            self.live_total += sign * size
        self.tags.append(tag)
        self.totals.append(self.live_total)
        self.by_cat.append(self._current)

    def trace_oom(self, device_free, size, stream, frames):
        self.entries.append(self._entry("oom", "device_free", device_free, size, stream, frames))
        self.tags.append(None)
        self.totals.append(self.live_total)
        self.by_cat.append(self._current)


def _state(block):
    if block.allocated:
        return "active_allocated"
    if block.ready_tick is not None or block.stream_uses:
        return "active_pending_free"
    return "inactive"


def segments(allocator):
    out = []
    for seg in allocator.segments_sorted():
        blocks = []
        alloc = active = requested = 0
        b = seg.head
        while b is not None:
            state = _state(b)
            if state == "active_allocated":
                alloc += b.size
            if state != "inactive":
                active += b.size
                requested += b.requested
            blocks.append({"address": b.addr, "size": b.size, "requested_size": b.requested, "state": state,
                           "frames": b.frames if (state != "inactive" and b.frames) else []})
            b = b.next
        assert sum(x["size"] for x in blocks) == seg.size
        out.append({"device": 0, "address": seg.addr, "total_size": seg.size, "allocated_size": alloc,
                    "active_size": active, "requested_size": requested, "stream": seg.stream,
                    "segment_type": "small" if seg.pool.small else "large",
                    "segment_pool_id": allocator.pool_of(seg), "is_expandable": False,
                    "frames": seg.frames or [], "blocks": blocks})
    return out


def allocator_settings(conf=""):
    return {"PYTORCH_CUDA_ALLOC_CONF": conf, "max_split_size": -1, "garbage_collection_threshold": 0.0,
            "expandable_segments": False, "pinned_num_register_threads": 1, "release_lock_on_cudamalloc": False,
            "pinned_use_cuda_host_register": False, "graph_capture_record_stream_reuse": False,
            "roundup_power2_divisions": {str(1 << k): 0 for k in range(16)}}


def snapshot_bytes(allocator, entries, annotations):
    snap = {"segments": segments(allocator), "device_traces": [entries],
            "allocator_settings": allocator_settings(), "external_annotations": annotations}
    return pickle.dumps(snap, protocol=4)


def format_size(n):
    if n <= 1024:
        return "%d bytes" % n
    if n <= 1048576:
        return "%.2f KiB" % (n / 1024.0)
    if n <= 1073741824:
        return "%.2f MiB" % (n / 1048576.0)
    return "%.2f GiB" % (n / 1073741824.0)


def oom_message(info, processes):
    proc = ""
    for pid, used, is_self in processes:
        who = "Including non-PyTorch memory, this process" if is_self else "Process %d" % pid
        proc += "%s has %s memory in use. " % (who, format_size(used))
    private = ""
    if info["private_free"] > 0:
        private = "with %s allocated in private pools (e.g., CUDA Graphs), " % format_size(info["private_free"])
    return ("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate %s. GPU 0 has a total capacity of %s of which "
            "%s is free. %sOf the allocated memory %s is allocated by PyTorch, %sand %s is reserved by PyTorch but "
            "unallocated. If reserved but unallocated memory is large try setting "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory "
            "Management  (https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)"
            % (format_size(info["alloc_size"]), format_size(info["device_total"]), format_size(info["device_free"]),
               proc, format_size(info["allocated"] + info["private_free"]), private,
               format_size(info["reserved"] - info["allocated"] - info["private_free"])))


def traceback_text(python_frames, message, rank=None):
    """A Python traceback of the failing call (outermost first) ending in the OOM message."""
    lines = ["Traceback (most recent call last):"]
    for filename, name, line in python_frames:
        lines.append('  File "%s", line %d, in %s' % (filename, line, name))
    text = "\n".join(lines) + "\n" + message + "\n"
    if rank is not None:
        text = "".join("[rank%d]: %s\n" % (rank, l) for l in text.rstrip("\n").split("\n"))
    return text
