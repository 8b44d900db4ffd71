#!/usr/bin/env python3
"""Generate scenario snapshots for every OOM diagnosis, without a GPU and without torch.

    python3 tests/tools/make_scenarios.py OUTDIR [scenario ...]

For each scenario it replays a TinyGPT training run (trainsim) against an emulation of PyTorch's caching
allocator (allocsim) on a small card and writes:

    <name>.pickle       the memory snapshot, as torch.cuda.memory._dump_snapshot() writes it (2.8+ keys)
    <name>.oom.txt      the Python traceback and the torch.OutOfMemoryError line (T4 template)
    <name>.summary.txt  torch.cuda.memory_summary() at the failure (or at the end, for healthy)
    <name>.json         the truth label: case, oom, phase, step, capacity_bytes and the numbers behind them

The card capacity of each scenario is searched so that the run fails exactly at the phase and step the
scenario is about, in the middle of the range of capacities that do. Output is deterministic (fixed seeds,
fixed time base, pickle protocol 4) and byte-identical across runs.
"""

import json
import os
import pickle
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import allocsim  # noqa: E402
import trainsim  # noqa: E402
from allocsim import MiB, GiB  # noqa: E402

PROTOCOL = 4
OVERHEAD = 268 * MiB        # CUDA context and cuBLAS workspace: in use by the process, not by the allocator
PHASE_RANK = {"load": 0, "forward": 1, "backward": 2, "optimizer": 3, "eval": 4}


class ListSink:
    """Collects trace entries as the dicts PyTorch 2.8+ builds (key order included)."""

    def __init__(self, clock):
        self.clock = clock
        self.trace = []

    def record(self, action, addr, size, stream, ctx, device_free=None):
        self.clock.tick(1, 3)
        e = {"action": action}
        if action == "oom":
            e["device_free"] = device_free
        else:
            e["addr"] = addr
        e["size"] = size
        e["stream"] = stream
        e["time_us"] = self.clock.now
        e["compile_context"] = "N/A"
        e["user_metadata"] = ""
        if ctx is not None:
            e["frames"] = ctx.frames()
        self.trace.append(e)


def allocator_settings(expandable):
    return {"PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True" if expandable else "",
            "max_split_size": -1, "garbage_collection_threshold": 0.0, "expandable_segments": expandable,
            "pinned_num_register_threads": 1, "release_lock_on_cudamalloc": False,
            "pinned_use_cuda_host_register": False, "graph_capture_record_stream_reuse": False,
            "roundup_power2_divisions": {str(1 << k): 0 for k in range(16)}}


class Run:
    """One replay of a scenario program on a card of `capacity` bytes."""

    def __init__(self, program, capacity, cpp, expandable=False, seed=1):
        self.clock = trainsim.Clock(seed)
        self.sink = ListSink(self.clock)
        self.allocator = allocsim.CachingAllocator(self.sink, capacity, OVERHEAD, expandable)
        self.stacks = trainsim.Stacks(cpp=cpp)
        self.trainer = trainsim.Trainer(self.allocator, self.stacks, self.clock, program.cfg)
        self.oom = None
        self.expandable = expandable
        try:
            program.run(self.trainer)
        except allocsim.OutOfMemory as e:
            self.oom = e.info

    def outcome(self):
        """How far the run got: (step, phase rank, allocation index in the phase), or None when it finished."""
        if self.oom is None:
            return None
        return (self.trainer.step, PHASE_RANK[self.trainer.phase], self.trainer.phase_allocs - 1)

    def snapshot(self):
        return {"segments": self.allocator.snapshot_segments(lambda b: b.ctx.frames()),
                "device_traces": [self.sink.trace],
                "allocator_settings": allocator_settings(self.expandable),
                "external_annotations": []}

    def oom_message(self):
        o = self.oom
        return ("CUDA out of memory. Tried to allocate %s. GPU %d has a total capacity of %s of which %s is free. "
                "Including non-PyTorch memory, this process has %s memory in use. Of the allocated memory %s is "
                "allocated by PyTorch, and %s is reserved by PyTorch but unallocated. If reserved but unallocated "
                "memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
                "fragmentation.  See documentation for Memory Management  "
                "(https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-"
                "alloc-conf)" % (
                    allocsim.format_size(o["alloc_size"]), o["device"], allocsim.format_size(o["capacity"]),
                    allocsim.format_size(o["device_free"]), allocsim.format_size(o["reserved"] + o["overhead"]),
                    allocsim.format_size(o["allocated"]), allocsim.format_size(o["reserved"] - o["allocated"])))

    def traceback(self):
        lines = ["Traceback (most recent call last):"]
        for site in self.trainer.last_sites:
            lines.append('  File "%s", line %d, in %s' % (site.filename, site.line, site.name))
            lines.append("    " + site.code)
        lines.append("torch.OutOfMemoryError: " + self.oom_message())
        return "\n".join(lines) + "\n"


class Program:
    """A training script: config plus what main() does."""

    def __init__(self, cfg, steps=(), retain_graph=False, eval_batches=0, eval_seq=0, accumulate=False):
        self.cfg = cfg
        self.steps = steps
        self.retain_graph = retain_graph
        self.eval_batches = eval_batches
        self.eval_seq = eval_seq
        self.accumulate = accumulate

    def run(self, tr):
        tr.load()
        for seq in self.steps:
            tr.train_step(seq, retain_graph=self.retain_graph)
        if self.eval_batches:
            tr.evaluate(self.eval_batches, self.eval_seq, self.accumulate)
        tr.set_phase(tr.phase)


class FragmentingProgram(Program):
    """A deep forward pass whose layers each need a large transient buffer (attention scores) and then keep a
    smaller activation: every transient gets a fresh segment because no hole is large enough, and the kept
    activation then splits that cached segment. Each layer leaves one unusable hole behind, so reserved memory
    grows much faster than allocated memory until a transient finds neither a hole nor room for a segment."""

    def __init__(self, cfg, layers, transient, kept):
        super().__init__(cfg)
        self.layers = layers
        self.transient = transient
        self.kept = kept

    def run(self, tr):
        tr.load()
        tr.step = 1
        tr.set_phase("forward")
        call = (trainsim.MODULE_MAIN, trainsim.MAIN_FWD, trainsim.WRAPPED_CALL, trainsim.CALL_IMPL,
                trainsim.GPT_BLOCK, trainsim.WRAPPED_CALL, trainsim.CALL_IMPL)
        att = call + (trainsim.BLK_ATTN,)
        lin = call + (trainsim.BLK_MLP, trainsim.WRAPPED_CALL, trainsim.CALL_IMPL, trainsim.LINEAR_FWD)
        for _ in range(self.layers):
            scores = tr.alloc(self.transient, att + (trainsim.ATT_SCORES,), "bmm")
            tr.free(scores, att + (trainsim.ATT_SOFTMAX,))
            tr.alloc(self.kept, lin, "linear")
        tr.set_phase(tr.phase)


def search_capacity(program, target, cpp, position=0.5, lo=512 * MiB, hi=16 * GiB, grain=MiB):
    """A capacity at which the run stops exactly at `target`, a prefix of Run.outcome(): `position` 0.5 is the
    middle of the range of such capacities."""
    def key(cap):
        out = Run(program, cap, cpp).outcome()
        return (1 << 30,) if out is None else out[:len(target)]

    def first(pred):
        a, b = lo, hi
        while b - a > grain:
            m = (a + b) // 2 // grain * grain
            if pred(key(m)):
                b = m
            else:
                a = m
        return b
    low = first(lambda k: k >= target)
    high = first(lambda k: k > target)
    return int(low + (high - low) * position) // grain * grain


def nth_allocation(program, cpp, step, phase, nbytes, n):
    """(step, phase rank, index) of the n-th allocation of at least `nbytes` in that phase of an unconstrained
    run: a target for search_capacity that pins the failing allocation."""
    log = []
    clock = trainsim.Clock(1)
    trainer = trainsim.Trainer(allocsim.CachingAllocator(ListSink(clock), 1 << 40, OVERHEAD), trainsim.Stacks(cpp),
                               clock, program.cfg)
    trainer.log = log
    program.run(trainer)
    hits = [i for s, p, i, b in log if s == step and p == phase and b >= nbytes]
    return (step, PHASE_RANK[phase], hits[n - 1])


def scenario_table():
    small = trainsim.Config(vocab=8192, d=512, layers=4, heads=8, batch=8)
    return {
        "healthy": dict(program=Program(small, steps=(256,) * 3, eval_batches=4, eval_seq=256), cpp=False,
                        expect=None, description="three training steps and an evaluation that fit with room to spare"),
        "first_backward": dict(program=Program(trainsim.Config(vocab=16384, d=512, layers=4, heads=8, batch=16),
                                               steps=(256,) * 2), cpp=True, expect=("backward", 1),
                               description="the forward pass of step 1 fits; its backward pass adds gradients and "
                                           "backward temporaries and does not"),
        "optimizer_step2": dict(program=Program(trainsim.Config(vocab=16384, d=1024, layers=4, heads=16, batch=8),
                                                steps=(256,) * 3), cpp=True, expect=("forward", 2),
                                description="step 1 fits; Adam's exp_avg/exp_avg_sq, created lazily by the first "
                                            "optimizer.step(), stay resident and step 2's forward no longer fits"),
        "longest_batch": dict(program=Program(small, steps=(256, 192, 320, 224, 1024, 256)), cpp=False,
                              expect=("forward", 5),
                              description="batches of 192-320 tokens fit; step 5's 1024-token batch needs "
                                          "16x larger attention score buffers"),
        "eval_accumulation": dict(program=Program(trainsim.Config(vocab=32768, d=512, layers=4, heads=8, batch=8),
                                                  steps=(256,) * 2, eval_batches=8, eval_seq=512,
                                                  accumulate=True), cpp=False, expect=("eval", 2),
                                  pin=(512 * MiB, 3),
                                  description="training fits; evaluate() keeps every batch's logits on the GPU "
                                              "under no_grad until they fill the card"),
        "leak": dict(program=Program(small, steps=(256,) * 10, retain_graph=True), cpp=False, expect=("forward", 5),
                     description="loss.backward(retain_graph=True) with the losses kept in a list: every step's "
                                 "saved activations stay alive and allocated memory grows step after step"),
        "capacity": dict(program=Program(trainsim.Config(vocab=32768, d=1024, layers=8, heads=16, batch=1),
                                         steps=(64,) * 2), cpp=True, expect=("optimizer", 1), position=0.25,
                         description="parameters, gradients and Adam state alone exceed the card: the first "
                                     "optimizer.step() cannot create the optimizer state"),
        "large_allocation": dict(program=Program(trainsim.Config(vocab=8192, d=256, layers=2, heads=8, batch=8),
                                                 steps=(2048,) * 2), cpp=True, expect=("forward", 1),
                                 pin=(GiB, 2),
                                 description="eager attention over 2048 tokens: one attention score buffer is "
                                             "about a third of the card"),
    }


def fragmentation_run():
    cfg = trainsim.Config(vocab=8192, d=512, layers=2, heads=8, batch=8)
    # kept > transient - kept, so a kept activation never fits an earlier hole and always splits the new segment
    transient, kept = 96 * MiB, 56 * MiB
    fits = Run(FragmentingProgram(cfg, 14, transient, kept), 1 << 40, False).allocator.reserved
    return FragmentingProgram(cfg, 24, transient, kept), OVERHEAD + fits + 48 * MiB


def generate(name, outdir):
    if name == "fragmentation":
        program, capacity = fragmentation_run()
        spec = dict(cpp=False, expect=("forward", 1), program=program,
                    description="activations of varying size kept from split segments: reserved-but-unallocated "
                                "memory exceeds the request, yet no single free block can hold it")
    else:
        spec = scenario_table()[name]
        program = spec["program"]
        if spec["expect"] is None:
            probe = Run(program, 1 << 40, spec["cpp"])
            peak = probe.allocator.stats.values["reserved_bytes"][0][1] + OVERHEAD
            capacity = (peak * 3 // 2 + 256 * MiB - 1) // (256 * MiB) * (256 * MiB)
        else:
            phase, step = spec["expect"]
            target = (step, PHASE_RANK[phase])
            if "pin" in spec:
                target = nth_allocation(program, spec["cpp"], step, phase, *spec["pin"])
            capacity = search_capacity(program, target, spec["cpp"], spec.get("position", 0.5))
    run = Run(program, capacity, spec["cpp"])
    got = None if run.oom is None else (run.trainer.phase, run.trainer.step)
    if got != spec["expect"]:
        raise SystemExit("%s: expected OOM at %s, got %s (capacity %d)" % (name, spec["expect"], got, capacity))
    base = os.path.join(outdir, name)
    with open(base + ".pickle", "wb") as f:
        pickle.dump(run.snapshot(), f, protocol=PROTOCOL)
    with open(base + ".summary.txt", "w") as f:
        f.write(allocsim.memory_summary(run.allocator.stats))
    label = {"case": name, "oom": run.oom is not None, "phase": got[0] if got else None,
             "step": got[1] if got else run.trainer.step, "capacity_bytes": capacity,
             "description": spec["description"], "stacks": "all" if spec["cpp"] else "python",
             "allocator": "expandable_segments" if run.expandable else "native", "overhead_bytes": OVERHEAD,
             "peak_reserved_bytes": run.allocator.stats.values["reserved_bytes"][0][1],
             "peak_allocated_bytes": run.allocator.stats.values["allocated_bytes"][0][1]}
    if run.oom is not None:
        o = run.oom
        label.update(requested_bytes=o["requested_bytes"], alloc_size_bytes=o["alloc_size"],
                     device_free_bytes=o["device_free"], allocated_bytes=o["allocated"],
                     reserved_bytes=o["reserved"])
        with open(base + ".oom.txt", "w") as f:
            f.write(run.traceback())
    with open(base + ".json", "w") as f:
        json.dump(label, f, indent=1, sort_keys=True)
        f.write("\n")
    return label


SCENARIOS = ("healthy", "first_backward", "optimizer_step2", "longest_batch", "eval_accumulation", "leak",
             "fragmentation", "capacity", "large_allocation")


def main(argv):
    if len(argv) < 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) >= 2 else 2
    outdir = argv[1]
    names = argv[2:] or SCENARIOS
    unknown = [n for n in names if n not in SCENARIOS]
    if unknown:
        print("unknown scenario: %s (known: %s)" % (", ".join(unknown), ", ".join(SCENARIOS)), file=sys.stderr)
        return 2
    os.makedirs(outdir, exist_ok=True)
    for name in names:
        label = generate(name, outdir)
        size = os.path.getsize(os.path.join(outdir, name + ".pickle"))
        print("%-18s capacity %5d MiB  oom=%-5s phase=%-9s step=%-2d %7d bytes" % (
            name, label["capacity_bytes"] // MiB, label["oom"], label["phase"], label["step"], size))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
