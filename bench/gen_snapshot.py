#!/usr/bin/env python3
"""Generate a large, realistic memory snapshot pickle for the benchmarks.

    python3 bench/gen_snapshot.py --events 1000000 --out /tmp/snap_1m.pickle [--seed 1] [--devices 1]
                                  [--protocol N] [--expandable] [--oom] [--compiled]

It replays a GPT-2-small-like training run (tests/tools/trainsim.py) against the caching-allocator emulation
(tests/tools/allocsim.py) on an 80 GiB card, records mixed C++/CPython/Python stacks (stacks="all") for every
event, and writes the snapshot in the PyTorch 2.8+ layout: segments, device_traces, allocator_settings,
external_annotations. Like PyTorch's builder it shares frame dicts and frame lists between entries (an `alloc`,
the `segment_alloc` it caused and the block it owns; a `free_requested` and its `free_completed`), so the
pickler memoizes them.

The trace is streamed: the pickle opcodes of the trace list are written as the replay runs, so memory stays
flat at any size. The replay runs twice with the same seed: once to learn the allocator state at dump time
(the segments come first in the file), once to write the trace.
"""

import argparse
import os
import pickle
import random
import struct
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "tests", "tools"))

import allocsim  # noqa: E402
import trainsim  # noqa: E402
from allocsim import GiB  # noqa: E402

BATCH = 1000            # the pickler's APPENDS/SETITEMS batch size
FRAME_TARGET = 64 * 1024


class BlockFrames:
    """Stands for a live block's frame list while the segments are written: the same list object is referenced
    again by the block's `alloc` trace entry. `seq` is (device, allocation number)."""

    __slots__ = ("seq", "stack")

    def __init__(self, seq, stack):
        self.seq = seq
        self.stack = stack


class PickleStream:
    """Writes pickle opcodes the way CPython's C pickler does for dicts, lists, str, int, float, bool, None and
    tuples (memo by object identity, batches of 1000, framing for protocol 4+)."""

    def __init__(self, f, protocol):
        self.f = f
        self.protocol = protocol
        self.buf = bytearray()
        self.memo = {}
        self.keep = []
        self.n = 0
        self.seq_memo = {}

    def start(self):
        self.f.write(b"\x80" + bytes([self.protocol]))

    def boundary(self):
        if len(self.buf) >= FRAME_TARGET:
            self.flush()

    def flush(self):
        if not self.buf:
            return
        if self.protocol >= 4:
            self.f.write(b"\x95" + struct.pack("<Q", len(self.buf)))
        self.f.write(self.buf)
        self.buf = bytearray()

    def finish(self):
        self.buf += b"."
        self.flush()

    def put(self):
        i = self.n
        self.n += 1
        if self.protocol >= 4:
            self.buf += b"\x94"
        elif i < 256:
            self.buf += b"q" + bytes([i])
        else:
            self.buf += b"r" + struct.pack("<I", i)
        return i

    @staticmethod
    def get_bytes(i):
        return (b"h" + bytes([i])) if i < 256 else (b"j" + struct.pack("<I", i))

    def memoize(self, obj):
        self.memo[id(obj)] = self.put()
        self.keep.append(obj)

    @staticmethod
    def int_bytes(x):
        if 0 <= x < 256:
            return b"K" + bytes([x])
        if 0 <= x < 65536:
            return b"M" + struct.pack("<H", x)
        if -0x80000000 <= x < 0x80000000:
            return b"J" + struct.pack("<i", x)
        data = x.to_bytes((x.bit_length() >> 3) + 1, "little", signed=True)
        return b"\x8a" + bytes([len(data)]) + data

    def save(self, obj):
        buf = self.buf
        i = self.memo.get(id(obj))
        if i is not None:
            buf += self.get_bytes(i)
            return
        t = type(obj)
        if obj is None:
            buf += b"N"
        elif t is bool:
            buf += b"\x88" if obj else b"\x89"
        elif t is int:
            buf += self.int_bytes(obj)
        elif t is float:
            buf += b"G" + struct.pack(">d", obj)
        elif t is str:
            data = obj.encode("utf-8", "surrogatepass")
            if self.protocol >= 4 and len(data) < 256:
                buf += b"\x8c" + bytes([len(data)]) + data
            else:
                buf += b"X" + struct.pack("<I", len(data)) + data
            self.memoize(obj)
        elif t is tuple:
            if not obj:
                buf += b")"
                return
            for x in obj:
                self.save(x)
            self.buf += (b"\x85", b"\x86", b"\x87")[len(obj) - 1] if len(obj) <= 3 else b"t"
            self.memoize(obj)
        elif t is list:
            buf += b"]"
            self.memoize(obj)
            self._items(obj, False)
        elif t is dict:
            buf += b"}"
            self.memoize(obj)
            self._items(list(obj.items()), True)
        elif t is BlockFrames:
            buf += b"]"
            self.seq_memo[obj.seq] = self.put()
            self._items(obj.stack, False)
        else:
            raise TypeError("cannot stream %r" % t)

    def _items(self, items, pairs):
        if not items:
            return
        if len(items) == 1:
            self._save_item(items[0], pairs)
            self.buf += b"s" if pairs else b"a"
            return
        for start in range(0, len(items), BATCH):
            self.buf += b"("
            for item in items[start:start + BATCH]:
                self._save_item(item, pairs)
            self.buf += b"u" if pairs else b"e"

    def _save_item(self, item, pairs):
        if pairs:
            self.save(item[0])
            self.save(item[1])
        else:
            self.save(item)


# With --compiled the model's forward runs under torch.compile: its allocations come from the code
# Inductor generated (a frame of /tmp/torchinductor_<user>/xx/c<51 base32>.py innermost among the
# Python frames, above the model line, as PyTorch 2.11 records it) and carry the region's compile_context.
COMPILED_REGION = "Torch-Compiled Region: 0/0"
GENERATED_CODE = ("call", "/tmp/torchinductor_user/jc/cjcrqdmhagpkj2r7lluc5u5af3nvtnjlsz7kdj76tfskfulfr2uo.py", 1202)


class CompiledStacks(trainsim.Stacks):
    """Stacks whose forward allocations come from Inductor's output code (see COMPILED_REGION)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.compiled = set()  # id() of the stacks of compiled-region allocations

    def stack(self, sites, op=None, kind="alloc", backward=None):
        s = super().stack(sites, op, kind, backward)
        if kind != "alloc" or backward is not None or not any(site.name == "forward" for site in sites):
            return s
        key = ("compiled", sites, op)
        c = self._stacks.get(key)
        if c is None:
            python = next((i for i, f in enumerate(s) if f["filename"].endswith(".py")), len(s))
            c = self._stacks[key] = s[:python] + (self.frame(*GENERATED_CODE),) + s[python:]
            self.compiled.add(id(c))
        return c


class TraceWriter:
    """The sink of the second replay: writes each trace entry straight into the pickle stream."""

    def __init__(self, stream, clock, allocator_ref, compiled=frozenset()):
        self.p = stream
        self.compiled = compiled
        self.clock = clock
        self.allocator_ref = allocator_ref
        self.count = 0
        self.in_batch = 0
        self.total = 0
        self.last_ctx = None
        self.last_list = -1
        self.bodies = {}
        self.k = {}
        self.v = {}

    def expect(self, total):
        """The number of entries this list will hold (known from the first replay): it decides the batching."""
        self.total = total

    def _key(self, name):
        b = self.k.get(name)
        if b is None:
            self.p.save(name)
            self.k[name] = self.p.get_bytes(self.p.memo[id(name)])
            return
        self.p.buf += b

    def _str(self, value):
        b = self.v.get(value)
        if b is None:
            self.p.save(value)
            self.v[value] = self.p.get_bytes(self.p.memo[id(value)])
            return
        self.p.buf += b

    def _frames(self, ctx, action):
        p = self.p
        if ctx is self.last_ctx:
            p.buf += p.get_bytes(self.last_list)
            return
        alloc = self.allocator_ref()
        seq = None
        if action == "alloc":
            seq = (alloc.device, alloc.alloc_seq - 1)
        elif action in ("segment_alloc", "segment_map"):
            seq = (alloc.device, alloc.alloc_seq)
        i = p.seq_memo.pop(seq, None) if seq is not None else None
        if i is not None:
            p.buf += p.get_bytes(i)
        else:
            p.buf += b"]"
            i = p.put()
            stack = ctx.stack
            body = self.bodies.get(id(stack))
            if body is None:
                # once every frame of a stack is memoized its list body is a fixed run of GETs
                start, memo_before = len(p.buf), p.n
                p._items(stack, False)
                if p.n == memo_before:
                    self.bodies[id(stack)] = (stack, bytes(p.buf[start:]))
            else:
                p.buf += body[1]
        self.last_ctx = ctx
        self.last_list = i

    def record(self, action, addr, size, stream, ctx, device_free=None):
        p = self.p
        t = self.clock.tick(1, 3)
        if self.total > 1 and self.in_batch == 0:
            p.buf += b"("
        p.buf += b"}"
        p.put()
        p.buf += b"("
        self._key("action")
        self._str(action)
        if action == "oom":
            self._key("device_free")
            p.buf += p.int_bytes(device_free)
        else:
            self._key("addr")
            p.buf += p.int_bytes(addr)
        self._key("size")
        p.buf += p.int_bytes(size)
        self._key("stream")
        p.buf += p.int_bytes(stream)
        self._key("time_us")
        p.buf += p.int_bytes(t)
        self._key("compile_context")
        self._str(COMPILED_REGION if ctx is not None and id(ctx.stack) in self.compiled else "N/A")
        self._key("user_metadata")
        self._str("")
        if ctx is not None:
            self._key("frames")
            self._frames(ctx, action)
        else:
            self.last_ctx = None
        p.buf += b"u"
        self.count += 1
        self.in_batch += 1
        if self.total == 1:
            p.buf += b"a"
        elif self.in_batch == BATCH or self.count == self.total:
            p.buf += b"e"
            self.in_batch = 0
        p.boundary()


class Counter:
    """The sink of the first replay: counts entries and keeps the clock in step with the second replay."""

    def __init__(self, clock):
        self.clock = clock
        self.count = 0

    def record(self, action, addr, size, stream, ctx, device_free=None):
        self.clock.tick(1, 3)
        self.count += 1


GPT2_SMALL = dict(vocab=50304, d=768, layers=12, heads=12, batch=8)
CAPACITY = 80 * GiB


def replay(sink_factory, stacks, seed, device, steps=None, events=None, expandable=False, oom=False):
    """Runs the training loop on one device until `steps` steps are done or `events` events were recorded;
    with `oom`, the run then dies on a request of twice the card from the last allocation's code."""
    clock = trainsim.Clock(seed * 7919 + device)
    holder = {}
    sink = sink_factory(clock, lambda: holder["a"])
    allocator = allocsim.CachingAllocator(sink, CAPACITY, 512 << 20, expandable=expandable, device=device)
    holder["a"] = allocator
    trainer = trainsim.Trainer(allocator, stacks, clock, trainsim.Config(**GPT2_SMALL))
    rng = random.Random(seed * 31 + device)
    trainer.load()
    done = 0
    while (steps is not None and done < steps) or (events is not None and sink.count < events):
        trainer.train_step(rng.choice((512, 640, 768, 896, 1024)))
        done += 1
    if oom:
        try:
            trainer.alloc(2 * CAPACITY, trainer.last_sites, "linear")
        except allocsim.OutOfMemory:
            pass
    trainer.set_phase(trainer.phase)
    return allocator, trainer, sink, done


def generate(out, events, seed, devices, protocol, expandable=False, oom=False, compiled=False):
    kind = CompiledStacks if compiled else trainsim.Stacks
    stacks = kind(cpp=True, outer=trainsim.RUNPY, chain=trainsim.TRAIN_CHAIN)
    per_device = max(1, events // devices)
    plans = []
    for dev in range(devices):
        allocator, trainer, sink, steps = replay(lambda c, a: Counter(c), stacks, seed, dev, events=per_device,
                                               expandable=expandable, oom=oom)
        plans.append((allocator, trainer, sink.count, steps))
    with open(out, "wb") as f:
        p = PickleStream(f, protocol)
        p.start()
        p.buf += b"}"
        p.put()
        p.buf += b"("
        p.save("segments")
        segments = []
        for allocator, _, _, _ in plans:
            device = allocator.device
            segments += allocator.snapshot_segments(lambda b: BlockFrames((device, b.seq), b.ctx.stack))
        p.save(segments)
        del segments
        p.save("device_traces")
        p.buf += b"]"
        p.put()
        if devices > 1:
            p.buf += b"("
        annotations = []
        for dev, (_, _, count, steps) in enumerate(plans):
            p.buf += b"]"
            p.put()
            writers = []

            def factory(clock, allocator_ref):
                w = TraceWriter(p, clock, allocator_ref, getattr(stacks, "compiled", frozenset()))
                w.expect(count)
                writers.append(w)
                return w
            _, trainer, w, _ = replay(factory, stacks, seed, dev, steps=steps, expandable=expandable, oom=oom)
            if w.count != count:
                raise SystemExit("replay diverged on device %d: %d events, expected %d" % (dev, w.count, count))
            annotations += trainer.annotations
            p.boundary()
        p.buf += b"e" if devices > 1 else b"a"
        p.save("allocator_settings")
        p.save({"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True" if expandable else "", "max_split_size": -1,
                "garbage_collection_threshold": 0.0, "expandable_segments": expandable,
                "pinned_num_register_threads": 1, "release_lock_on_cudamalloc": False,
                "pinned_use_cuda_host_register": False, "graph_capture_record_stream_reuse": False,
                "roundup_power2_divisions": {str(1 << k): 0 for k in range(16)}})
        p.save("external_annotations")
        p.save(annotations)
        p.buf += b"u"
        p.finish()
    return sum(c for _, _, c, _ in plans)


def main():
    ap = argparse.ArgumentParser(description=__doc__.strip().splitlines()[0])
    ap.add_argument("--events", type=int, required=True, help="trace entries in total (all devices)")
    ap.add_argument("--out", required=True, help="output .pickle path")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--devices", type=int, default=1)
    ap.add_argument("--expandable", action="store_true",
                    help="emulate PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True (segment_map events)")
    ap.add_argument("--oom", action="store_true",
                    help="end each device's trace with an oom event (the run dies on a request of twice the card)")
    ap.add_argument("--compiled", action="store_true",
                    help="the model's forward runs under torch.compile (Inductor frames, compile_context)")
    ap.add_argument("--protocol", type=int, default=None,
                    help="pickle protocol 2-5 (default: this Python's pickle.DEFAULT_PROTOCOL)")
    args = ap.parse_args()
    protocol = pickle.DEFAULT_PROTOCOL if args.protocol is None else args.protocol
    if not 2 <= protocol <= 5 or args.events < 1 or args.devices < 1:
        ap.error("need --events >= 1, --devices >= 1 and --protocol 2..5")
    t0 = time.time()
    n = generate(args.out, args.events, args.seed, args.devices, protocol, args.expandable, args.oom,
                 args.compiled)
    size = os.path.getsize(args.out)
    print("%s: %d events, %d bytes (%.1f bytes/event), protocol %d, %.1f s" % (
        args.out, n, size, size / n, protocol, time.time() - t0))
    return 0


if __name__ == "__main__":
    sys.exit(main())
