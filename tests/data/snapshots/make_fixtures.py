#!/usr/bin/env python3
"""Writes the small snapshot fixtures in this folder with nothing but the standard library.

    python3 tests/data/snapshots/make_fixtures.py

Each era of the PyTorch snapshot format gets one file, shaped the way torch emits it (frame dicts
and frame lists shared between entries so the pickler memoizes them), plus every container the
reader accepts. The output is deterministic; rerun after editing and commit the result.
"""

import base64
import copy
import gzip
import io
import json
import os
import pickle
import zipfile

HERE = os.path.dirname(os.path.abspath(__file__))
MiB = 1024 * 1024


def frame(name, filename, line):
    return {"filename": filename, "line": line, "name": name}


TRAIN = frame("train_step", "train.py", 42)
FORWARD = frame("forward", "/site-packages/torch/nn/modules/linear.py", 125)
BACKWARD = frame("_engine_run_backward", "/site-packages/torch/autograd/graph.py", 768)
STEP = frame("_multi_tensor_adamw", "/site-packages/torch/optim/adamw.py", 480)
CPP = frame("c10::cuda::CUDACachingAllocator::malloc(int, unsigned long, CUstream_st*)", "??", 0)
FWD_STACK = [FORWARD, TRAIN]
BWD_STACK = [CPP, BACKWARD, TRAIN]
OPT_STACK = [STEP, TRAIN]


def segment_list_era():
    """<=1.13: torch.cuda.memory_snapshot() pickled bare - no block address, no requested_size,
    history with raw cpp_frames."""
    return [
        {"device": 0, "address": 0x7F0000000000, "total_size": 2 * MiB, "allocated_size": MiB,
         "active_size": MiB, "stream": 0, "segment_type": "small",
         "blocks": [
             {"size": MiB, "state": "active_allocated",
              "history": [{"addr": 0x7F0000000000, "real_size": 1000000, "frames": [FORWARD, TRAIN],
                           "cpp_frames": ["frame #0: c10::Error::Error + 0x57"]}]},
             {"size": MiB, "state": "inactive"},
         ]},
        {"device": 1, "address": 0x7E0000000000, "total_size": 20 * MiB, "allocated_size": 0,
         "active_size": 0, "stream": 0, "segment_type": "large",
         "blocks": [{"size": 20 * MiB, "state": "inactive"}]},
    ]


def history_era():
    """2.0: dict with device_traces (default trace_alloc_max_entries=1), blocks with history."""
    stack = [FORWARD, TRAIN]
    return {
        "segments": [
            {"device": 0, "address": 0x7F1000000000, "total_size": 4 * MiB, "allocated_size": 3 * MiB,
             "active_size": 3 * MiB, "requested_size": 3 * MiB - 100, "stream": 0, "segment_type": "large",
             "segment_pool_id": (0, 0),
             "blocks": [
                 {"size": 2 * MiB, "requested_size": 2 * MiB - 100, "state": "active_allocated",
                  "history": [{"addr": 0x7F1000000000, "real_size": 2 * MiB - 100, "frames": stack}]},
                 {"size": MiB, "requested_size": MiB, "state": "active_pending_free",
                  "history": [{"addr": 0x7F1000200000, "real_size": MiB, "frames": stack},
                              {"addr": 0x7F1000200000, "real_size": 512, "frames": [TRAIN]}]},
                 {"size": MiB, "requested_size": 0, "state": "inactive"},
             ]},
        ],
        "device_traces": [[{"action": "snapshot", "addr": 0, "size": 3 * MiB, "stream": 0}]],
    }


def traces_era():
    """2.1-2.2: time_us, segment frames, expandable segments with segment_map/unmap."""
    fwd = list(FWD_STACK)
    bwd = list(BWD_STACK)
    base = 0x7F2000000000
    t = 1700000000000000
    trace = [
        {"action": "segment_map", "addr": base, "size": 20 * MiB, "stream": 0, "time_us": t, "frames": fwd},
        {"action": "alloc", "addr": base, "size": 6 * MiB - 8, "stream": 0, "time_us": t + 1, "frames": fwd},
        {"action": "alloc", "addr": base + 6 * MiB, "size": 4 * MiB, "stream": 0, "time_us": t + 2, "frames": bwd},
        {"action": "free_requested", "addr": base + 6 * MiB, "size": 4 * MiB, "stream": 0, "time_us": t + 3,
         "frames": bwd},
        {"action": "free_completed", "addr": base + 6 * MiB, "size": 4 * MiB, "stream": 0, "time_us": t + 4,
         "frames": bwd},
        {"action": "segment_unmap", "addr": base + 18 * MiB, "size": 2 * MiB, "stream": 0, "time_us": t + 5},
        {"action": "snapshot", "addr": 0, "size": 6 * MiB, "stream": 0, "time_us": t + 6},
    ]
    return {
        "segments": [
            {"device": 0, "address": base, "total_size": 18 * MiB, "allocated_size": 6 * MiB,
             "active_size": 6 * MiB, "requested_size": 6 * MiB - 8, "stream": 0, "segment_type": "large",
             "segment_pool_id": (0, 0), "is_expandable": True, "frames": fwd,
             "blocks": [
                 {"address": base, "size": 6 * MiB, "requested_size": 6 * MiB - 8, "state": "active_allocated",
                  "frames": fwd},
                 {"address": base + 6 * MiB, "size": 12 * MiB, "requested_size": 4 * MiB, "state": "inactive",
                  "frames": []},
             ]},
        ],
        "device_traces": [trace, []],
    }


def newest_era():
    """2.8+ and main: allocator_settings, external_annotations, compile_context, user_metadata,
    pool ids, FX frame fields, host_segments, an OOM with device_free, and oddities a reader must
    survive (an unknown action and key, the docstring's state spelling)."""
    fx = dict(FORWARD, fx_node_op="call_function", fx_node_name="linear", fx_original_trace="x = self.fc(x)")
    fwd = [fx, TRAIN]
    opt = list(OPT_STACK)
    base = 0x7F3000000000
    t = 1760000000000000
    entry = dict(stream=0, compile_context="", user_metadata="")
    trace = [
        dict(entry, action="segment_alloc", addr=base, size=64 * MiB, time_us=t, frames=fwd),
        dict(entry, action="alloc", addr=base, size=40 * MiB, time_us=t + 10, frames=fwd,
             compile_context="0/1 [inductor]", pool_id=(0, 0)),
        dict(entry, action="alloc", addr=base + 40 * MiB, size=20 * MiB, time_us=t + 20, frames=opt,
             user_metadata="step 3"),
        dict(entry, action="annotate", addr=base, size=0, time_us=t + 25, user_metadata="activations"),
        dict(entry, action="mystery_action", addr=1, size=2, time_us=t + 26),
        {"action": "oom", "device_free": 3 * MiB, "size": 128 * MiB, "stream": 0, "time_us": t + 30,
         "frames": opt, "compile_context": "", "user_metadata": "", "new_field": 1},
    ]
    return {
        "segments": [
            {"device": 0, "address": base, "total_size": 64 * MiB, "allocated_size": 60 * MiB,
             "active_size": 60 * MiB, "requested_size": 60 * MiB, "stream": 0, "segment_type": "large",
             "segment_pool_id": (1, 7), "is_expandable": False, "frames": fwd,
             "blocks": [
                 {"address": base, "size": 40 * MiB, "requested_size": 40 * MiB, "state": "active_allocated",
                  "frames": fwd},
                 {"address": base + 40 * MiB, "size": 20 * MiB, "requested_size": 20 * MiB,
                  "state": "active_awaiting_free", "frames": opt},
                 {"address": base + 60 * MiB, "size": 4 * MiB, "requested_size": 0, "state": "inactive",
                  "frames": []},
             ]},
        ],
        "device_traces": [trace],
        "allocator_settings": {
            "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:False,max_split_size_mb:128",
            "max_split_size": 128 * MiB, "garbage_collection_threshold": 0.6, "expandable_segments": False,
            "pinned_num_register_threads": 1, "release_lock_on_cudamalloc": False,
            "pinned_use_cuda_host_register": False, "graph_capture_record_stream_reuse": False,
            "roundup_power2_divisions": {str(1 << k): (4 if k == 0 else 0) for k in range(16)},
        },
        "external_annotations": [
            {"stage": "START", "name": "ProfilerStep#3", "device": 0, "time_us": t + 1},
            {"stage": "END", "name": "ProfilerStep#3", "device": 0, "time_us": t + 29},
        ],
        "host_segments": [],
        "host_traces": [],
        "unknown_top_level": 1,
    }


def annotated_era():
    """PyTorch 2.14+ with torch.cuda.memory._annotate_tensor: `annotate` entries keyed to the base of
    a live allocation, the text in user_metadata, the annotation site's frames. Two notes on one
    tensor, one through a view (same base), one on a block reused at the same address, one on an
    address whose allocation the ring buffer lost, and a _set_memory_metadata run they must not
    break."""
    base = 0x7F4000000000
    t = 1770000000000000
    site = [frame("pack_hook", "model.py", 88), TRAIN]
    entry = dict(stream=0, compile_context="", user_metadata="")
    run = dict(entry, user_metadata="epoch 1")
    trace = [
        dict(entry, action="segment_alloc", addr=base, size=64 * MiB, time_us=t, frames=FWD_STACK),
        dict(run, action="alloc", addr=base, size=16 * MiB, time_us=t + 10, frames=FWD_STACK),
        dict(run, action="alloc", addr=base + 16 * MiB, size=8 * MiB, time_us=t + 20, frames=FWD_STACK),
        dict(entry, action="annotate", addr=base, size=0, time_us=t + 21, frames=site,
             user_metadata="saved for backward"),
        dict(entry, action="annotate", addr=base, size=0, time_us=t + 22, frames=site, user_metadata="layer 3 kv"),
        dict(entry, action="annotate", addr=0x7F40DEAD0000, size=0, time_us=t + 23, frames=site,
             user_metadata="lost"),
        dict(run, action="free_requested", addr=base, size=16 * MiB, time_us=t + 30, frames=FWD_STACK),
        dict(run, action="free_completed", addr=base, size=16 * MiB, time_us=t + 31, frames=FWD_STACK),
        dict(run, action="alloc", addr=base, size=12 * MiB, time_us=t + 40, frames=BWD_STACK),
        dict(entry, action="annotate", addr=base, size=0, time_us=t + 41, frames=[], user_metadata="grad bucket"),
        dict(run, action="alloc", addr=base + 24 * MiB, size=4 * MiB, time_us=t + 50, frames=BWD_STACK),
    ]
    return {
        "segments": [
            {"device": 0, "address": base, "total_size": 64 * MiB, "allocated_size": 24 * MiB,
             "active_size": 24 * MiB, "requested_size": 24 * MiB, "stream": 0, "segment_type": "large",
             "segment_pool_id": (0, 0), "is_expandable": False, "frames": FWD_STACK,
             "blocks": [
                 {"address": base, "size": 12 * MiB, "requested_size": 12 * MiB, "state": "active_allocated",
                  "frames": BWD_STACK},
                 {"address": base + 12 * MiB, "size": 4 * MiB, "requested_size": 0, "state": "inactive",
                  "frames": []},
                 {"address": base + 16 * MiB, "size": 8 * MiB, "requested_size": 8 * MiB,
                  "state": "active_allocated", "frames": FWD_STACK},
                 {"address": base + 24 * MiB, "size": 4 * MiB, "requested_size": 4 * MiB,
                  "state": "active_allocated", "frames": BWD_STACK},
                 {"address": base + 28 * MiB, "size": 36 * MiB, "requested_size": 0, "state": "inactive",
                  "frames": []},
             ]},
        ],
        "device_traces": [trace],
        "external_annotations": [],
    }


def npu_segments():
    """Ascend NPU (torch_npu.npu.memory._snapshot, history never recorded): CUDA's segment format,
    the blocks' frames in torch_npu's Python package, which patches Module.to."""
    base = 0x12C000000000
    npu_to = [frame("to", "/usr/local/python3.10/lib/python3.10/site-packages/torch_npu/utils/_module.py", 120),
              TRAIN]
    return {
        "segments": [
            {"device": 0, "address": base, "total_size": 20 * MiB, "allocated_size": 16 * MiB,
             "active_size": 16 * MiB, "requested_size": 16 * MiB, "stream": 0, "segment_type": "large",
             "frames": npu_to,
             "blocks": [
                 {"address": base, "size": 16 * MiB, "requested_size": 16 * MiB, "state": "active_allocated",
                  "frames": npu_to},
                 {"address": base + 16 * MiB, "size": 4 * MiB, "requested_size": 0, "state": "inactive",
                  "frames": []},
             ]},
        ],
        "device_traces": [[]],
    }


def xpu_traces():
    """Intel XPU (torch.xpu.memory._snapshot, stacks="all"): the C++ frames name XPU's caching
    allocator; the stream is the SYCL queue's pointer."""
    base = 0xFF0000000000
    queue = 0x55D1C0FFEE00
    xpu_alloc = frame("c10::xpu::XPUCachingAllocator::NativeCachingAllocator::malloc(signed char, unsigned long)",
                      "??", 0)
    stack = [xpu_alloc, FORWARD, TRAIN]
    return {
        "segments": [
            {"device": 0, "address": base, "total_size": 8 * MiB, "allocated_size": 4 * MiB,
             "active_size": 4 * MiB, "requested_size": 4 * MiB, "stream": queue, "segment_type": "large",
             "frames": stack,
             "blocks": [
                 {"address": base, "size": 4 * MiB, "requested_size": 4 * MiB, "state": "active_allocated",
                  "frames": stack},
                 {"address": base + 4 * MiB, "size": 4 * MiB, "requested_size": 0, "state": "inactive",
                  "frames": []},
             ]},
        ],
        "device_traces": [[
            {"action": "segment_alloc", "addr": base, "size": 8 * MiB, "stream": queue,
             "time_us": 1780000000000000, "frames": stack},
            {"action": "alloc", "addr": base, "size": 4 * MiB, "stream": queue, "time_us": 1780000000000010,
             "frames": stack},
        ]],
    }


def write(name, data):
    with open(os.path.join(HERE, name), "wb") as f:
        f.write(data)


def memory_viz_html(buffer):
    # The same embedding torch/cuda/_memory_viz.py uses (_format_viz): NUL-padded to a multiple of 3.
    buffer += b"\x00" * (3 - len(buffer) % 3)
    files = json.dumps([{"name": "snapshot.pickle", "base64": base64.b64encode(buffer).decode("utf-8")}])
    return ("\n<!DOCTYPE html>\n<html>\n<head>\n</head>\n<body>\n<script type=\"module\">\n"
            "import {add_local_files} from \"https://cdn.jsdelivr.net/gh/pytorch/pytorch@main/torch/utils/viz/MemoryViz.js\"\n"
            "const local_files = " + files + "\nadd_local_files(local_files, 'Active Memory Timeline')\n"
            "</script>\n</body>\n").encode("utf-8")


def torch_zip(buffer, deflate):
    out = io.BytesIO()
    method = zipfile.ZIP_DEFLATED if deflate else zipfile.ZIP_STORED
    with zipfile.ZipFile(out, "w", compression=method) as z:
        for name, data in (("archive/data.pkl", buffer), ("archive/byteorder", b"little"), ("archive/version", b"3\n")):
            info = zipfile.ZipInfo(name, date_time=(2024, 1, 1, 0, 0, 0))
            info.compress_type = method
            z.writestr(info, data)
    return out.getvalue()


def main():
    write("era_segment_list.pickle", pickle.dumps(segment_list_era(), protocol=2))
    write("era_history.pickle", pickle.dumps(history_era(), protocol=2))
    write("era_traces.pickle", pickle.dumps(traces_era(), protocol=4))
    newest = newest_era()
    for protocol in range(0, 6):
        write("newest_p%d.pickle" % protocol, pickle.dumps(copy.deepcopy(newest), protocol=protocol))
    buffer = pickle.dumps(newest, protocol=4)
    write("newest.pickle.gz", gzip.compress(buffer, mtime=0))
    write("newest_stored.zip", torch_zip(pickle.dumps(newest, protocol=2), deflate=False))
    write("newest_deflated.zip", torch_zip(pickle.dumps(newest, protocol=2), deflate=True))
    write("newest.json", json.dumps(newest, indent=1).encode("utf-8"))
    write("newest_memory_viz.html", memory_viz_html(buffer))
    write("annotated_tensors.pickle", pickle.dumps(annotated_era(), protocol=4))
    write("npu_segments.pickle", pickle.dumps(npu_segments(), protocol=4))
    write("xpu_traces.pickle", pickle.dumps(xpu_traces(), protocol=4))


if __name__ == "__main__":
    main()
