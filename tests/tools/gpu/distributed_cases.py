#!/usr/bin/env python3
"""Real single-GPU recordings for issue 22's causes, beside make_cases.py and extra_cases.py (same
output layout: <case>.pickle/.oom.txt/.summary.txt/.json, the .json the truth label).

Written in a session without a GPU: not run yet. The first session lent one runs it, tunes a case
whose OOM lands in another phase than its label says, and commits the results under
tests/data/real/distributed/ with a test reading them.

  pending_split_segments   pending_frees: 8 MiB tensors share the caching allocator's 20 MiB
                           segments two by two; one of each pair is handed to a busy side stream
                           with record_stream and freed. The next 8 MiB request finds no free block
                           (the freed ones wait for the side stream's event), cannot reserve a new
                           segment under the limit, and the allocator's last resort synchronises
                           the events and releases only unsplit segments: the freed blocks come back
                           inside segments whose partner is still live, and the request fails
                           although the pool now holds 64 free blocks of its size. Without
                           record_stream (synchronising before the free) it reuses one of them.
  fsdp2_reshard_false      communication_buffers: FSDP2 (fully_shard) with world size 1 still
                           all-gathers each block's parameters into a buffer of its own; with
                           reshard_after_forward=False every block's unsharded copy stays until its
                           backward. The limit sits between that run's peak and the peak with all but
                           the two blocks a pipelined all-gather keeps resharded.
  graph_capture_private_pool  graph_capture: a forward that fits eagerly, reusing the blocks its
                           warm-up cached, is captured with torch.cuda.graph; the capture allocates
                           from a private pool of its own, which the cached blocks cannot serve.

Usage:  python3 distributed_cases.py OUTDIR [case ...]   (make_cases.py beside it)
Needs:  a CUDA GPU, PyTorch >= 2.4 (fully_shard), NCCL.
"""
import json, os, subprocess, sys, time, traceback

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import make_cases as mc  # noqa: E402

GiB = 1 << 30
MiB = 1 << 20


def case_pending_split_segments(torch, mark, label):
    side = torch.cuda.Stream()
    kept, handed = [], []
    mark("forward")
    for _ in range(64):
        kept.append(torch.empty(8 * MiB, dtype=torch.uint8, device="cuda"))
        handed.append(torch.empty(8 * MiB, dtype=torch.uint8, device="cuda"))
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        torch.cuda._sleep(int(3e9))  # a few seconds of work queued ahead of the use below
        for tensor in handed:
            tensor.add_(1)
    for tensor in handed:
        tensor.record_stream(side)
    del tensor  # the loop variable would keep the last one alive
    label["pending_bytes"] = len(handed) * 8 * MiB
    handed.clear()  # free_requested now, free_completed once the side stream's event has passed
    total = torch.cuda.get_device_properties(0).total_memory
    limit = torch.cuda.memory_reserved() + 10 * MiB  # less than one more 20 MiB segment
    torch.cuda.set_per_process_memory_fraction(limit / total)
    label["limit_bytes"] = limit
    label["counterfactual"] = "synchronise before the free (no record_stream): the request reuses a freed block"
    extra = torch.empty(8 * MiB, dtype=torch.uint8, device="cuda")  # noqa: F841 fails
    label["keep"] = kept


def fully_shard_function(torch):
    try:
        from torch.distributed.fsdp import fully_shard
    except ImportError:
        from torch.distributed._composable.fsdp import fully_shard
    return fully_shard


def case_fsdp2_reshard_false(torch, mark, label):
    import torch.distributed as dist
    os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
    os.environ.setdefault("MASTER_PORT", "29533")
    dist.init_process_group("nccl", rank=0, world_size=1)
    fully_shard = fully_shard_function(torch)
    layers = 16
    model = mc.make_model(torch, 16384, 1536, layers, 12).cuda()
    for block in model.blocks:
        fully_shard(block, reshard_after_forward=False)
    fully_shard(model, reshard_after_forward=False)
    block_bytes = sum(p.numel() * p.element_size() for p in model.blocks[0].parameters())
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    lengths = [512] * 6
    batches = mc.batches(torch, 16384, 8, lengths, "cuda")
    ids, labels = next(batches)
    mark("forward")
    mc.train_step(torch, model, opt, ids, labels)  # step 1 makes Adam's state; its peak is unlimited
    mark("forward")
    mc.train_step(torch, model, opt, ids, labels)
    peak = torch.cuda.max_memory_reserved()
    # Resharded after forward, all but two blocks' unsharded copies would be gone before backward.
    saving = block_bytes * (layers - 2)
    limit = peak - saving // 2
    total = torch.cuda.get_device_properties(0).total_memory
    torch.cuda.set_per_process_memory_fraction(limit / total)
    label.update(limit_bytes=limit, unlimited_peak_reserved=peak, unsharded_block_bytes=block_bytes,
                 counterfactual="reshard_after_forward=True: about " + str(peak - saving) + " bytes reserved")
    torch.cuda.empty_cache()
    for ids, labels in batches:
        mark("forward")
        mc.train_step(torch, model, opt, ids, labels)


def case_graph_capture_private_pool(torch, mark, label):
    model = mc.make_model(torch, 16384, 1024, 8, 8).cuda().eval()
    static_ids = torch.randint(0, 16384, (8, 1024), device="cuda")
    side = torch.cuda.Stream()
    side.wait_stream(torch.cuda.current_stream())
    mark("eval")
    with torch.cuda.stream(side), torch.no_grad():
        for _ in range(3):
            model(static_ids)
    torch.cuda.current_stream().wait_stream(side)
    torch.cuda.synchronize()
    eager_peak = torch.cuda.max_memory_allocated()
    total = torch.cuda.get_device_properties(0).total_memory
    limit = torch.cuda.memory_reserved() + 64 * MiB  # room for eager reuse, not for a second pool
    torch.cuda.set_per_process_memory_fraction(limit / total)
    label.update(limit_bytes=limit, eager_peak_allocated=eager_peak,
                 counterfactual="run eagerly, or capture into a pool already holding the warm-up's blocks")
    graph = torch.cuda.CUDAGraph()
    mark("eval")
    with torch.no_grad(), torch.cuda.graph(graph):
        label["keep"] = model(static_ids)


CASES = {
    "pending_split_segments": dict(fn=case_pending_split_segments, cause="pending_frees", stacks="all"),
    "fsdp2_reshard_false": dict(fn=case_fsdp2_reshard_false, cause="communication_buffers", stacks="python"),
    "graph_capture_private_pool": dict(fn=case_graph_capture_private_pool, cause="graph_capture", stacks="all"),
}


def child(case, outdir):
    import torch
    torch.manual_seed(0)
    spec = CASES[case]
    torch.cuda.memory._record_memory_history(enabled="all", context="all", max_entries=200000,
                                             stacks=spec["stacks"])
    phase = {"now": "load", "step": 0}

    def mark(p):
        if p == "forward":
            phase["step"] += 1
        phase["now"] = p

    label = {"case": case, "cause": spec["cause"], "torch": torch.__version__,
             "gpu": torch.cuda.get_device_name(0), "total_bytes": torch.cuda.get_device_properties(0).total_memory,
             "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", "")}
    err = None
    try:
        spec["fn"](torch, mark, label)
    except torch.cuda.OutOfMemoryError:
        err = traceback.format_exc()
    label.pop("keep", None)
    label.update(oom=err is not None, phase=phase["now"] if err else None, step=phase["step"])
    base = os.path.join(outdir, case)
    torch.cuda.memory._dump_snapshot(base + ".pickle")
    torch.cuda.memory._record_memory_history(enabled=None)
    with open(base + ".summary.txt", "w") as f:
        f.write(torch.cuda.memory_summary())
    if err:
        with open(base + ".oom.txt", "w") as f:
            f.write(err)
    with open(base + ".json", "w") as f:
        json.dump(label, f, indent=1)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--child":
        return child(sys.argv[2], sys.argv[3])
    outdir = sys.argv[1]
    os.makedirs(outdir, exist_ok=True)
    for case in sys.argv[2:] or list(CASES):
        started = time.time()
        r = subprocess.run([sys.executable, __file__, "--child", case, outdir])
        path = os.path.join(outdir, case + ".json")
        got = json.load(open(path)) if os.path.exists(path) else {}
        print(f"{case:28s} rc={r.returncode} oom={got.get('oom')} phase={got.get('phase')} "
              f"step={got.get('step')} {time.time() - started:.1f}s", flush=True)


if __name__ == "__main__":
    main()
