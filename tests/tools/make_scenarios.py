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
    """One replay of a scenario program on a card of `capacity` bytes. `other`: bytes other processes hold on the
    card; `allowed`: a set_per_process_memory_fraction cap; `max_entries`: the history ring buffer's size
    (_record_memory_history(max_entries=...)), None for a trace that holds the whole run; `message`: how the OOM
    message lists processes ("self", or "container" where the driver reports a host PID and no "this process" clause;
    `other_pid` names the other process)."""

    def __init__(self, program, capacity, cpp, expandable=False, seed=1, other=0, allowed=None, max_entries=None,
                 message="self", other_pid=None, container_pid=None):
        self.clock = trainsim.Clock(seed)
        self.sink = ListSink(self.clock)
        self.allocator = allocsim.CachingAllocator(self.sink, capacity, OVERHEAD, expandable, other=other,
                                                   allowed=allowed)
        self.stacks = trainsim.Stacks(cpp=cpp)
        self.trainer = trainsim.Trainer(self.allocator, self.stacks, self.clock, program.cfg)
        self.oom = None
        self.expandable = expandable
        self.max_entries = max_entries
        self.message = message
        self.other_pid = other_pid
        self.container_pid = container_pid
        self.program = program
        self.oom_event = None       # index of the oom entry in the full trace
        try:
            program.run(self.trainer)
        except allocsim.OutOfMemory as e:
            self.oom = e.info
            self.oom_event = len(self.sink.trace) - 1
            program.after_oom(self.trainer)

    def outcome(self):
        """How far the run got: (step, phase rank, allocation index in the phase), or None when it finished."""
        if self.oom is None:
            return None
        return (self.trainer.step, PHASE_RANK[self.trainer.phase], self.trainer.phase_allocs - 1)

    def trace(self):
        """The trace as the dump holds it: the last max_entries entries when the ring buffer wrapped."""
        if self.max_entries is not None and len(self.sink.trace) > self.max_entries:
            return self.sink.trace[-self.max_entries:]
        return self.sink.trace

    def snapshot(self):
        return {"segments": self.allocator.snapshot_segments(lambda b: b.ctx.frames()),
                "device_traces": [self.trace()],
                "allocator_settings": allocator_settings(self.expandable),
                "external_annotations": []}

    def process_info(self):
        """reportProcessMemoryInfo(): one clause per process NVML lists on the device, in its order."""
        o = self.oom
        own = allocsim.format_size(o["reserved"] + o["overhead"])
        out = ""
        if self.other_pid is not None:
            out += "Process %d has %s memory in use. " % (self.other_pid, allocsim.format_size(o["other"]))
        if self.message == "container":
            # inside a container NVML reports the host PID, which is not os.getpid(): the run is "a process"
            out += "Process %d has %s memory in use. " % (self.container_pid, own)
        else:
            out += "Including non-PyTorch memory, this process has %s memory in use. " % own
        if o["allowed"] is not None:
            out += "%s allowed; " % allocsim.format_size(o["allowed"])
        return out

    def oom_message(self):
        o = self.oom
        return ("CUDA out of memory. Tried to allocate %s. GPU %d has a total capacity of %s of which %s is free. "
                "%sOf the allocated memory %s is "
                "allocated by PyTorch, and %s is reserved by PyTorch but unallocated. If reserved but unallocated "
                "memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
                "fragmentation.  See documentation for Memory Management  "
                "(https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-"
                "alloc-conf)" % (
                    allocsim.format_size(o["alloc_size"]), o["device"], allocsim.format_size(o["capacity"]),
                    allocsim.format_size(o["device_free"]), self.process_info(),
                    allocsim.format_size(o["allocated"]), allocsim.format_size(o["reserved"] - o["allocated"])))

    def traceback(self):
        lines = ["Traceback (most recent call last):"]
        for site in self.trainer.last_sites:
            lines.append('  File "%s", line %d, in %s' % (site.filename, site.line, site.name))
            lines.append("    " + site.code)
        lines.append("torch.OutOfMemoryError: " + self.oom_message())
        return "\n".join(lines) + "\n"


class Program:
    """A training script: config plus what main() does. `sites` replaces lines of the script (trainsim.DEFAULT_SITES),
    `keep_outputs` keeps every step's logits referenced, `clip_steps` are the steps that clip gradients."""

    def __init__(self, cfg, steps=(), retain_graph=False, eval_batches=0, eval_seq=0, accumulate=False, sites=None,
                 keep_outputs=False, clip_steps=()):
        self.cfg = cfg
        self.steps = steps
        self.retain_graph = retain_graph
        self.eval_batches = eval_batches
        self.eval_seq = eval_seq
        self.accumulate = accumulate
        self.sites = sites or {}
        self.keep_outputs = keep_outputs
        self.clip_steps = clip_steps

    def run(self, tr):
        tr.sites.update(self.sites)
        tr.load()
        for i, seq in enumerate(self.steps, 1):
            tr.train_step(seq, retain_graph=self.retain_graph, keep_outputs=self.keep_outputs,
                          clip=i in self.clip_steps)
        if self.eval_batches:
            tr.evaluate(self.eval_batches, self.eval_seq, self.accumulate)
        tr.set_phase(tr.phase)

    def after_oom(self, tr):
        """What the script does between the OOM and the dump: nothing, the dump is the except handler's first line."""


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


def search_capacity(program, target, cpp, position=0.5, lo=512 * MiB, hi=16 * GiB, grain=MiB, runner=None):
    """A capacity at which the run stops exactly at `target`, a prefix of Run.outcome(): `position` 0.5 is the
    middle of the range of such capacities. `runner(value)` replays the run for another searched quantity (what
    another process leaves free, a fraction cap); by default the value is the card's capacity."""
    if runner is None:
        def runner(cap):
            return Run(program, cap, cpp)

    def key(cap):
        out = runner(cap).outcome()
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


def nth_allocation(program, cpp, step, phase, nbytes, n, op=None):
    """(step, phase rank, index) of the n-th allocation of at least `nbytes` (made by `op`, when given) in that
    phase of an unconstrained run: a target for search_capacity that pins the failing allocation."""
    log = []
    clock = trainsim.Clock(1)
    trainer = trainsim.Trainer(allocsim.CachingAllocator(ListSink(clock), 1 << 40, OVERHEAD), trainsim.Stacks(cpp),
                               clock, program.cfg)
    trainer.log = log
    program.run(trainer)
    hits = [i for s, p, i, b, o in log if s == step and p == phase and b >= nbytes and (op is None or o == op)]
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


# -- the issue-10 classes: the same physics in other loops, optimizers, dtypes, limits and dumps ----------------

CARD_24G = 24217 * MiB      # what cudaMemGetInfo reports as total on a 24 GB card (23.65 GiB)
OTHER_PID = 31337           # another job on the same card
HOST_PID = 22817            # this run, as NVML names it from outside its container


class ClosureProgram(Program):
    """`optimizer.step(closure)`: the closure zeroes the gradients, runs forward and backward, and returns the loss;
    the update runs after it inside the same step() call."""

    def run(self, tr):
        closure = (trainsim.MODULE_MAIN, trainsim.MAIN_STEP_CLOSURE, trainsim.OPT_WRAPPER, trainsim.OPT_USE_GRAD,
                   trainsim.ADAM_CLOSURE)
        tr.sites.update(step=closure[:2], fwd=closure + (trainsim.CLOSURE_FWD,),
                        loss=closure + (trainsim.CLOSURE_LOSS,), bwd=closure + (trainsim.CLOSURE_BWD,),
                        zero=closure + (trainsim.CLOSURE_ZERO,))
        tr.load()
        for seq in self.steps:
            tr.train_step(seq, closure=True)
        tr.set_phase(tr.phase)


class TrainerProgram(Program):
    """A Hugging Face Trainer-style run: trainer.train() trains, and every `eval_every` steps evaluation_loop runs
    prediction_step on each eval batch and, without eval_accumulation_steps, concatenates every batch's logits on
    the GPU (nested_concat: each torch.cat allocates the old predictions plus the new batch)."""

    def __init__(self, cfg, steps, eval_every, eval_batches, eval_seq, argmax=False):
        super().__init__(cfg, steps=steps, eval_batches=eval_batches, eval_seq=eval_seq)
        self.eval_every = eval_every
        self.argmax = argmax        # preprocess_logits_for_metrics=argmax: only token ids are gathered

    def run(self, tr):
        top = (trainsim.HF_MAIN, trainsim.HF_TRAIN)
        step = top + (trainsim.HF_INNER_STEP,)
        model = step + (trainsim.HF_COMPUTE, trainsim.HF_MODEL)
        tr.sites.update(load=(trainsim.HF_LOAD,),
            ids=step + (trainsim.HF_PREPARE, trainsim.HF_PREPARE_INPUTS, trainsim.HF_PREPARE_INPUT), fwd=model,
            loss=model + (trainsim.WRAPPED_CALL, trainsim.CALL_IMPL, trainsim.GPT_LOSS),
            bwd=step + (trainsim.HF_BWD, trainsim.ACC_BWD), step=top + (trainsim.HF_OPT_STEP, trainsim.ACC_OPT_STEP),
            zero=top + (trainsim.HF_ZERO, trainsim.ACC_ZERO))
        tr.load()
        for i, seq in enumerate(self.steps, 1):
            tr.train_step(seq)
            if i % self.eval_every == 0:
                self.evaluation_loop(tr, top + (trainsim.HF_MAYBE_EVAL, trainsim.HF_LOG_SAVE_EVAL,
                                                trainsim.HF_EVALUATE_INNER, trainsim.HF_EVALUATE))
        tr.set_phase(tr.phase)

    def evaluation_loop(self, tr, top):
        tr.set_phase("eval")
        c = tr.cfg
        predict = top + (trainsim.HF_PREDICT,)
        prepare = predict + (trainsim.HF_PREDICT_PREPARE, trainsim.HF_PREPARE_INPUTS, trainsim.HF_PREPARE_INPUT)
        model = predict + (trainsim.HF_PREDICT_MODEL,)
        loss_sites = model + (trainsim.WRAPPED_CALL, trainsim.CALL_IMPL, trainsim.GPT_LOSS, trainsim.F_CROSS_ENTROPY)
        cat = top + (trainsim.HF_ADD_PREDS, trainsim.HF_PT_ADD, trainsim.HF_NESTED_CONCAT, trainsim.HF_PAD_CAT)
        preds, size = None, 0
        for _ in range(self.eval_batches):
            seq = self.eval_seq
            logits_bytes = c.batch * seq * c.vocab * c.dtype_bytes
            ids = [tr.alloc(c.batch * seq * 8, prepare, "to") for _ in range(2)]
            fwd = tr.forward(seq, model, grad=False)
            lsm = tr.alloc(logits_bytes, loss_sites, "log_softmax")
            loss = tr.alloc(4, loss_sites, "nll_loss")
            tr.free(lsm, loss_sites)
            if self.argmax:
                ids_bytes = c.batch * seq * 8
                kept = tr.alloc(ids_bytes, predict + (trainsim.HF_PREPROCESS, trainsim.USER_ARGMAX), "argmax")
                tr.free(fwd.logits, predict)
                fwd.logits, logits_bytes = kept, ids_bytes
            if preds is None:
                preds, size = fwd.logits, logits_bytes
            else:
                grown = tr.alloc(size + logits_bytes, cat, "cat")
                tr.free(preds, cat)
                tr.free(fwd.logits, predict)
                preds, size = grown, size + logits_bytes
            tr.free(loss, predict)
            for t in ids:
                tr.free(t, predict)
        tr.free(preds, top)


class SkipOnOomProgram(Program):
    """A loop that catches torch.OutOfMemoryError, drops the batch, empties the cache and dumps the snapshot there:
    the trace goes on after the oom entry (the failed forward's tensors freed as the exception is cleared, then the
    cached segments released)."""

    def after_oom(self, tr):
        keep = set(addr for addr, _ in tr.params.values()) | set(tr.grads.values()) | set(tr._ids)
        for state in tr.state.values():
            keep |= set(t for t in state if t is not None)
        if tr._logits is not None:
            keep.add(tr._logits)        # the previous step's logits: `logits` was not rebound yet
        keep |= set(tr._loss)
        dropped = [b for b in tr.a.live_blocks() if b.seq >= tr.step_start_seq and b.addr not in keep]
        for block in sorted(dropped, key=lambda b: -b.seq):
            tr.free(block.addr, (trainsim.MODULE_MAIN, trainsim.MAIN_EXCEPT))
        tr.a.empty_cache(trainsim.Context(tr.s.stack((trainsim.MODULE_MAIN, trainsim.MAIN_EMPTY_CACHE), None,
                                                     "free")))


def step_start_index(run, step):
    """Index in the full trace of the first event of training step `step` (its ProfilerStep START)."""
    start = next(a["time_us"] for a in run.trainer.annotations if a["name"] == "ProfilerStep#%d" % step
                 and a["stage"] == "START")
    return next(i for i, e in enumerate(run.sink.trace) if e["time_us"] > start)


def params_bytes(cfg):
    return sum(n for _, n in cfg.params())


def eval_logits_bytes(run, cfg):
    """What keeping every eval batch's logits needs in all (before any final concatenation)."""
    program = run.program
    seqs = program.eval_seq if isinstance(program.eval_seq, tuple) else (program.eval_seq,) * program.eval_batches
    return sum(cfg.batch * seq * cfg.vocab * cfg.dtype_bytes for seq in seqs)


def largest_free_block(run):
    return max(b.size for small in (False, True) for b in run.allocator.pools[small].all())


def issue10_table():
    small = trainsim.Config(vocab=8192, d=512, layers=4, heads=8, batch=8)
    big = trainsim.Config(vocab=32768, d=1024, layers=8, heads=16, batch=1)
    wide = trainsim.Config(vocab=16384, d=1024, layers=6, heads=16, batch=2)
    return {
        "optimizer_step2_foreach": dict(
            diagnosis="optimizer_step2", program=Program(wide, steps=(128,) * 3), cpp=True, expect=("optimizer", 1),
            pin=("foreach_sqrt", 1024 * 16384 * 4, 2),
            physics=lambda run, cfg: {"fixed_state_bytes": 4 * params_bytes(cfg),
                                      "step_temporaries_bytes": params_bytes(cfg)},
            description="AdamW (foreach) at its first optimizer.step(): weights, gradients and the new exp_avg/"
                        "exp_avg_sq fit with room to spare, but _multi_tensor_adam's torch._foreach_sqrt "
                        "intermediates (exp_avg_sq_sqrt, one per parameter) do not"),
        "optimizer_step2_fused": dict(
            diagnosis="optimizer_step2",
            program=Program(trainsim.Config(vocab=65536, d=512, layers=2, heads=8, batch=2, optimizer="fused"),
                            steps=(320,) * 3), cpp=False, expect=("optimizer", 1), position=0.9,
            physics=lambda run, cfg: {"fixed_state_bytes": 4 * params_bytes(cfg), "step_temporaries_bytes": 0},
            description="AdamW (fused=True) at its first optimizer.step(): _init_group creates the step counters and "
                        "exp_avg/exp_avg_sq on top of the still-referenced logits; weights, gradients and state "
                        "alone fit"),
        "capacity_bf16": dict(
            diagnosis="capacity",
            program=Program(trainsim.Config(vocab=32768, d=2048, layers=8, heads=16, batch=1, dtype_bytes=2),
                            steps=(64,) * 2, sites={"load": (trainsim.MODULE_MAIN, trainsim.MAIN_TO_BF16)}),
            cpp=True, expect=("backward", 1),
            physics=lambda run, cfg: {"weights_bytes": params_bytes(cfg), "gradients_bytes": params_bytes(cfg),
                                      "projected_adam_fp32_moments_bytes": 4 * params_bytes(cfg),
                                      "projected_fp32_master_weights_bytes": 2 * params_bytes(cfg),
                                      "projected_state_bytes": 8 * params_bytes(cfg)},
            description="a bfloat16 model fails in its first backward: its weights and 16-bit gradients alone exceed "
                        "what the process can hold, before any optimizer state (two fp32 moments, fp32 master "
                        "weights) exists; activations are tiny (batch 1, 64 tokens)"),
        "leak_ring": dict(
            diagnosis="leak",
            program=Program(small, steps=(256,) * 14, keep_outputs=True, clip_steps=(2, 3, 5, 8, 9, 11, 12)),
            cpp=False, expect=("backward", 9), ring=(5, 0.4),
            physics=lambda run, cfg: {"leak_bytes_per_step": cfg.batch * 256 * cfg.vocab * cfg.dtype_bytes},
            description="train_logits.append(logits) keeps every step's logits: live memory at the start of each "
                        "step grows by one logits tensor (64 MiB) with a constant batch; gradient clipping on some "
                        "steps only; the history ring buffer (max_entries) dropped the first steps, so the trace "
                        "starts in the middle of a step"),
        "eval_accumulation_split": dict(
            diagnosis="eval_accumulation",
            program=Program(trainsim.Config(vocab=32768, d=512, layers=4, heads=8, batch=8), steps=(256,) * 2,
                            eval_batches=12, eval_seq=(512, 448, 384, 320, 384, 256, 320, 192, 256, 128, 192, 128),
                            accumulate=True),
            cpp=True, expect=("eval", 2), pin=("linear", 128 * MiB, 6),
            physics=lambda run, cfg: dict(eval_predictions_bytes=eval_logits_bytes(run, cfg),
                                          largest_free_block_bytes=largest_free_block(run)),
            description="evaluate() keeps every batch's logits (batches of falling length): they fill most of the "
                        "card, the cached free memory left between them is larger than the failing request but "
                        "split; freeing it would buy a batch or two, the evaluation needs far more"),
        "other_process": dict(
            program=Program(big, steps=(64,) * 2), cpp=False, expect=("load", 0), card=CARD_24G, limit="other",
            lo=OVERHEAD + 64 * MiB, run=dict(other_pid=OTHER_PID),
            description="another process holds 23 GiB of the 24 GB card: model.to(device) fails with under 1 GiB "
                        "reserved. From the snapshot alone the card size is unknown: the right answer is 'likely "
                        "another process, card size unknown' (ask for nvidia-smi); the OOM message shows it"),
        "memory_fraction_cap": dict(
            program=Program(trainsim.Config(vocab=8192, d=512, layers=4, heads=8, batch=24), steps=(256,) * 3),
            cpp=True, expect=("forward", 1), card=CARD_24G, limit="allowed",
            description="torch.cuda.set_per_process_memory_fraction caps the allocator at a small share of a 24 GB "
                        "card: the first forward fails with more than 20 GiB of the card free and nothing in the "
                        "workload grew past what fit before (a cap under a workload cause, such as the first "
                        "backward, makes that cause lead: tests/data/real)"),
        "container_first_backward": dict(
            diagnosis="first_backward",
            program=Program(trainsim.Config(vocab=16384, d=768, layers=6, heads=12, batch=8), steps=(256,) * 2),
            cpp=False, expect=("backward", 1), run=dict(message="container", container_pid=HOST_PID),
            description="a first_backward run inside a container: the message names the run by its host PID "
                        "(Process 22817 has ... memory in use, which is this run's reserved memory plus its CUDA "
                        "context) and has no 'this process has' clause; no other process is on the card"),
        "closure_optimizer_step2": dict(
            diagnosis="optimizer_step2",
            program=ClosureProgram(trainsim.Config(vocab=16384, d=1024, layers=4, heads=16, batch=8),
                                   steps=(256,) * 3), cpp=True, expect=("forward", 2),
            description="optimizer.step(closure): the lazily created Adam state of step 1 stays resident and the "
                        "forward of step 2, which runs inside optimizer.step(closure), no longer fits"),
        "trainer_eval_accumulation": dict(
            diagnosis="eval_accumulation",
            program=TrainerProgram(trainsim.Config(vocab=32768, d=512, layers=4, heads=8, batch=4),
                                   steps=(256,) * 6, eval_every=3, eval_batches=16, eval_seq=256),
            cpp=False, expect=("eval", 3), pin=("cat", 0, 5),
            physics=lambda run, cfg: dict(eval_predictions_bytes=eval_logits_bytes(run, cfg)),
            description="a Trainer-style loop evaluates every 3 steps without eval_accumulation_steps: "
                        "evaluation_loop concatenates every batch's logits on the GPU (nested_concat), each "
                        "torch.cat allocating the old predictions plus the new batch, until the card is full"),
        "trainer_longest_batch": dict(
            diagnosis="longest_batch",
            program=TrainerProgram(small, steps=(256, 192, 256, 224, 1024, 256), eval_every=2, eval_batches=4,
                                   eval_seq=256, argmax=True),
            cpp=True, expect=("forward", 5),
            description="a Trainer-style loop that evaluates every 2 steps (gathering only argmax token ids): the "
                        "evaluations fit; step 5's 1024-token batch, right after one, needs 16x larger attention "
                        "score buffers"),
        "closure_first_backward": dict(
            diagnosis="first_backward",
            program=ClosureProgram(trainsim.Config(vocab=24576, d=640, layers=5, heads=10, batch=12),
                                   steps=(256,) * 2), cpp=False, expect=("backward", 1),
            description="optimizer.step(closure): the forward inside the closure fits, its loss.backward() does not; "
                        "no optimizer state exists yet"),
        "longest_batch_after_oom": dict(
            diagnosis="longest_batch",
            program=SkipOnOomProgram(small, steps=(256, 224, 320, 192, 1024, 256)), cpp=True, expect=("forward", 5),
            description="step 5's 1024-token batch fails in forward; the script catches torch.OutOfMemoryError, "
                        "drops the batch, calls torch.cuda.empty_cache() and only then dumps the snapshot: the trace "
                        "goes on after the oom entry and the segments are those after the cleanup"),
    }


def runner_for(spec, program):
    """Replays `program` at a searched value: the card's capacity, or (with a fixed `card`) what other processes
    leave to this one (`limit` "other") or the per-process fraction cap in bytes (`limit` "allowed")."""
    cpp, kw, card, limit = spec["cpp"], spec.get("run", {}), spec.get("card"), spec.get("limit")
    if limit == "other":
        return lambda value: Run(program, card, cpp, other=card - value, **kw)
    if limit == "allowed":
        return lambda value: Run(program, card, cpp, allowed=value, **kw)
    return lambda value: Run(program, value, cpp, **kw)


def generate(name, outdir):
    if name == "fragmentation":
        program, capacity = fragmentation_run()
        spec = dict(cpp=False, expect=("forward", 1), program=program,
                    description="activations of varying size kept from split segments: reserved-but-unallocated "
                                "memory exceeds the request, yet no single free block can hold it")
        run = Run(program, capacity, spec["cpp"])
    else:
        spec = scenario_table().get(name) or issue10_table()[name]
        program = spec["program"]
        runner = runner_for(spec, program)
        if spec["expect"] is None:
            probe = Run(program, 1 << 40, spec["cpp"])
            peak = probe.allocator.stats.values["reserved_bytes"][0][1] + OVERHEAD
            value = (peak * 3 // 2 + 256 * MiB - 1) // (256 * MiB) * (256 * MiB)
        else:
            phase, step = spec["expect"]
            target = (step, PHASE_RANK[phase])
            if "pin" in spec:
                pin = spec["pin"]
                if isinstance(pin[0], str):
                    target = nth_allocation(program, spec["cpp"], step, phase, pin[1], pin[2], op=pin[0])
                else:
                    target = nth_allocation(program, spec["cpp"], step, phase, *pin)
            value = search_capacity(program, target, spec["cpp"], spec.get("position", 0.5),
                                    lo=spec.get("lo", 512 * MiB), runner=runner)
        run = runner(value)
        capacity = spec.get("card", value)
    got = None if run.oom is None else (run.trainer.phase, run.trainer.step)
    if got != spec["expect"]:
        raise SystemExit("%s: expected OOM at %s, got %s (capacity %d)" % (name, spec["expect"], got, capacity))
    if "ring" in spec:
        # the ring buffer kept the last events only: from a point `fraction` into step `first`
        first, fraction = spec["ring"]
        a, b = step_start_index(run, first), step_start_index(run, first + 1)
        run.max_entries = len(run.sink.trace) - (a + int((b - a) * fraction))
    base = os.path.join(outdir, name)
    with open(base + ".pickle", "wb") as f:
        pickle.dump(run.snapshot(), f, protocol=PROTOCOL)
    with open(base + ".summary.txt", "w") as f:
        f.write(allocsim.memory_summary(run.allocator.stats))
    # `case` is the truth, the catalogue id that should rank first (as in family B); `scenario` the file name
    label = {"case": spec.get("diagnosis", name), "scenario": name, "oom": run.oom is not None, "phase": got[0] if got else None,
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
        if o["other"]:
            label["other_process_bytes"] = o["other"]
        if o["allowed"] is not None:
            label["allowed_bytes"] = o["allowed"]
        trace = run.trace()
        after = len(run.sink.trace) - 1 - run.oom_event
        if after:
            label["events_after_oom"] = after
            label["dump_reserved_bytes"] = run.allocator.reserved
        if len(trace) < len(run.sink.trace):
            label["trace_dropped_events"] = len(run.sink.trace) - len(trace)
        if run.message == "container":
            label["message_pid"] = run.container_pid
        with open(base + ".oom.txt", "w") as f:
            f.write(run.traceback())
    if "physics" in spec:
        label.update(spec["physics"](run, program.cfg))
    with open(base + ".json", "w") as f:
        json.dump(label, f, indent=1, sort_keys=True)
        f.write("\n")
    return label


SCENARIOS = ("healthy", "first_backward", "optimizer_step2", "longest_batch", "eval_accumulation", "leak",
             "fragmentation", "capacity", "large_allocation") + tuple(issue10_table())


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
