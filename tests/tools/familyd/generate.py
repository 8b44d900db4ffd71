#!/usr/bin/env python3
"""Family D: writes tests/data/scenarios_d/ byte for byte (deterministic; python3 standard library).

Every scenario is a program run twice on the emulated allocator (allocator.py): as written, where
it must run out of memory, and with the one change its label names as the cause undone (the
counterfactual: record_stream avoided, buffers resharded or bucketed, one shared graph pool, the
engine's memory released...), where it must run to its end. A scenario whose two runs do not
behave so is an error, not a label. The label's byte figures are counted from the run that failed.
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import writer  # noqa: E402
from run import Failed  # noqa: E402
import scenarios  # noqa: E402

OUT = os.path.normpath(os.path.join(HERE, "..", "..", "data", "scenarios_d"))


def simulate(spec, fixed):
    r = spec.make_run()
    try:
        spec.program(r, fixed)
    except Failed:
        if spec.unwind and not fixed:
            spec.unwind(r)
        return r, True
    return r, False


def label_for(spec, r, rf):
    f = r.failure
    trace = r.a.trace
    start = max(0, len(trace) - spec.ring)
    peak, peak_cats, _ = writer.live_timeline(trace, start)
    at_oom = writer.live_at(trace, f["trace_index"])
    pending_frames = {}
    for size, frames, cat, tag in f["pending_blocks"]:
        top = next((fr for fr in frames if fr["filename"].endswith(".py")), None)
        key = "%s:%s" % (top["filename"].rsplit("/", 1)[-1], top["name"]) if top else "(no python frame)"
        pending_frames[key] = pending_frames.get(key, 0) + size
    label = {
        "case": spec.case,
        "also_acceptable": spec.also_acceptable,
        "phase": f["phase"] if spec.phase is None else spec.phase,
        "step": f["step"],
        "capacity_bytes": r.card.total,
        "description": spec.describe(r, rf),
        "checkpointing": spec.checkpointing,
        "bytes_at_oom": writer.full_categories(at_oom),
        "bytes_at_peak": writer.full_categories(peak_cats),
        "peak_allocated_bytes": peak,
        "pending_free_bytes_at_oom": f["pending_before_sync"],
        "pending_free_frames": dict(sorted(pending_frames.items())),
        "private_pool_bytes_at_oom": f["private_pool_reserved"],
        "snapshot_dumped": "after_unwind" if spec.unwind else "at_oom",
        "pending_free_bytes_in_snapshot": sum(b.requested for s in r.a.segments for b in s.blocks
                                              if b.state == "active_pending_free"),
        "requested_bytes": f["requested"],
        "reserved_bytes_at_oom": f["reserved"],
        "alloc_retries": r.a.retries,
        "counterfactual": spec.counterfactual,
        "counterfactual_peak_reserved_bytes": rf.a.peak_reserved,
    }
    if spec.also_acceptable_without_text:
        label["also_acceptable_without_text"] = spec.also_acceptable_without_text
    if f["rl_phase"] or spec.rl_phase:
        label["rl_phase"] = spec.rl_phase or f["rl_phase"]
    label["framework"] = spec.framework
    label["control"] = spec.control
    return label


def main():
    global OUT
    if len(sys.argv) == 3 and sys.argv[1] == "--out":
        OUT = sys.argv[2]  # the test writes a second copy and compares it byte for byte
    elif len(sys.argv) != 1:
        raise SystemExit("usage: generate.py [--out DIR]")
    os.makedirs(OUT, exist_ok=True)
    for old in os.listdir(OUT):
        if old.endswith((".pickle", ".json", ".oom.txt", ".md")):
            os.remove(os.path.join(OUT, old))
    rows = []
    for spec in scenarios.ALL:
        r, failed = simulate(spec, fixed=False)
        if not failed:
            raise SystemExit("%s: the run as written did not run out of memory" % spec.name)
        rf, fixed_failed = simulate(spec, fixed=True)
        if fixed_failed:
            raise SystemExit("%s: the counterfactual (%s) ran out of memory too: %s in %s"
                             % (spec.name, spec.counterfactual, rf.failure["phase"], rf.failure["stack"][-1][2]))
        spec.check(r, rf)
        base = os.path.join(OUT, spec.name)
        writer.write_pickle(base + ".pickle", writer.snapshot_dict(r, spec.ring, spec.alloc_conf))
        text, _ = writer.oom_text(r, rank_prefix=spec.rank_prefix, url_era=spec.torch)
        with open(base + ".oom.txt", "w") as fh:
            fh.write(text)
        label = label_for(spec, r, rf)
        writer.write_json(base + ".json", label)
        rows.append((spec, label))
        print("%-58s %-22s %-9s pend %6.2f GiB  pools %6.2f GiB  events %d" % (
            spec.name, spec.case, label["phase"], label["pending_free_bytes_at_oom"] / 2 ** 30,
            label["private_pool_bytes_at_oom"] / 2 ** 30, min(spec.ring, len(r.a.trace))))
    import readme
    readme.write(OUT, rows)


if __name__ == "__main__":
    main()
