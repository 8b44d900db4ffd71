#!/usr/bin/env python3
"""More real cases beside make_cases.py: the reasoning classes of issue 10 and the snapshot
fields of issue 14. Same output layout: <case>.pickle/.oom.txt/.summary.txt/.json."""
import inspect, json, os, pickle, subprocess, sys, time, traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_cases as mc  # noqa: E402

GiB = 1 << 30
MiB = 1 << 20


def record(torch, **kw):
    fn = torch.cuda.memory._record_memory_history
    params = inspect.signature(fn).parameters
    used = {k: v for k, v in kw.items() if k in params}
    fn(**used)
    return sorted(used)


def lora_model(torch, vocab, d, layers, heads, rank=8):
    nn = torch.nn
    model = mc.make_model(torch, vocab, d, layers, heads)

    class LoRA(nn.Module):
        def __init__(self, base):
            super().__init__()
            self.base = base
            self.a = nn.Parameter(torch.randn(rank, base.in_features) * 0.01)
            self.b = nn.Parameter(torch.zeros(base.out_features, rank))

        def forward(self, x):
            return self.base(x) + (x @ self.a.t().to(x.dtype)) @ self.b.t().to(x.dtype)

    for p in model.parameters():
        p.requires_grad_(False)
    for blk in model.blocks:
        blk.qkv = LoRA(blk.qkv)
        blk.fc1 = LoRA(blk.fc1)
    return model


def train_loop(torch, model, opt, vocab, bs, lengths, mark, keep=None):
    for ids, labels in mc.batches(torch, vocab, bs, lengths, "cuda"):
        mark("forward")
        logits = model(ids)
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), labels.flatten())
        if keep is not None:
            keep.append(logits.detach())  # the bug: a per-step output kept on the GPU
        mark("backward")
        loss.backward()
        mark("optimizer")
        opt.step()
        opt.zero_grad(set_to_none=True)


def case_lora_first_backward(torch, mark, label):
    # frozen bf16 base, small trainable adapters: the activations, not the state, fill the card
    model = lora_model(torch, 32768, 1024, 8, 16).cuda().to(torch.bfloat16)
    for n, p in model.named_parameters():
        if n.endswith(".a") or n.endswith(".b"):
            p.data = p.data.float()
    trainable = [p for p in model.parameters() if p.requires_grad]
    label["params"] = sum(p.numel() for p in model.parameters())
    label["trainable_params"] = sum(p.numel() for p in trainable)
    opt = torch.optim.AdamW(trainable, lr=1e-4)
    train_loop(torch, model, opt, 32768, 8, [1024] * 3, mark)


def case_capacity_first_backward(torch, mark, label):
    # every weight trainable in bf16: weights + grads + AdamW state can never fit under the limit
    model = mc.make_model(torch, 50304, 2048, 20, 16).cuda().to(torch.bfloat16)
    label["params"] = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    train_loop(torch, model, opt, 50304, 1, [128] * 3, mark)


def case_output_leak(torch, mark, label):
    model = mc.make_model(torch, 32768, 512, 4, 8).cuda()
    label["params"] = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    kept = []
    train_loop(torch, model, opt, 32768, 8, [256] * 40, mark, keep=kept)


def case_other_process(torch, mark, label):
    # the holder process was started by the driver; this run is an ordinary first_backward-sized job
    model = mc.make_model(torch, 32768, 1024, 8, 16).cuda()
    label["params"] = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    train_loop(torch, model, opt, 32768, 8, [512] * 3, mark)


def case_graph_pools(torch, mark, label):
    model = mc.make_model(torch, 8192, 512, 4, 8).cuda()
    opt = torch.optim.SGD(model.parameters(), lr=1e-3)
    static_ids = torch.randint(0, 8192, (8, 256), device="cuda")
    static_labels = torch.roll(static_ids, -1, 1)
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    mark("forward")
    with torch.cuda.stream(side):
        for _ in range(3):
            opt.zero_grad(set_to_none=True)
            loss = torch.nn.functional.cross_entropy(model(static_ids).flatten(0, 1), static_labels.flatten())
            loss.backward()
            opt.step()
    torch.cuda.current_stream().wait_stream(side)
    graph = torch.cuda.CUDAGraph()
    opt.zero_grad(set_to_none=True)
    with torch.cuda.graph(graph):
        static_loss = torch.nn.functional.cross_entropy(model(static_ids).flatten(0, 1), static_labels.flatten())
        static_loss.backward()
        opt.step()
    for _ in range(3):
        mark("forward")
        graph.replay()
    extra = []
    if hasattr(torch.cuda, "MemPool") and hasattr(torch.cuda, "use_mem_pool"):
        pool = torch.cuda.MemPool()
        with torch.cuda.use_mem_pool(pool):
            extra = [torch.empty((32 + 16 * i) * MiB, dtype=torch.uint8, device="cuda") for i in range(4)]
        del extra[1]
        label["mempool"] = True
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction((torch.cuda.memory_reserved() + 256 * MiB) / total)
    label["limit_bytes"] = torch.cuda.memory_reserved() + 256 * MiB
    mark("eval")
    big = torch.empty(1 * GiB, dtype=torch.uint8, device="cuda")  # noqa: F841 fails: pools hold the rest
    label["pool_keep"] = [graph, extra]


def case_compiled(torch, mark, label):
    model = mc.make_model(torch, 8192, 512, 4, 8).cuda()
    label["params"] = sum(p.numel() for p in model.parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    cmodel = torch.compile(model)
    train_loop(torch, cmodel, opt, 8192, 8, [256] * 3, mark)


def case_features(torch, mark, label, outdir):
    # annotations, user metadata, pinned host memory; then a segments-only dump
    model = mc.make_model(torch, 8192, 512, 4, 8).cuda()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    set_meta = getattr(torch.cuda.memory, "_set_memory_metadata", None)
    pinned = []
    for step in range(3):
        host = torch.randint(0, 8192, (8, 256), pin_memory=True)
        pinned.append(torch.empty(16 * MiB, dtype=torch.uint8, pin_memory=True))
        if step == 1:
            pinned.pop(0)
        with torch.profiler.record_function(f"train_step_{step}"):
            if set_meta:
                set_meta(f"step={step}")
            ids = host.to("cuda", non_blocking=True)
            labels = torch.roll(ids, -1, 1)
            mark("forward")
            with torch.profiler.record_function("forward"):
                logits = model(ids)
                loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), labels.flatten())
            mark("backward")
            with torch.profiler.record_function("backward"):
                loss.backward()
            mark("optimizer")
            with torch.profiler.record_function("optimizer"):
                opt.step()
                opt.zero_grad(set_to_none=True)
    if set_meta:
        set_meta("")
    label["has_set_memory_metadata"] = set_meta is not None
    label["keep"] = pinned


CASES = {
    "lora_first_backward": dict(fn=case_lora_first_backward, limit="first_backward", cause="first_backward"),
    "capacity_first_backward": dict(fn=case_capacity_first_backward, limit="first_backward", cause="capacity"),
    "output_leak": dict(fn=case_output_leak, limit="leak", cause="leak"),
    "other_process": dict(fn=case_other_process, limit="other", cause="other_process"),
    "graph_pools": dict(fn=case_graph_pools, limit=None, cause="graph_pools"),
    "compiled": dict(fn=case_compiled, limit=None, cause="healthy"),
    "features": dict(fn=case_features, limit=None, cause="healthy"),
}


def plain_model(torch, vocab, d, layers, heads):
    model = mc.make_model(torch, vocab, d, layers, heads).cuda()
    return model, sum(p.numel() for p in model.parameters())


def case_amp_first_backward(torch, mark, label):
    # fp32 weights, bf16 autocast: the classic mixed-precision run whose first backward does not fit
    model, label["params"] = plain_model(torch, 32768, 768, 8, 12)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    for ids, labels in mc.batches(torch, 32768, 16, [512] * 3, "cuda"):
        mark("forward")
        with torch.autocast("cuda", dtype=torch.bfloat16):
            logits = model(ids)
            loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1).float(), labels.flatten())
        mark("backward")
        loss.backward()
        mark("optimizer")
        opt.step()
        opt.zero_grad(set_to_none=True)


def case_fused_adam_step(torch, mark, label):
    model, label["params"] = plain_model(torch, 32768, 1024, 8, 16)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    train_loop(torch, model, opt, 32768, 2, [128] * 3, mark)


def case_sgd_momentum_step(torch, mark, label):
    model, label["params"] = plain_model(torch, 32768, 1024, 8, 16)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    train_loop(torch, model, opt, 32768, 2, [128] * 3, mark)


def case_eval_probs_kept(torch, mark, label):
    model, label["params"] = plain_model(torch, 32768, 512, 4, 8)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    train_loop(torch, model, opt, 32768, 8, [256] * 2, mark)
    model.eval()
    probs = []
    with torch.no_grad():
        for ids, _ in mc.batches(torch, 32768, 8, [256] * 400, "cuda"):
            mark("eval")
            probs.append(model(ids).softmax(-1))  # the bug: every batch's probabilities stay on the GPU


def case_longest_batch_accum(torch, mark, label):
    # gradient accumulation over 2 micro-batches; one long document in the 6th micro-batch
    model, label["params"] = plain_model(torch, 8192, 512, 6, 8)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    lengths = [256, 320, 192, 288, 256, 1280, 256, 224]
    micro = 0
    for ids, labels in mc.batches(torch, 8192, 8, lengths, "cuda"):
        mark("forward")
        loss = torch.nn.functional.cross_entropy(model(ids).flatten(0, 1), labels.flatten()) / 2
        mark("backward")
        loss.backward()
        micro += 1
        if micro % 2 == 0:
            mark("optimizer")
            opt.step()
            opt.zero_grad(set_to_none=True)


def case_loss_history_leak(torch, mark, label):
    # logged losses kept with their graphs (no .item()) and the graphs retained
    model, label["params"] = plain_model(torch, 8192, 512, 6, 8)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    history = []
    for ids, labels in mc.batches(torch, 8192, 8, [256] * 40, "cuda"):
        mark("forward")
        out = model(ids)
        loss = torch.nn.functional.cross_entropy(out.flatten(0, 1), labels.flatten())
        mark("backward")
        loss.backward(retain_graph=True)
        history.append(loss)
        mark("optimizer")
        opt.step()
        opt.zero_grad(set_to_none=True)


CASES.update({
    "amp_first_backward": dict(fn=case_amp_first_backward, limit="first_backward", cause="first_backward"),
    "fused_adam_step": dict(fn=case_fused_adam_step, limit="optimizer", cause="optimizer_step2"),
    "sgd_momentum_step": dict(fn=case_sgd_momentum_step, limit="optimizer", cause="optimizer_step2"),
    "eval_probs_kept": dict(fn=case_eval_probs_kept, limit="eval", cause="eval_accumulation"),
    "longest_batch_accum": dict(fn=case_longest_batch_accum, limit="longest", cause="longest_batch"),
    "loss_history_leak": dict(fn=case_loss_history_leak, limit="leak", cause="leak"),
})


def case_grad_accum_first_backward(torch, mark, label):
    # micro-batches of 8 accumulated 4 times: the first micro-batch's backward already does not fit
    model, label["params"] = plain_model(torch, 32768, 768, 8, 12)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    micro = 0
    for ids, labels in mc.batches(torch, 32768, 8, [1024] * 8, "cuda"):
        mark("forward")
        loss = torch.nn.functional.cross_entropy(model(ids).flatten(0, 1), labels.flatten()) / 4
        mark("backward")
        loss.backward()
        micro += 1
        if micro % 4 == 0:
            mark("optimizer")
            opt.step()
            opt.zero_grad(set_to_none=True)


def case_padded_longest_batch(torch, mark, label):
    # batches padded to their longest document; one batch holds a 2048-token document
    model, label["params"] = plain_model(torch, 8192, 512, 6, 8)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    train_loop(torch, model, opt, 8192, 8, [384, 256, 448, 320, 2048, 384, 256], mark)


def case_step2_forward(torch, mark, label):
    # AdamW state is created at the end of step 1; the forward of step 2 no longer fits
    model, label["params"] = plain_model(torch, 32768, 1024, 10, 16)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=False)
    train_loop(torch, model, opt, 32768, 8, [256] * 3, mark)


def case_load_capacity(torch, mark, label):
    # the weights alone (fp32) exceed the cap while the model is moved to the GPU
    mark("load")
    model = mc.make_model(torch, 50304, 2560, 24, 20)
    label["params"] = sum(p.numel() for p in model.parameters())
    model.cuda()


def case_hook_leak(torch, mark, label):
    # a forward hook stores one block's output every step for "analysis" and nobody clears it
    model, label["params"] = plain_model(torch, 8192, 512, 6, 8)
    stash = []
    model.blocks[3].register_forward_hook(lambda mod, inp, out: stash.append(out.detach()))
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    train_loop(torch, model, opt, 8192, 16, [512] * 40, mark)


def case_attention_large_allocation(torch, mark, label):
    # eager attention at 8k tokens: one score matrix is most of the budget
    model, label["params"] = plain_model(torch, 8192, 512, 2, 16)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    train_loop(torch, model, opt, 8192, 1, [8192] * 2, mark)


def case_eval_without_no_grad(torch, mark, label):
    # validation without torch.no_grad(): each batch's loss is kept for averaging, with its graph
    model, label["params"] = plain_model(torch, 32768, 512, 4, 8)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    train_loop(torch, model, opt, 32768, 8, [256] * 2, mark)
    model.eval()
    losses = []
    for ids, labels in mc.batches(torch, 32768, 8, [256] * 400, "cuda"):
        mark("eval")
        losses.append(torch.nn.functional.cross_entropy(model(ids).flatten(0, 1), labels.flatten()))


CASES.update({
    "grad_accum_first_backward": dict(fn=case_grad_accum_first_backward, limit="first_backward", cause="first_backward"),
    "padded_longest_batch": dict(fn=case_padded_longest_batch, limit="longest5", cause="longest_batch"),
    "step2_forward": dict(fn=case_step2_forward, limit="step2fwd", cause="optimizer_step2"),
    "load_capacity": dict(fn=case_load_capacity, limit="load", cause="capacity"),
    "hook_leak": dict(fn=case_hook_leak, limit="leak", cause="leak"),
    "attention_large_allocation": dict(fn=case_attention_large_allocation, limit="load", cause="large_allocation"),
    "eval_without_no_grad": dict(fn=case_eval_without_no_grad, limit="eval", cause="eval_accumulation"),
})



# A third held-out batch (session 5), written from the physics of each failure before any was run
# through oomlens; the limits put each failure where its cause says it must happen.
def case_foreach_step1_temporaries(torch, mark, label):
    # small batches: weights + grads + both AdamW moments fit; the multi-tensor step's intermediates
    # (whole-model lists of sqrt/denominators) on top of the new moments do not
    model, label["params"] = plain_model(torch, 32768, 1024, 10, 16)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, foreach=True)
    train_loop(torch, model, opt, 32768, 2, [128] * 3, mark)


def case_sgd_momentum_step2(torch, mark, label):
    # SGD's momentum buffers appear in the first step; step 2's backward needs them plus the activations
    model, label["params"] = plain_model(torch, 16384, 1024, 8, 16)
    opt = torch.optim.SGD(model.parameters(), lr=1e-3, momentum=0.9)
    train_loop(torch, model, opt, 16384, 16, [512] * 3, mark)


def case_fused_step2_backward(torch, mark, label):
    # fused AdamW: state created at the end of step 1; the second backward no longer fits
    model, label["params"] = plain_model(torch, 32768, 1024, 8, 16)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4, fused=True)
    train_loop(torch, model, opt, 32768, 8, [512] * 3, mark)


def case_eval_fragmented(torch, mark, label):
    # evaluation keeps each batch's logits on the GPU; lengths vary, so the cache ends up split
    model, label["params"] = plain_model(torch, 16384, 512, 4, 8)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    train_loop(torch, model, opt, 16384, 8, [256] * 2, mark)
    model.eval()
    kept = []
    lengths = [128 + (97 * i) % 384 for i in range(600)]
    with torch.no_grad():
        for ids, _ in mc.batches(torch, 16384, 8, lengths, "cuda"):
            mark("eval")
            kept.append(model(ids))  # the bug: logits of every batch stay on the GPU


CASES.update({
    "foreach_step1_temporaries": dict(fn=case_foreach_step1_temporaries, limit="step1opt", cause="optimizer_step2"),
    "sgd_momentum_step2": dict(fn=case_sgd_momentum_step2, limit="step2", cause="optimizer_step2"),
    "fused_step2_backward": dict(fn=case_fused_step2_backward, limit="step2bwd", cause="optimizer_step2"),
    "eval_fragmented": dict(fn=case_eval_fragmented, limit="eval", cause="eval_accumulation"),
})

def child(case, outdir, mode, limit):
    import torch
    torch.manual_seed(0)
    spec = CASES[case]
    total = torch.cuda.get_device_properties(0).total_memory
    if mode == "run" and limit > 0:
        torch.cuda.set_per_process_memory_fraction(limit / total)
    fields = []
    if mode == "run":
        fields = record(torch, enabled="all", context="all", max_entries=200000,
                        stacks="python" if case in ("output_leak", "eval_probs_kept", "fused_adam_step") else "all",
                        compile_context=(case == "compiled"),
                        global_record_annotations=(case == "features"),
                        record_pinned_host_memory=(case == "features"))
    phase = {"now": "load", "step": 0}
    peaks = []

    def mark(p):
        peaks.append([phase["step"], phase["now"], torch.cuda.max_memory_reserved()])
        torch.cuda.reset_peak_memory_stats()
        if p == "forward":
            phase["step"] += 1
        phase["now"] = p
        if mode == "probe" and spec["limit"] == "leak" and phase["step"] > 9:
            raise StopIteration
        if mode == "probe" and spec["limit"] == "eval" and p == "eval" and len(peaks) > 40:
            raise StopIteration

    label = {"case": case, "cause": spec["cause"], "torch": torch.__version__,
             "gpu": torch.cuda.get_device_name(0), "total_bytes": total, "limit_bytes": limit,
             "record_kwargs": fields, "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")}
    err = None
    try:
        if case == "features":
            spec["fn"](torch, mark, label, outdir)
        else:
            spec["fn"](torch, mark, label)
    except torch.cuda.OutOfMemoryError:
        err = traceback.format_exc()
    except StopIteration:
        pass
    if mode == "probe":
        peaks.append([phase["step"], phase["now"], torch.cuda.max_memory_reserved()])
        with open(os.path.join(outdir, case + ".probe.json"), "w") as f:
            json.dump(peaks, f)
        with open(os.path.join(outdir, case + ".params.json"), "w") as f:
            json.dump(label.get("params", 0), f)
        return
    label.pop("keep", None)
    label.pop("pool_keep", None)
    label.update(oom=err is not None, phase=phase["now"] if err else None, step=phase["step"])
    base = os.path.join(outdir, case)
    dump = torch.cuda.memory._dump_snapshot
    if "augment_with_fx_traces" in inspect.signature(dump).parameters and case == "compiled":
        dump(base + ".pickle", augment_with_fx_traces=True)
        label["augment_with_fx_traces"] = True
    else:
        dump(base + ".pickle")
    if case == "features":
        torch.cuda.memory._record_memory_history(enabled=None)
        with open(base + "_segments_only.pickle", "wb") as f:
            pickle.dump(torch.cuda.memory_snapshot(), f)
    torch.cuda.memory._record_memory_history(enabled=None)
    with open(base + ".summary.txt", "w") as f:
        f.write(torch.cuda.memory_summary())
    if err:
        with open(base + ".oom.txt", "w") as f:
            f.write(err)
    with open(base + ".json", "w") as f:
        json.dump(label, f, indent=1)


def choose(kind, peaks, params=0):
    def peak(pred):
        vals = [b for s, p, b in peaks if pred(s, p)]
        return max(vals) if vals else 0
    mid = lambda lo, hi: int((lo + hi) / 2)
    if kind == "first_backward":
        return mid(peak(lambda s, p: s == 1 and p == "forward"), peak(lambda s, p: s == 1 and p == "backward"))
    if kind == "leak":
        return mid(peak(lambda s, p: s == 1), peak(lambda s, p: s == 8))
    if kind == "optimizer":
        return mid(peak(lambda s, p: s == 1 and p in ("forward", "backward")),
                   peak(lambda s, p: (s == 1 and p == "optimizer") or s == 2))
    if kind == "eval":
        return mid(peak(lambda s, p: p != "eval"), peak(lambda s, p: p == "eval"))
    if kind == "longest5":
        return mid(peak(lambda s, p: s < 5), peak(lambda s, p: s == 5))
    if kind == "longest2":
        return mid(peak(lambda s, p: s < 2), peak(lambda s, p: s == 2))
    if kind == "step2fwd":
        return mid(peak(lambda s, p: s <= 1), peak(lambda s, p: s == 2 and p == "forward"))
    if kind == "load":
        return int(0.6 * peak(lambda s, p: True))
    if kind == "step1opt":
        # above fp32 weights + grads + both moments (16 B a parameter) and step 1's forward/backward,
        # below the first step's peak, where the foreach intermediates come on top of the new moments
        fixed = 16 * params
        return mid(max(int(fixed * 1.04), peak(lambda s, p: s == 1 and p != "optimizer")),
                   peak(lambda s, p: s == 1 and p == "optimizer"))
    if kind == "step2":
        return mid(peak(lambda s, p: s <= 1), peak(lambda s, p: s == 2))
    if kind == "step2bwd":
        return mid(max(peak(lambda s, p: s <= 1), peak(lambda s, p: s == 2 and p == "forward")),
                   peak(lambda s, p: s == 2 and p == "backward"))
    if kind == "longest":
        return mid(peak(lambda s, p: s != 6), peak(lambda s, p: s == 6))
    raise KeyError(kind)


def main():
    if len(sys.argv) >= 3 and sys.argv[1] == "--child":
        _, _, case, outdir, mode, limit = sys.argv
        return child(case, outdir, mode, int(limit))
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    for case in sys.argv[2:] or list(CASES):
        t = time.time()
        spec = CASES[case]
        limit = 0
        holder = None
        if spec["limit"] in ("first_backward", "leak", "optimizer", "eval", "longest", "longest5", "longest2",
                         "step2fwd", "load", "step1opt", "step2", "step2bwd"):
            subprocess.run([sys.executable, __file__, "--child", case, outdir, "probe", "0"])
            with open(os.path.join(outdir, case + ".probe.json")) as f, \
                    open(os.path.join(outdir, case + ".params.json")) as g:
                limit = choose(spec["limit"], json.load(f), json.load(g))
        elif spec["limit"] == "other":
            # another process takes all but 5 GiB of the card before the run starts
            code = ("import torch,time,sys;f,t=torch.cuda.mem_get_info();"
                    "x=torch.empty(f-5*(1<<30),dtype=torch.uint8,device='cuda');"
                    "print('held',x.numel(),flush=True);time.sleep(900)")
            holder = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
            print("holder:", holder.stdout.readline().strip(), flush=True)
        r = subprocess.run([sys.executable, __file__, "--child", case, outdir, "run", str(limit)])
        if holder:
            holder.kill()
            holder.wait()
        lab = os.path.join(outdir, case + ".json")
        got = json.load(open(lab)) if os.path.exists(lab) else {}
        print(f"{case:26s} rc={r.returncode} limit={limit / GiB:.2f}GiB oom={got.get('oom')} "
              f"phase={got.get('phase')} step={got.get('step')} {time.time() - t:.1f}s", flush=True)


if __name__ == "__main__":
    main()
