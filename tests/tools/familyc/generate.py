#!/usr/bin/env python3
"""Writes tests/data/scenarios_c/ (family C): simulated training runs that died of a CUDA OOM,
each with its snapshot pickle, the pasted OOM text, sometimes memory_summary(), and the label
the simulation proves. Standard library only; reruns are byte-identical.

    python3 tests/tools/familyc/generate.py [--only NAME] [--probe] [--out DIR]

--probe prints where each run failed without checking or writing labels (for tuning a scenario)."""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import physics  # noqa: E402
import snapshot  # noqa: E402
import texts  # noqa: E402
from allocator import OutOfMemory, GiB, MiB  # noqa: E402
from frames import Frames  # noqa: E402
from run import Run  # noqa: E402
from scenarios import SCENARIOS  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.normpath(os.path.join(HERE, "..", "..", "data", "scenarios_c"))


def simulate(spec):
    frames = Frames(stacks=spec.get("stacks", "python"), era=spec["era"], site_packages=spec.get("site", "/opt/conda/lib/python3.11/site-packages"),
                    user_dir=spec.get("user_dir", "/workspace/train"))
    card_total = spec["card"][0]
    run = Run(spec["model"](), card_total, context=spec.get("context", 512 * MiB), frames=frames, other=spec.get("other", 0),
              fraction=spec.get("fraction"), trace_entries=spec.get("trace_entries", 3000), optimizer=spec.get("optimizer", "adamw_foreach"),
              master_weights=spec.get("master", False), ddp=spec.get("ddp", False), loop=spec.get("loop", "custom"),
              start_us=spec.get("start_us", 1761000000000000), compiled=spec.get("compiled", False))
    run.current_shape = {}
    try:
        spec["program"](run)
    except OutOfMemory as oom:
        result = {"info": oom.info, "phase": run.phase, "step": run.step, "chain": run.last_chain, "shape": run.current_shape}
        if spec.get("unwind"):
            run.unwind()
        return run, result
    raise physics.LabelError(f"{spec['name']}: the run never ran out of memory")


def counterfactual(spec):
    """The run without the other process (or without the memory-fraction limit) must not fail:
    that is what makes the other process (or the limit) the cause."""
    remove = {"other_process": {"other": 0}, "memory_fraction_cap": {"fraction": None}}.get(spec["case"])
    if remove is None:
        return
    try:
        simulate(dict(spec, **remove))
    except physics.LabelError:
        return  # ran its whole program without an OOM
    raise physics.LabelError(f"{spec['name']}: still fails without {list(remove)[0]}")


def oom_text(spec, run, result):
    info = result["info"]
    era = spec["era"]
    text = spec.get("text", {})
    a = run.alloc
    own = info["reserved"] + a.context_bytes
    mode = text.get("processes", "self")
    processes = []
    if mode == "self":
        processes = [(None, own)]
    elif mode == "other":
        processes = [(text["pid"], a.other_process_bytes), (None, own)]
    elif mode == "container":
        processes = [(text["pid"], own)]
    message = texts.oom_message(era, info, a.card_total, spec.get("device", 0), processes, allowed=a.allowed)
    chain = result["chain"] or []
    exception = text.get("exception", texts.EXCEPTION[era])
    body = texts.traceback_text(chain, run.frames, exception, message, wrap=text.get("wrap"), prefix=text.get("prefix", ""),
                                extra_before=text.get("before", ""))
    if text.get("smi"):
        used = (a.card_total - info["device_free"]) // MiB
        procs = [(text["pid"], text.get("other_name", "/usr/bin/python3"), a.other_process_bytes // MiB),
                 (text.get("own_pid", 31337), "python", own // MiB)] if a.other_process_bytes else [(text.get("own_pid", 31337), "python", own // MiB)]
        body += "\n$ nvidia-smi\n" + texts.nvidia_smi(spec["card"][1], a.card_total // MiB, used, procs)
    return body


def write(spec, run, result, out):
    name = spec["name"]
    snap = snapshot.build(run.alloc, spec["era"], device=spec.get("device", 0), device_count=spec.get("device_count", 1),
                          conf=spec.get("alloc_conf", ""), compile_context=spec.get("compile_context", "N/A"))
    with open(os.path.join(out, name + ".pickle"), "wb") as f:
        f.write(snapshot.dumps(snap, spec.get("protocol", 4)))
    with open(os.path.join(out, name + ".oom.txt"), "w") as f:
        f.write(oom_text(spec, run, result))
    if spec.get("summary"):
        with open(os.path.join(out, name + ".summary.txt"), "w") as f:
            f.write(texts.memory_summary(run.alloc, spec.get("device", 0), legacy=False, abbreviated=spec.get("summary") == "abbreviated"))
    label = {"case": spec["case"], "also_acceptable": spec.get("also", [])}
    if spec.get("also_without_text"):
        label["also_acceptable_without_text"] = spec["also_without_text"]
    label["phase"] = spec["phase"] if spec["phase"] is not None else result["phase"]
    label["step"] = spec["step"] if spec["step"] is not None else result["step"]
    label["capacity_bytes"] = run.alloc.card_total
    label["description"] = spec["describe"](run, result)
    with open(os.path.join(out, name + ".json"), "w") as f:
        json.dump(label, f, indent=1)
        f.write("\n")
    return label


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--only")
    parser.add_argument("--probe", action="store_true")
    parser.add_argument("--out", default=DEFAULT_OUT)
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    rows = []
    for spec in SCENARIOS:
        if args.only and spec["name"] != args.only:
            continue
        run, result = simulate(spec)
        info = result["info"]
        if args.probe:
            print(f"{spec['name']}: {result['phase']} step {result['step']} request {info['rounded'] / MiB:.1f} MiB allocated "
                  f"{info['allocated'] / GiB:.2f} reserved {info['reserved'] / GiB:.2f} free {info['device_free'] / GiB:.2f} "
                  f"largest free {info['largest_free'] / MiB:.1f} MiB fixed {run.projected_fixed_bytes() / GiB:.2f} "
                  f"usable {physics.usable(run) / GiB:.2f} events {run.alloc.events} peaks "
                  + " ".join(f"{s['peak'] / GiB:.1f}" for s in run.step_log[:6]))
            try:
                physics.check(spec["case"], run, result, **{k: spec[k] for k in ("phase", "step", "batch_size_of") if k in spec})
            except physics.LabelError as e:
                print("   LABEL FAILS:", e)
            continue
        try:
            physics.check(spec["case"], run, result, **{k: spec[k] for k in ("phase", "step", "batch_size_of") if k in spec})
        except physics.LabelError as e:
            raise physics.LabelError(f"{spec['name']}: {e}") from None
        counterfactual(spec)
        label = write(spec, run, result, args.out)
        rows.append((spec["name"], label))
    if not args.probe and not args.only:
        write_readme(args.out, rows)


def write_readme(out, rows):
    with open(os.path.join(HERE, "README.template.md")) as f:
        head = f.read()
    lines = [head.rstrip("\n"), "", "## Scenarios", "", "| scenario | case | phase | step | why |", "|---|---|---|---|---|"]
    for name, label in rows:
        lines.append(f"| `{name}` | `{label['case']}` | {label['phase']} | {label['step']} | {label['description']} |")
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
