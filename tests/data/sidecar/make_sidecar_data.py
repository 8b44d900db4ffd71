#!/usr/bin/env python3
"""Writes the capture-sidecar test data next to this script, as oomlens_capture would:

  capture.pickle         a small PyTorch 2.x snapshot of a run that died in backward (one oom event)
  capture.oomlens.json   its sidecar: card, nvidia-smi, versions, alloc conf, rank, the exception
  embedded.pickle        the same snapshot with the sidecar in its trace entries' user_metadata
                         (torch.cuda.memory._set_memory_metadata(json.dumps(sidecar)))

Deterministic: running it again rewrites identical files.
"""

import json
import os
import pickle

HERE = os.path.dirname(os.path.abspath(__file__))
GIB = 1 << 30
MIB = 1 << 20

NVIDIA_SMI = """Tue Nov 24 02:15:00 2026
+---------------------------------------------------------------------------------------+
| NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     |
|-----------------------------------------+----------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |
|                                         |                      |               MIG M. |
|=========================================+======================+======================|
|   0  NVIDIA GeForce RTX 3090        Off | 00000000:01:00.0 Off |                  N/A |
| 51%   60C    P2             280W / 350W |  23010MiB / 24576MiB |     97%      Default |
|                                         |                      |                  N/A |
+-----------------------------------------+----------------------+----------------------+

+---------------------------------------------------------------------------------------+
| Processes:                                                                            |
|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |
|        ID   ID                                                             Usage      |
|=======================================================================================|
|    0   N/A  N/A     28690      C   ...abcdef/venv/bin/python3.10             22990MiB |
+---------------------------------------------------------------------------------------+
"""

EXCEPTION = """Traceback (most recent call last):
  File "/home/user/train.py", line 88, in <module>
    loss.backward()
  File "/usr/lib/python3.10/site-packages/torch/_tensor.py", line 581, in backward
    torch.autograd.backward(
  File "/usr/lib/python3.10/site-packages/torch/autograd/__init__.py", line 347, in backward
    _engine_run_backward(
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.69 GiB of which 1.20 GiB is free. Including non-PyTorch memory, this process has 22.47 GiB memory in use. Of the allocated memory 21.50 GiB is allocated by PyTorch, and 512.00 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)
"""

SIDECAR = {
    "format": "oomlens-capture/1",
    "snapshot": "capture.pickle",
    "device": 0,
    "device_name": "NVIDIA GeForce RTX 3090",
    "total_memory_bytes": 25438126080,
    "nvidia_smi": NVIDIA_SMI,
    "torch_version": "2.7.1+cu126",
    "cuda_version": "12.6",
    "alloc_conf": "max_split_size_mb:512,garbage_collection_threshold:0.8",
    "rank": 1,
    "world_size": 4,
    "exception": EXCEPTION,
    "oom": {"device": 0, "requested_bytes": 2 * GIB, "device_allocated_bytes": 43 * GIB // 2, "device_free_bytes": 1288490188},
    "step": 12,
    "hostname": "node17",
    "pid": 28690,
    "time": "2026-11-24T02:15:00+0000",
}


def frames(name, line):
    return [{"filename": "/home/user/train.py", "line": line, "name": name}]


def snapshot(user_metadata=None):
    base_a, base_b = 0x7F0000000000, 0x7F0600000000
    weights = frames("load_model", 30)
    acts = frames("forward", 61)
    segments = [
        {
            "device": 0, "address": base_a, "total_size": 20 * GIB, "allocated_size": 20 * GIB,
            "active_size": 20 * GIB, "requested_size": 20 * GIB, "stream": 0, "segment_type": "large",
            "segment_pool_id": (0, 0), "is_expandable": False, "frames": weights,
            "blocks": [{"address": base_a, "size": 20 * GIB, "requested_size": 20 * GIB,
                        "state": "active_allocated", "frames": weights}],
        },
        {
            "device": 0, "address": base_b, "total_size": 2 * GIB, "allocated_size": 1536 * MIB,
            "active_size": 1536 * MIB, "requested_size": 1536 * MIB, "stream": 0, "segment_type": "large",
            "segment_pool_id": (0, 0), "is_expandable": False, "frames": acts,
            "blocks": [
                {"address": base_b, "size": 1536 * MIB, "requested_size": 1536 * MIB, "state": "active_allocated",
                 "frames": acts},
                {"address": base_b + 1536 * MIB, "size": 512 * MIB, "requested_size": 0, "state": "inactive",
                 "frames": []},
            ],
        },
    ]
    trace = [
        {"action": "segment_alloc", "addr": base_a, "size": 20 * GIB, "stream": 0, "time_us": 1000, "frames": weights},
        {"action": "alloc", "addr": base_a, "size": 20 * GIB, "stream": 0, "time_us": 1001, "frames": weights},
        {"action": "segment_alloc", "addr": base_b, "size": 2 * GIB, "stream": 0, "time_us": 2000, "frames": acts},
        {"action": "alloc", "addr": base_b, "size": 1536 * MIB, "stream": 0, "time_us": 2001, "frames": acts},
        {"action": "oom", "addr": 0, "size": 2 * GIB, "stream": 0, "time_us": 3000, "device_free": 1288490188,
         "frames": frames("backward", 88)},
    ]
    if user_metadata is not None:
        for entry in trace:
            entry["user_metadata"] = user_metadata
    return {
        "segments": segments,
        "device_traces": [trace],
        "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": SIDECAR["alloc_conf"], "max_split_size": 512 * MIB,
                               "garbage_collection_threshold": 0.8, "expandable_segments": False,
                               "release_lock_on_cudamalloc": False, "pinned_use_host_register": False,
                               "pinned_num_register_threads": 1, "roundup_power2_divisions": []},
    }


def write_pickle(name, value):
    with open(os.path.join(HERE, name), "wb") as out:
        pickle.dump(value, out, protocol=4)


def main():
    write_pickle("capture.pickle", snapshot())
    with open(os.path.join(HERE, "capture.oomlens.json"), "w", encoding="utf-8") as out:
        json.dump(SIDECAR, out, indent=1)
        out.write("\n")
    embedded = dict(SIDECAR, snapshot="embedded.pickle", device_name="NVIDIA GeForce RTX 3090 (embedded)")
    write_pickle("embedded.pickle", snapshot(user_metadata=json.dumps(embedded)))


if __name__ == "__main__":
    main()
