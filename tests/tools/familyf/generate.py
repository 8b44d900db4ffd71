#!/usr/bin/env python3
"""Family F: simulated PyTorch memory snapshots of runs that died of a CUDA OOM, each labelled
by a counterfactual. For every scenario the generator runs the program as written (it must run
out of memory), with the one change its label names (it must complete), with each change that
must not be enough (it must still run out of memory), and, where the label claims the memory
simply is not there, with a cache that never fragments (it must still run out of memory). It
refuses to write anything if one of these does not hold.

    python3 tests/tools/familyf/generate.py [--out DIR]

Writes <name>.pickle (the snapshot, PyTorch 2.8+ layout), <name>.oom.txt (the traceback and OOM
message), <name>.json (the label) and README.md to DIR (default tests/data/scenarios_f).
Python 3 standard library only; byte for byte reproducible."""
import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import scenarios  # noqa: E402
import writer  # noqa: E402
from cards import GiB  # noqa: E402

CATEGORIES = ["parameters", "gradients", "optimizer_state", "activations", "temporaries", "inputs", "communication",
              "kv_cache"]


class Refused(Exception):
    pass


def window_start(run, max_entries):
    n = len(run.rec.entries)
    return 0 if max_entries is None or n <= max_entries else n - max_entries


def by_category(d):
    return {c: int(d.get(c, 0)) for c in CATEGORIES}


def peak_of(run, start=0):
    totals = run.rec.totals[start:]
    if not totals:
        return 0, {}
    i = max(range(len(totals)), key=lambda k: (totals[k], -k))
    return totals[i], run.rec.by_cat[start + i]


def check(sc):
    """Runs every variant and returns (written run, facts) or raises Refused."""
    written, ok = sc.simulate("written")
    if ok:
        raise Refused("%s: the program as written completed" % sc.name)
    fixed, ok = sc.simulate("fix")
    if not ok:
        raise Refused("%s: the counterfactual (%s) ran out of memory too" % (sc.name, sc.change))
    facts = {"fixed_peak": max(fixed.rec.totals), "still": []}
    for variant, what in sc.still:
        run, ok = sc.simulate(variant)
        if ok:
            raise Refused("%s: '%s' completed, so the label would be ambiguous" % (sc.name, what))
        facts["still"].append({"change": what, "phase": run.oom["phase"], "step": run.oom["step"]})
    if sc.tight:
        ideal, ok = sc.simulate("ideal")
        if ok:
            raise Refused("%s: with a cache that never fragments the run completes (a fragmentation case)" % sc.name)
        facts["ideal"] = {"phase": ideal.oom["phase"], "step": ideal.oom["step"]}
    return written, facts


def oom_text(sc, run):
    info = run.oom
    dev = run.device
    procs = [(0, run.alloc.reserved + dev.context_bytes + dev.nccl_bytes, True)]
    for pid, used, start in dev.others:
        if run.alloc.tick >= start:
            procs.append((pid, used, False))
    message = writer.oom_message(info, procs)
    return writer.traceback_text(info["main_py"], message, sc.rank)


def label(sc, run, facts):
    start = window_start(run, sc.max_entries)
    peak, peak_cats = peak_of(run, start)
    at_oom = run.rec.by_cat[run.oom["entry_index"]]
    pending = sum(b.requested for b in run.alloc.pending)
    private = sum(seg.size for seg in run.alloc.segments.values() if seg.pool.pool_id != (0, 0))
    return {
        "case": sc.case,
        "also_acceptable": sc.also,
        "also_acceptable_without_text": sc.also_without_text,
        "control": sc.control,
        "story": sc.story,
        "physics": sc.physics,
        "phase": run.oom["phase"],
        "step": run.oom["step"],
        "card": sc.card[0],
        "capacity_bytes": sc.card[1],
        "world_size": sc.world,
        "checkpointing": sc.checkpointing,
        "failed_request_bytes": run.oom["size"],
        "device_free_at_oom": run.oom["device_free"],
        "reserved_at_oom": run.oom["reserved"],
        "peak_allocated_bytes": peak,
        "bytes_at_peak": by_category(peak_cats),
        "bytes_at_oom": by_category(at_oom),
        "pending_free_bytes_at_oom": pending,
        "private_pool_bytes_at_oom": private,
        "trace_max_entries": sc.max_entries,
        "counterfactual": {"change": sc.change, "completes": True,
                           "peak_allocated_bytes_as_written": max(run.rec.totals),
                           "peak_allocated_bytes_with_change": facts["fixed_peak"]},
        "still_fails": facts["still"],
        "fails_without_fragmentation": "ideal" in facts,
    }


def gib(n):
    return "%.1f GiB" % (n / GiB)


def readme(rows, measured):
    lines = ["# Family F: simulated OOM snapshots of FSDP2, ZeRO-3, CUDA-graph, compile, shared-card and "
             "colocated-engine runs", "",
             "Written by `tests/tools/familyf/generate.py` (do not edit by hand; run it with `--out` and commit what it "
             "writes). Each scenario is a program run on a caching-allocator simulation written from "
             "`c10/cuda/CUDACachingAllocator.cpp` (512 B rounding, 2 MiB small-pool segments, 20 MiB segments for "
             "1-10 MiB requests, best fit per stream, split and merge, record_stream pending frees, private pools "
             "for CUDA graph capture, the release-and-retry OOM path), recorded the way "
             "`torch.cuda.memory._record_memory_history(stacks=\"all\")` records it, and written as "
             "`_dump_snapshot` writes it (PyTorch 2.8+ layout) with the OOM message of the same allocator state.",
             "", "Every label comes from counterfactuals, checked each time the generator runs: the program as written "
             "runs out of memory; with the one change the label names it completes; with each change listed under "
             "*still fails* it still runs out of memory; and, where the last column says so, it runs out of memory "
             "even with a cache that never fragments (what is allocated is simply more than the card less the "
             "CUDA context, NCCL and other processes). The generator refuses to write a scenario where any of "
             "these does not hold.", "",
             "| scenario | label | card x GPUs | fails in (step) | physics | counterfactual: change -> completes (peak as "
             "written -> with the change) | still fails with | no fragmentation |",
             "|---|---|---|---|---|---|---|---|"]
    for name, lab in rows:
        cf = lab["counterfactual"]
        still = "; ".join(s["change"] for s in lab["still_fails"]) or "-"
        lines.append("| `%s` | %s | %s x %d | %s (%d) | %s | %s (%s -> %s) | %s | %s |" % (
            name, lab["case"], lab["card"], lab["world_size"], lab["phase"], lab["step"], lab["physics"],
            cf["change"], gib(cf["peak_allocated_bytes_as_written"]), gib(cf["peak_allocated_bytes_with_change"]),
            still, "yes" if lab["fails_without_fragmentation"] else "not claimed"))
    lines += ["", "Label fields: `bytes_at_peak` / `bytes_at_oom` are the simulation's live bytes by what each tensor "
              "is for (product.md's bands) at the peak of the recorded window and at the failure; "
              "`peak_allocated_bytes` is that peak; `trace_max_entries` is the ring buffer the run recorded with "
              "(null: everything). Collectives' outputs that become the gradient (FSDP2's reduce-scatter output) "
              "are `gradients`; all-gathered parameters, reduce-scatter inputs, IPG buckets and gathered state "
              "dicts are `communication`.", ""]
    if measured:
        lines += [measured.rstrip("\n"), ""]
    return "\n".join(lines)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", default=os.path.join(HERE, "..", "..", "data", "scenarios_f"))
    args = ap.parse_args()
    out = os.path.abspath(args.out)
    os.makedirs(out, exist_ok=True)
    if len(scenarios.SCENARIOS) < 16:
        sys.exit("family F needs at least 16 scenarios")
    files = {}
    rows = []
    try:
        for sc in scenarios.SCENARIOS:
            run, facts = check(sc)
            start = window_start(run, sc.max_entries)
            entries = run.rec.entries[start:]
            files[sc.name + ".pickle"] = writer.snapshot_bytes(run.alloc, entries, run.annotations)
            files[sc.name + ".oom.txt"] = oom_text(sc, run).encode()
            lab = label(sc, run, facts)
            files[sc.name + ".json"] = (json.dumps(lab, indent=1) + "\n").encode()
            rows.append((sc.name, lab))
            print("%-72s %-22s OOM in %s step %d; completes with the change" % (sc.name, sc.case, lab["phase"], lab["step"]))
    except Refused as e:
        sys.exit("refused: %s" % e)
    measured_path = os.path.join(HERE, "measured.md")
    measured = open(measured_path).read() if os.path.exists(measured_path) else ""
    files["README.md"] = readme(rows, measured).encode()
    for name, data in sorted(files.items()):
        with open(os.path.join(out, name), "wb") as f:
            f.write(data)


if __name__ == "__main__":
    main()
