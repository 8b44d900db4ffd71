#!/usr/bin/env python3
"""Generate before/after snapshot pairs for `oomlens compare`, without a GPU and without torch.

    python3 tests/tools/make_pairs.py OUTDIR

Each pair replays TinyGPT training runs (trainsim) against the caching-allocator emulation (allocsim) on a card
large enough that nothing fails, and writes <pair>.a.pickle, <pair>.b.pickle (one snapshot, <pair>.pickle, for the
windows pair) and <pair>.json, the truth: the peaks counted here from the replayed allocations (requested bytes,
as memory_viz and oomlens count them), the tensor sizes behind the change, and the sites expected to be new,
vanished or left alive. Deterministic (fixed seeds and time base, pickle protocol 4): byte-identical across runs.

Pairs:
  checkpointing  the same run without and with activation checkpointing of every block (torch.utils.checkpoint,
                 use_reentrant=False): the blocks' saved tensors are dropped in forward and recomputed in backward
  batch          micro-batch 8 vs 4
  fused          Adam foreach (default) vs fused=True: the update's exp_avg_sq_sqrt temporaries vanish, the
                 device step counters are new
  leak           one run (windows): every step keeps the previous step's logits alive (`outputs.append(logits)`),
                 compared step 2 vs step 3
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
OVERHEAD = 268 * MiB
CARD = 24 * GiB
SEQ = 256


def config(batch=8, optimizer="foreach"):
    # Smaller than the scenarios' TinyGPT so that each file stays around 100 KB.
    return trainsim.Config(vocab=4096, d=256, layers=2, heads=4, batch=batch, optimizer=optimizer)


class Sink:
    """Trace entries as PyTorch 2.8+ builds them, and the live requested bytes after every entry."""

    def __init__(self, clock):
        self.clock = clock
        self.trace = []
        self.live = {}
        self.allocated = 0
        self.peak = 0

    def record(self, action, addr, size, stream, ctx, device_free=None):
        self.clock.tick(1, 3)
        e = {"action": action}
        if action == "oom":
            e["device_free"] = device_free
        else:
            e["addr"] = addr
        e.update({"size": size, "stream": stream, "time_us": self.clock.now, "compile_context": "N/A",
                  "user_metadata": ""})
        if ctx is not None:
            e["frames"] = ctx.frames()
        self.trace.append(e)
        if action == "alloc":
            self.live[addr] = size
            self.allocated += size
            self.peak = max(self.peak, self.allocated)
        elif action == "free_completed":
            self.allocated -= self.live.pop(addr, 0)


# torch.utils.checkpoint's frames (PyTorch 2.5-2.8), outermost first as trainsim's sites are.
CKPT = trainsim._torch("utils/checkpoint.py", 495, "checkpoint", "ret = function(*args, **kwargs)")
CKPT_WRAPPER = trainsim._torch("_compile.py", 32, "inner", "return disable_fn(*args, **kwargs)")
CKPT_UNPACK = trainsim._torch("utils/checkpoint.py", 1129, "unpack_hook", "frame.recompute_fn(*args)")
CKPT_RECOMPUTE = trainsim._torch("utils/checkpoint.py", 1506, "recompute_fn", "fn(*args, **kwargs)")
GPT_BLOCK_CKPT = trainsim._user("model.py", 73, "forward", "x = checkpoint(block, x, use_reentrant=False)")


def block_forward(tr, x, blk, seq):
    """One pre-LN block as trainsim.Trainer.forward runs it: returns the tensors saved for backward and the output."""
    c = tr.cfg
    bt = c.batch * seq
    btd = bt * c.d * c.dtype_bytes
    scores = c.batch * c.heads * seq * seq * c.dtype_bytes
    alloc, free = tr.alloc, tr.free
    att = blk + (trainsim.BLK_ATTN,)
    norm = att + (trainsim.WRAPPED_CALL, trainsim.CALL_IMPL, trainsim.NORM_FWD, trainsim.F_LAYER_NORM)
    lin_qkv = att + (trainsim.ATT_QKV, trainsim.WRAPPED_CALL, trainsim.CALL_IMPL, trainsim.LINEAR_FWD)
    lay = {"x": x, "ln1": alloc(btd, norm, "layer_norm"), "m1": alloc(bt * 4, norm, "layer_norm"),
           "r1": alloc(bt * 4, norm, "layer_norm"), "qkv": alloc(3 * btd, lin_qkv, "linear")}
    s1 = alloc(scores, att + (trainsim.ATT_SCORES,), "bmm")
    s2 = alloc(scores, att + (trainsim.ATT_SCORES,), "mul")
    free(s1, att + (trainsim.ATT_SCORES,))
    ones = alloc(seq * seq, att + (trainsim.ATT_MASK,), "ones")
    lay["mask"] = alloc(seq * seq, att + (trainsim.ATT_MASK,), "triu")
    free(ones, att + (trainsim.ATT_MASK,))
    s3 = alloc(scores, att + (trainsim.ATT_SOFTMAX,), "masked_fill")
    free(s2, att + (trainsim.ATT_SOFTMAX,))
    lay["probs"] = alloc(scores, att + (trainsim.ATT_SOFTMAX,), "softmax")
    free(s3, att + (trainsim.ATT_SOFTMAX,))
    bo = alloc(btd, att + (trainsim.ATT_OUT,), "bmm")
    lay["out"] = alloc(btd, att + (trainsim.ATT_OUT,), "clone")
    free(bo, att + (trainsim.ATT_OUT,))
    proj = alloc(btd, att + (trainsim.ATT_PROJ, trainsim.WRAPPED_CALL, trainsim.CALL_IMPL, trainsim.LINEAR_FWD),
                 "linear")
    lay["x1"] = alloc(btd, att, "add")
    free(proj, att)
    mlp = blk + (trainsim.BLK_MLP,)
    norm = mlp + (trainsim.WRAPPED_CALL, trainsim.CALL_IMPL, trainsim.NORM_FWD, trainsim.F_LAYER_NORM)
    lay["ln2"] = alloc(btd, norm, "layer_norm")
    lay["m2"] = alloc(bt * 4, norm, "layer_norm")
    lay["r2"] = alloc(bt * 4, norm, "layer_norm")
    lin = mlp + (trainsim.WRAPPED_CALL, trainsim.CALL_IMPL, trainsim.LINEAR_FWD)
    lay["fc1"] = alloc(4 * btd, lin, "linear")
    lay["g"] = alloc(4 * btd, mlp, "gelu")
    fc2 = alloc(btd, lin, "linear")
    out = alloc(btd, mlp, "add")
    free(fc2, mlp)
    return lay, out


class RecomputedLayers:
    """fwd.layers of a checkpointed forward: Trainer.backward reads layer i when its backward starts, which is when
    checkpoint's unpack hook recomputes the block from its saved input."""

    def __init__(self, tr, inputs, seq):
        self.tr = tr
        self.inputs = inputs
        self.seq = seq

    def __getitem__(self, i):
        tr = self.tr
        main = tr.sites["bwd"] + (trainsim.TENSOR_BWD, trainsim.AUTOGRAD_BWD, trainsim.ENGINE_RUN_BWD)
        blk = main + (CKPT_UNPACK, CKPT_RECOMPUTE, trainsim.WRAPPED_CALL, trainsim.CALL_IMPL)
        lay, out = block_forward(tr, self.inputs[i], blk, self.seq)
        tr.free(out, blk)  # the recomputed output is not needed: the next block's input was saved
        return lay


class CheckpointingTrainer(trainsim.Trainer):
    """`x = checkpoint(block, x, use_reentrant=False)` for every block: forward keeps only each block's input."""

    def forward(self, seq, call, grad):
        if not grad:
            return super().forward(seq, call, grad)
        c = self.cfg
        btd = c.batch * seq * c.d * c.dtype_bytes
        top = call + (trainsim.WRAPPED_CALL, trainsim.CALL_IMPL)
        fwd = trainsim.Forward()
        x = self.alloc(btd, top + (trainsim.GPT_EMB, trainsim.WRAPPED_CALL, trainsim.CALL_IMPL, trainsim.EMB_FWD,
                                   trainsim.F_EMBEDDING), "embedding")
        inputs = []
        for _ in range(c.layers):
            blk = top + (GPT_BLOCK_CKPT, CKPT, CKPT_WRAPPER, trainsim.WRAPPED_CALL, trainsim.CALL_IMPL)
            lay, out = block_forward(self, x, blk, seq)
            for key, addr in lay.items():
                if key != "x":
                    self.free(addr, blk)  # dropped by checkpoint's pack hook: nothing but the input is saved
            inputs.append(x)
            x = out
        fwd.layers = RecomputedLayers(self, inputs, seq)
        head = top + (trainsim.GPT_HEAD,)
        norm = head + (trainsim.WRAPPED_CALL, trainsim.CALL_IMPL, trainsim.NORM_FWD, trainsim.F_LAYER_NORM)
        bt = c.batch * seq
        fwd.head = {"x": x, "ln": self.alloc(btd, norm, "layer_norm"), "m": self.alloc(bt * 4, norm, "layer_norm"),
                    "r": self.alloc(bt * 4, norm, "layer_norm")}
        fwd.logits = self.alloc(bt * c.vocab * c.dtype_bytes,
                                head + (trainsim.WRAPPED_CALL, trainsim.CALL_IMPL, trainsim.LINEAR_FWD), "linear")
        return fwd


def replay(cfg, steps=3, trainer=trainsim.Trainer, keep_outputs=False, seed=1):
    clock = trainsim.Clock(seed)
    sink = Sink(clock)
    allocator = allocsim.CachingAllocator(sink, CARD, OVERHEAD, False)
    tr = trainer(allocator, trainsim.Stacks(cpp=False), clock, cfg)
    tr.load()
    for _ in range(steps):
        tr.train_step(SEQ, keep_outputs=keep_outputs)
    tr.set_phase(tr.phase)
    snapshot = {"segments": allocator.snapshot_segments(lambda b: b.ctx.frames()), "device_traces": [sink.trace],
                "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "max_split_size": -1,
                                       "garbage_collection_threshold": 0.0, "expandable_segments": False,
                                       "pinned_num_register_threads": 1, "release_lock_on_cudamalloc": False,
                                       "pinned_use_cuda_host_register": False,
                                       "roundup_power2_divisions": {str(1 << k): 0 for k in range(16)}},
                "external_annotations": tr.annotations}
    return snapshot, sink


def frame_text(site):
    return "%s:%d:%s" % (site.filename, site.line, site.name)


def write(outdir, name, snapshot):
    with open(os.path.join(outdir, name), "wb") as f:
        pickle.dump(snapshot, f, protocol=PROTOCOL)


def block_saved_bytes(cfg):
    """What one block saves for backward without checkpointing (trainsim's `lay`), minus its input."""
    bt = cfg.batch * SEQ
    btd = bt * cfg.d * cfg.dtype_bytes
    scores = cfg.batch * cfg.heads * SEQ * SEQ * cfg.dtype_bytes
    # ln1, qkv (3), out, x1, ln2, fc1 (4), g (4): 15 x btd; m1, r1, m2, r2: 4 bytes a token each; probs; mask
    return 15 * btd + 4 * (bt * 4) + scores + SEQ * SEQ


def generate(outdir):
    os.makedirs(outdir, exist_ok=True)
    truth = {}

    cfg = config()
    a, sink_a = replay(cfg)
    b, sink_b = replay(cfg, trainer=CheckpointingTrainer)
    write(outdir, "checkpointing.a.pickle", a)
    write(outdir, "checkpointing.b.pickle", b)
    truth["checkpointing"] = {
        "a": "checkpointing.a.pickle", "b": "checkpointing.b.pickle", "description": "without / with activation "
        "checkpointing of every block (use_reentrant=False), batch 8 x 256 tokens, 3 steps",
        "a_peak_allocated_bytes": sink_a.peak, "b_peak_allocated_bytes": sink_b.peak,
        "largest_category_delta": "activations", "activations_delta_sign": -1,
        "saved_per_block_bytes": block_saved_bytes(cfg), "blocks": cfg.layers,
        "new_site_frames": [frame_text(trainsim.BLK_MLP)], "new_site_phase": "backward",
        # The recompute's tensors are the block's activations again (product.md §3: activations
        # recomputed inside backward by activation checkpointing stay activations).
        "new_site_category": "activations"}

    a, sink_a = replay(config(batch=8))
    b, sink_b = replay(config(batch=4))
    write(outdir, "batch.a.pickle", a)
    write(outdir, "batch.b.pickle", b)
    truth["batch"] = {
        "a": "batch.a.pickle", "b": "batch.b.pickle", "description": "micro-batch 8 vs 4, 256 tokens, 3 steps",
        "a_peak_allocated_bytes": sink_a.peak, "b_peak_allocated_bytes": sink_b.peak,
        "largest_category_delta": "activations", "activations_delta_sign": -1, "new_sites": 0, "vanished_sites": 0}

    a, sink_a = replay(config(optimizer="foreach"))
    b, sink_b = replay(config(optimizer="fused"))
    write(outdir, "fused.a.pickle", a)
    write(outdir, "fused.b.pickle", b)
    truth["fused"] = {
        "a": "fused.a.pickle", "b": "fused.b.pickle", "description": "Adam foreach vs fused=True, batch 8, 3 steps",
        "a_peak_allocated_bytes": sink_a.peak, "b_peak_allocated_bytes": sink_b.peak,
        "vanished_site_frames": [frame_text(trainsim.MAIN_STEP), frame_text(trainsim.MODULE_MAIN)],
        "vanished_site_category": "temporaries", "vanished_site_phase": "optimizer",
        # fused's device step counters are made where exp_avg is (same frames, category and phase): no new site
        "new_sites": 0,
        "foreach_sqrt_bytes_per_step": sum(n for _, n in cfg.params()), "steps": 3}

    run, sink = replay(config(), steps=4, keep_outputs=True)
    write(outdir, "leak.pickle", run)
    c = config()
    truth["leak"] = {
        "snapshot": "leak.pickle", "windows": ["2:2", "3:3"], "description": "every step keeps the previous step's "
        "logits (outputs.append(logits)), 4 steps; step 2 vs step 3",
        "peak_allocated_bytes": sink.peak, "leak_bytes_per_step": c.batch * SEQ * c.vocab * c.dtype_bytes,
        "leak_site_frames": [frame_text(trainsim.GPT_HEAD), frame_text(trainsim.MAIN_FWD),
                             frame_text(trainsim.MODULE_MAIN)], "leak_category": "activations"}

    with open(os.path.join(outdir, "truth.json"), "w") as f:
        json.dump(truth, f, indent=2, sort_keys=True)
        f.write("\n")


def main(argv):
    if len(argv) != 2:
        print(__doc__.strip(), file=sys.stderr)
        return 2
    generate(argv[1])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
