#!/usr/bin/env python3
"""Writes the truncated-history, segments-only and card-reconciliation test data next to this script,
in the shapes PyTorch's allocator writes (standard library only):

  wrapped.pickle     a 2.x snapshot whose ring buffer wrapped: its first entries free two blocks
                     allocated before the trace (2 ghost frees, 192 MiB), one block alive since before
                     the trace is never touched (256 MiB), three allocations are inside the trace
  state_only.pickle  segments with stacks and an empty device trace: history recorded with
                     enabled='state' (or a dump without traces) - the allocator map, no timeline
  card_oom.txt       a PyTorch 2.2+ OOM message naming this process and one other, with nvidia-smi
                     taken at the failure: allocator, process and card figures to reconcile

Deterministic: running it again rewrites identical files.
"""

import os
import pickle

HERE = os.path.dirname(os.path.abspath(__file__))
MIB = 1 << 20
GIB = 1 << 30
BASE = 0x7F0000000000


def frames(name, line, filename="/home/user/train.py"):
    return [{"filename": filename, "line": line, "name": name}]


LOAD = frames("load_model", 30)
FORWARD = frames("forward", 61)
BACKWARD = frames("_engine_run_backward", 768, "/site-packages/torch/autograd/graph.py")


def block(address, size, state, stack):
    return {"address": address, "size": size, "requested_size": size if state != "inactive" else 0,
            "state": state, "frames": stack if state != "inactive" else []}


def segment(address, total, blocks, stack):
    live = sum(b["size"] for b in blocks if b["state"] != "inactive")
    return {"device": 0, "address": address, "total_size": total, "allocated_size": live, "active_size": live,
            "requested_size": live, "stream": 0, "segment_type": "large", "segment_pool_id": (0, 0),
            "is_expandable": False, "frames": stack, "blocks": blocks}


def entry(action, addr, size, time_us, stack):
    return {"action": action, "addr": addr, "size": size, "stream": 0, "time_us": time_us, "frames": stack}


def wrapped():
    weights, ghost1, ghost2 = BASE, BASE + 256 * MIB, BASE + 384 * MIB
    x, y, z = BASE + 256 * MIB, BASE + 384 * MIB, BASE + 448 * MIB
    trace = [
        # The ring buffer begins here: two frees whose allocations it no longer holds.
        entry("free_requested", ghost1, 128 * MIB, 1000, BACKWARD),
        entry("free_completed", ghost1, 128 * MIB, 1001, BACKWARD),
        entry("free_requested", ghost2, 64 * MIB, 1002, BACKWARD),
        entry("free_completed", ghost2, 64 * MIB, 1003, BACKWARD),
        entry("alloc", x, 100 * MIB, 2000, FORWARD),
        entry("alloc", y, 50 * MIB, 2001, FORWARD),
        entry("free_requested", x, 100 * MIB, 2002, BACKWARD),
        entry("free_completed", x, 100 * MIB, 2003, BACKWARD),
        entry("alloc", z, 200 * MIB, 2004, FORWARD),
    ]
    blocks = [
        block(weights, 256 * MIB, "active_allocated", LOAD),  # alive since before the trace, never touched
        block(BASE + 256 * MIB, 128 * MIB, "inactive", []),
        block(y, 50 * MIB, "active_allocated", FORWARD),
        block(BASE + 434 * MIB, 14 * MIB, "inactive", []),
        block(z, 200 * MIB, "active_allocated", FORWARD),
        block(BASE + 648 * MIB, 376 * MIB, "inactive", []),
    ]
    return {"segments": [segment(BASE, GIB, blocks, LOAD)], "device_traces": [trace]}


def state_only():
    second = BASE + GIB
    return {
        "segments": [
            segment(BASE, GIB, [block(BASE, 768 * MIB, "active_allocated", LOAD),
                                block(BASE + 768 * MIB, 256 * MIB, "inactive", [])], LOAD),
            segment(second, 512 * MIB, [block(second, 320 * MIB, "active_allocated", FORWARD),
                                        block(second + 320 * MIB, 192 * MIB, "inactive", [])], FORWARD),
        ],
        "device_traces": [[]],
    }


CARD_OOM = """Traceback (most recent call last):
  File "/home/user/train.py", line 88, in <module>
    loss.backward()
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total capacity of 23.69 GiB of which 256.00 MiB is free. Process 4242 has 2.50 GiB memory in use. Including non-PyTorch memory, this process has 20.75 GiB memory in use. Of the allocated memory 18.00 GiB is allocated by PyTorch, and 1.25 GiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)

$ nvidia-smi
Tue Nov 24 02:15:00 2026
+---------------------------------------------------------------------------------------+
| NVIDIA-SMI 535.104.05             Driver Version: 535.104.05   CUDA Version: 12.2     |
|-----------------------------------------+----------------------+----------------------+
| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |
| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |
|                                         |                      |               MIG M. |
|=========================================+======================+======================|
|   0  NVIDIA GeForce RTX 3090        Off | 00000000:01:00.0 Off |                  N/A |
| 51%   60C    P2             280W / 350W |  24003MiB / 24576MiB |     97%      Default |
|                                         |                      |                  N/A |
+-----------------------------------------+----------------------+----------------------+

+---------------------------------------------------------------------------------------+
| Processes:                                                                            |
|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |
|        ID   ID                                                             Usage      |
|=======================================================================================|
|    0   N/A  N/A      4242      C   python3 serve.py                           2560MiB |
|    0   N/A  N/A     31337      C   python3 train.py                          21248MiB |
+---------------------------------------------------------------------------------------+
"""


def write_pickle(name, value):
    with open(os.path.join(HERE, name), "wb") as out:
        pickle.dump(value, out, protocol=4)


def main():
    write_pickle("wrapped.pickle", wrapped())
    write_pickle("state_only.pickle", state_only())
    with open(os.path.join(HERE, "card_oom.txt"), "w", encoding="utf-8") as out:
        out.write(CARD_OOM)


if __name__ == "__main__":
    main()
