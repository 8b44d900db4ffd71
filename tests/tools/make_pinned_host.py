#!/usr/bin/env python3
"""Generate a snapshot with pinned host memory, without a GPU and without torch.

    python3 tests/tools/make_pinned_host.py OUTDIR

Replays the optimizer_step2 scenario (make_scenarios.py: step 1 fits, the forward pass of step 2 does not) and
adds what PyTorch 2.14+ writes with _record_memory_history(record_pinned_host_memory=True): `host_segments` and
`host_traces`, recorded by the CachingHostAllocator with the CUDA allocator's profiling code (pytorch#182407).
Their shapes follow it: host_segments is a list of segment dicts (one block each: the host allocator never
splits a block), host_traces one list of trace entries (one allocator, not one per device).

The host side is a DataLoader with pin_memory=True and prefetch: every step pins the next batch (rounded up to a
power of two, reused from the allocator's free list when a block of that size is cached, else a new
cudaHostAlloc'd segment), copies it with non_blocking=True and frees it once the copy's event completed
(free_requested, then free_completed); a staging buffer pinned at load stays. Writes:

    pinned_host.pickle   the snapshot (pickle protocol 4, deterministic)
    pinned_host.json     the truth: the device's figures without the host keys and the host's own
"""

import json
import os
import pickle
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import make_scenarios  # noqa: E402
from allocsim import MiB  # noqa: E402

HOST_BASE = 0x7ee000000000
PIN_FRAMES = [{"filename": "torch/utils/data/_utils/pin_memory.py", "name": "pin_memory", "line": 73},
              {"filename": "torch/utils/data/_utils/pin_memory.py", "name": "_pin_memory_loop", "line": 52},
              {"filename": "threading.py", "name": "run", "line": 1012}]
STAGING_FRAMES = [{"filename": "train.py", "name": "make_staging_buffer", "line": 41},
                  {"filename": "train.py", "name": "main", "line": 118}]


def pow2(n):
    p = 1
    while p < n:
        p *= 2
    return p


class PinnedHostAllocator:
    """CachingHostAllocatorImpl in miniature: power-of-two blocks, one per segment, a free list per size."""

    def __init__(self):
        self.trace = []
        self.segments = {}      # addr -> {"size", "requested", "live", "frames"}
        self.free = {}          # size -> [addr]
        self.next_addr = HOST_BASE

    def entry(self, action, addr, size, time_us, frames):
        self.trace.append({"action": action, "addr": addr, "size": size, "stream": 0, "time_us": time_us,
                           "frames": frames})

    def malloc(self, nbytes, time_us, frames):
        size = pow2(nbytes)
        cached = self.free.get(size)
        if cached:
            addr = cached.pop(0)
        else:
            addr = self.next_addr
            self.next_addr += size
            self.segments[addr] = {"size": size}
            self.entry("segment_alloc", addr, size, time_us, frames)
        self.segments[addr].update(requested=nbytes, live=True, frames=frames)
        self.entry("alloc", addr, size, time_us + 1, frames)
        return addr

    def free_block(self, addr, requested_us, completed_us):
        seg = self.segments[addr]
        self.entry("free_requested", addr, seg["size"], requested_us, seg["frames"])
        self.entry("free_completed", addr, seg["size"], completed_us, seg["frames"])
        seg["live"] = False
        self.free.setdefault(seg["size"], []).append(addr)

    def snapshot_segments(self):
        out = []
        for addr in sorted(self.segments):
            seg = self.segments[addr]
            live = seg.get("live", False)
            frames = seg.get("frames", [])
            out.append({"device": -1, "address": addr, "total_size": seg["size"],
                        "allocated_size": seg["size"] if live else 0, "active_size": seg["size"] if live else 0,
                        "requested_size": seg["requested"] if live else 0, "stream": 0, "segment_type": "large",
                        "segment_pool_id": (0, 0), "is_expandable": False, "frames": frames,
                        "blocks": [{"address": addr, "size": seg["size"],
                                    "requested_size": seg["requested"] if live else 0,
                                    "state": "active_allocated" if live else "inactive",
                                    "frames": frames if live else []}]})
        return out


def batch_bytes(step):
    # token ids and labels of a batch, plus the DataLoader's per-sample tensors; step 2's batch is the long one
    return (40 if step != 2 else 90) * MiB + 123456


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__)
        return 0 if len(argv) == 2 else 2
    outdir = argv[1]
    spec = make_scenarios.scenario_table()["optimizer_step2"]
    program = spec["program"]
    phase, step = spec["expect"]
    runner = make_scenarios.runner_for(spec, program)
    capacity = make_scenarios.search_capacity(program, (step, make_scenarios.PHASE_RANK[phase]), spec["cpp"],
                                              spec.get("position", 0.5), lo=spec.get("lo", 512 * MiB), runner=runner)
    run = runner(capacity)
    assert run.oom is not None and (run.trainer.phase, run.trainer.step) == spec["expect"]
    snapshot = run.snapshot()
    device_trace = snapshot["device_traces"][0]
    device_reserved = sum(s["total_size"] for s in snapshot["segments"])
    device_allocated = sum(s["allocated_size"] for s in snapshot["segments"])

    starts = [a["time_us"] for a in run.trainer.annotations if a["stage"] == "START"
              and a["name"].startswith("ProfilerStep#")]
    host = PinnedHostAllocator()
    first = device_trace[0]["time_us"]
    host.malloc(64 * MiB, first - 5000, STAGING_FRAMES)              # kept for the whole run
    pending = [(1, host.malloc(batch_bytes(1), first - 3000, PIN_FRAMES))]   # the first batch, pinned at load
    for i, start in enumerate(starts):
        # prefetch: the next batch is pinned while this step runs; this step's batch is freed once copied
        pending.append((i + 2, host.malloc(batch_bytes(i + 2), start + 200, PIN_FRAMES)))
        _, addr = pending.pop(0)
        host.free_block(addr, start + 900, start + 1400)
    oom_time = next(e["time_us"] for e in device_trace if e["action"] == "oom")
    at_oom = sum(host.segments[a]["size"] for a, s in host.segments.items() if s.get("live"))

    snapshot["host_segments"] = host.snapshot_segments()
    snapshot["host_traces"] = host.trace
    with open(os.path.join(outdir, "pinned_host.pickle"), "wb") as f:
        pickle.dump(snapshot, f, protocol=make_scenarios.PROTOCOL)

    reserved = [0]
    for e in host.trace:
        reserved.append(reserved[-1] + (e["size"] if e["action"] == "segment_alloc" else 0))
    label = {"scenario": "optimizer_step2", "capacity_bytes": capacity, "device_trace_events": len(device_trace),
             "device_segments": len(snapshot["segments"]),
             "device_reserved_bytes": device_reserved, "device_allocated_bytes": device_allocated,
             "host_trace_events": len(host.trace), "host_segments": len(host.segments),
             "host_reserved_bytes": sum(s["size"] for s in host.segments.values()),
             "host_allocated_bytes": sum(s["size"] for s in host.segments.values() if s.get("live")),
             "host_peak_reserved_bytes": max(reserved), "host_allocated_at_oom_bytes": at_oom,
             "oom_time_us": oom_time}
    with open(os.path.join(outdir, "pinned_host.json"), "w") as f:
        json.dump(label, f, indent=1, sort_keys=True)
        f.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
