"""Writes a scenario: the snapshot pickle (2.5+ layout, protocol 4), the OOM text of the era and the
label with the truth counted from the simulation."""

import json
import pickle

from allocator import DEFAULT_POOL

CATEGORIES = ["parameters", "gradients", "optimizer_state", "activations", "temporaries", "inputs",
              "communication", "kv_cache"]


def format_size(n):
    """c10's format_size: bytes up to 1024, then KiB/MiB/GiB with two decimals, `<=` boundaries."""
    if n <= 1024:
        return "%d bytes" % n
    if n <= 1048576:
        return "%.2f KiB" % (n / 1024.0)
    if n <= 1073741824:
        return "%.2f MiB" % (n / 1048576.0)
    return "%.2f GiB" % (n / 1073741824.0)


def gib(n):
    return "%.2f GiB" % (n / 1073741824.0)


def live_timeline(trace, start):
    """memory_viz's Active Memory Timeline over the kept window: an allocation lives from `alloc`
    to `free_completed`, sized by its requested bytes; what was alive when the window starts counts
    from its start. Returns (peak bytes, categories at the peak, index of the peak)."""
    live = {}
    for e in trace[:start]:
        if e["action"] == "alloc":
            live[e["addr"]] = (e["size"], e["_category"])
        elif e["action"] == "free_completed":
            live.pop(e["addr"], None)
    total = sum(s for s, _ in live.values())
    best = (total, dict(live), start)
    for i in range(start, len(trace)):
        e = trace[i]
        if e["action"] == "alloc":
            live[e["addr"]] = (e["size"], e["_category"])
            total += e["size"]
            if total > best[0]:
                best = (total, dict(live), i)
        elif e["action"] == "free_completed":
            if e["addr"] in live:
                total -= live.pop(e["addr"])[0]
    peak, at, index = best
    cats = {}
    for s, c in at.values():
        cats[c] = cats.get(c, 0) + s
    return peak, cats, index


def live_at(trace, index):
    live = {}
    for e in trace[:index + 1]:
        if e["action"] == "alloc":
            live[e["addr"]] = (e["size"], e["_category"])
        elif e["action"] == "free_completed":
            live.pop(e["addr"], None)
    cats = {}
    for s, c in live.values():
        cats[c] = cats.get(c, 0) + s
    return cats


def full_categories(cats):
    return {c: int(cats.get(c, 0)) for c in CATEGORIES}


def snapshot_dict(run, ring, settings_conf=""):
    a = run.a
    segs = []
    for seg in sorted(a.segments, key=lambda s: s.addr):
        blocks = []
        allocated = active = requested = 0
        for b in seg.blocks:
            d = {"address": b.addr, "size": b.size, "requested_size": b.requested if b.state != "inactive" else 0,
                 "state": b.state, "frames": b.frames if b.state != "inactive" else []}
            if b.state == "active_allocated":
                allocated += b.size
            if b.state != "inactive":
                active += b.size
                requested += b.requested
            blocks.append(d)
        segs.append({"device": run.device, "address": seg.addr, "total_size": seg.size,
                     "allocated_size": allocated, "active_size": active, "requested_size": requested,
                     "stream": seg.stream, "segment_type": "small" if seg.small else "large",
                     "segment_pool_id": tuple(seg.pool), "is_expandable": False, "frames": seg.frames,
                     "blocks": blocks})
    kept = a.trace[-ring:] if ring else []
    trace = []
    for e in kept:
        d = {k: v for k, v in e.items() if not k.startswith("_")}
        d.setdefault("frames", [])
        d["compile_context"] = ""
        trace.append(d)
    traces = [[] for _ in range(max(run.device + 1, run.visible_devices))]
    traces[run.device] = trace
    return {
        "segments": segs,
        "device_traces": traces,
        "allocator_settings": {
            "PYTORCH_CUDA_ALLOC_CONF": settings_conf, "max_split_size": -1, "garbage_collection_threshold": 0.0,
            "expandable_segments": False, "pinned_num_register_threads": 1, "release_lock_on_cudamalloc": False,
            "pinned_use_cuda_host_register": False,
            "roundup_power2_divisions": {str(2 ** k): 0 for k in range(16)}},
        "external_annotations": run.annotations,
    }


def oom_text(run, rank_prefix=None, exception="torch.OutOfMemoryError", url_era="2.5"):
    f = run.failure
    a = run.a
    self_use = f["physical_reserved"] + run.outside  # NVML sees only mapped memory
    procs = "Including non-PyTorch memory, this process has %s memory in use. " % format_size(self_use)
    for pid, b in run.others:
        procs += "Process %d has %s memory in use. " % (pid, format_size(b))
    priv = f["private_pool_free_cached"]
    pt_alloc = f["allocated_block_bytes"] + priv
    unalloc = f["reserved"] - f["allocated_block_bytes"] - priv
    priv_clause = "with %s allocated in private pools (e.g., CUDA Graphs), " % format_size(priv) if priv > 0 else ""
    tail = ("(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)" if url_era < "2.8" else
            "(https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)")
    msg = ("CUDA out of memory. Tried to allocate %s. GPU %d has a total capacity of %s of which %s is free. %s"
           "Of the allocated memory %s is allocated by PyTorch, %sand %s is reserved by PyTorch but unallocated. "
           "If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True "
           "to avoid fragmentation.  See documentation for Memory Management  %s"
           % (format_size(f["alloc_size"]), run.device, format_size(run.card.total), format_size(f["device_free"]),
              procs, format_size(pt_alloc), priv_clause, format_size(unalloc), tail))
    lines = list(run.log_lines) + ["Traceback (most recent call last):"]
    for fr in f["stack"]:
        if fr[3] is None:
            continue
        lines.append('  File "%s", line %d, in %s' % (fr[0], fr[1], fr[2]))
        lines.append("    " + fr[3])
    lines.append("%s: %s" % (exception, msg))
    if rank_prefix is not None:
        lines = ["[rank%d]: %s" % (rank_prefix, l) for l in lines]
    return "\n".join(lines) + "\n", {"requested_bytes_text": f["alloc_size"], "pt_alloc": pt_alloc, "unalloc": unalloc,
                                     "priv": priv}


def write_pickle(path, obj):
    with open(path, "wb") as fh:
        pickle.dump(obj, fh, protocol=4)


def write_json(path, obj):
    with open(path, "w") as fh:
        json.dump(obj, fh, indent=1)
        fh.write("\n")
