"""The allocator's state and trace as torch.cuda.memory._snapshot() lays them out, by era:
2.0 (block `history`, no `time_us`), 2.1 (block addresses and frames, `time_us`, `is_expandable`),
2.3+ (`allocator_settings`), 2.5+ (`external_annotations`), 2.6+ (trace `compile_context`),
2.8+ (trace `user_metadata`)."""

import pickle

ERA_ORDER = ["2.0", "2.1", "2.3", "2.4", "2.6", "2.8", "2.10"]


def at_least(era, version):
    return ERA_ORDER.index(era) >= ERA_ORDER.index(version)


def allocator_settings(conf="", era="2.4"):
    settings = {"PYTORCH_CUDA_ALLOC_CONF": conf, "max_split_size": -1, "garbage_collection_threshold": 0.0,
                "expandable_segments": False, "pinned_num_register_threads": 1, "release_lock_on_cudamalloc": False,
                "pinned_use_cuda_host_register": False}
    if at_least(era, "2.8"):
        settings["graph_capture_record_stream_reuse"] = False
    settings["roundup_power2_divisions"] = {str(2 ** k): 0 for k in range(16)}
    return settings


def segment_dict(seg, device, era):
    blocks = []
    allocated = active = requested = 0
    for b in seg.blocks():
        state = "active_allocated" if b.allocated else "inactive"
        if b.allocated:
            allocated += b.size
            active += b.size
            requested += b.requested
        if era == "2.0":
            block = {"size": b.size, "requested_size": b.requested, "state": state}
            if b.allocated and b.frames is not None:
                block["history"] = [{"addr": b.addr, "real_size": b.requested, "frames": b.frames}]
        else:
            block = {"address": b.addr, "size": b.size, "requested_size": b.requested, "state": state,
                     "frames": b.frames if b.allocated else []}
        blocks.append(block)
    out = {"device": device, "address": seg.addr, "total_size": seg.size, "allocated_size": allocated,
           "active_size": active, "requested_size": requested, "stream": 0,
           "segment_type": "small" if seg.small else "large", "segment_pool_id": (0, 0)}
    if at_least(era, "2.1"):
        out["is_expandable"] = False
        out["frames"] = seg.frames
    out["blocks"] = blocks
    return out


def trace_entries(trace, era, compile_context="N/A", user_metadata=""):
    out = []
    for e in trace:
        entry = {"action": e["action"]}
        if "device_free" in e:
            entry["device_free"] = e["device_free"]
        else:
            entry["addr"] = e["addr"]
        entry["size"] = e["size"]
        entry["stream"] = 0
        if at_least(era, "2.1"):
            entry["time_us"] = e["time_us"]
        if at_least(era, "2.6"):
            entry["compile_context"] = compile_context if e["frames"] else "N/A"
        if at_least(era, "2.8"):
            entry["user_metadata"] = user_metadata
        if e["frames"] or era == "2.0":
            entry["frames"] = e["frames"]
        else:
            entry["frames"] = []
        out.append(entry)
    return out


def build(alloc, era, device=0, device_count=1, conf="", compile_context="N/A", annotations=None):
    snap = {"segments": [segment_dict(s, device, era) for s in alloc.segments]}
    traces = [[] for _ in range(device_count)]
    traces[device] = trace_entries(alloc.trace, era, compile_context)
    snap["device_traces"] = traces
    if at_least(era, "2.3"):
        snap["allocator_settings"] = allocator_settings(conf, era)
    if at_least(era, "2.4"):
        snap["external_annotations"] = annotations or []
    return snap


def dumps(snap, protocol=4):
    return pickle.dumps(snap, protocol=protocol)
