#!/usr/bin/env python3
"""Writes family B: tests/data/scenarios_b/<name>.{pickle,oom.txt,summary.txt,json}.

    python3 tests/tools/familyb/generate.py [--out DIR] [--only NAME] [--verbose]

Standard library only; the same code writes the same bytes (fixed seeds, no clock).
Written independently of tests/tools/make_scenarios.py and of the diagnosis rules: the labels
come from the simulated physics (see README.md in the output folder).
"""

import argparse
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import render  # noqa: E402
import scenarios  # noqa: E402
from loops import CODE  # noqa: E402

HERE = os.path.dirname(os.path.abspath(__file__))
DEFAULT_OUT = os.path.normpath(os.path.join(HERE, "..", "..", "data", "scenarios_b"))


def python_frames(frames):
    out = []
    for f in reversed(frames):
        name, filename = f["name"], f["filename"]
        if filename == "??" or filename.endswith(".c") or filename.endswith(".cpp"):
            continue
        out.append((filename, f["line"], name))
    return out


def traceback_frames(result):
    """The Python frames the user's traceback shows (outermost first)."""
    oom = result.oom
    frames = python_frames(oom.frames)
    if frames:
        return frames
    return list(oom.context)


def write(result, out):
    name = result.name
    base = os.path.join(out, name)
    data = render.snapshot(result.dev, result.era if result.era >= "2.1" else "2.1", result.max_entries, result.conf)
    render.write_pickle(base + ".pickle", data, result.protocol)
    if result.oom is not None:
        opts = dict(result.text)
        smi = None
        if "smi" in opts:
            card, used, procs = opts.pop("smi")
            total_mib = int(scenarios.CARDS[card][0] * 1024)
            smi = render.nvidia_smi(total_mib + 0, used, procs, name=scenarios.CARDS[card][1])
        frames = traceback_frames(result)
        text = render.oom_text(result.oom.report, result.era, frames, CODE, procs=opts.get("procs", "self"),
                               pid=opts.get("pid", 0), other=opts.get("other"), width=opts.get("width"),
                               prefix=opts.get("prefix", ""), python311=opts.get("python311", False), smi=smi)
        with open(base + ".oom.txt", "w") as f:
            f.write(text)
    if result.summary:
        with open(base + ".summary.txt", "w") as f:
            f.write(render.memory_summary(result.dev, new_era=result.era >= "2.0"))
    label = dict(result.label)
    with open(base + ".json", "w") as f:
        json.dump(label, f, indent=2, sort_keys=False)
        f.write("\n")


README_HEAD = """# Scenario family B

Simulated PyTorch training runs that died of a CUDA OOM, written by `tests/tools/familyb/generate.py`
(standard library only; `python3 tests/tools/familyb/generate.py` rewrites this folder byte for byte).
Family B exists to *check* the diagnosis on cases it was not tuned on: it shares no code, model
shapes, numbers or loop structure with family A (`tests/data/scenarios/`, from `make_scenarios.py`),
and it was written without reading the diagnosis rules.

How a scenario is made: a transformer training loop (GPT-2- and Llama-shaped models: fused QKV or
separate projections, grouped-query attention, eager O(seq^2) or SDPA attention, tied or untied
embeddings; AMP with fp32 weights, or bf16 weights with fp32 master weights; foreach, fused and
8-bit AdamW, SGD with momentum; a custom loop, a Trainer-style loop with evaluation, or a
Lightning-style closure where forward and backward run inside `optimizer.step(closure)`) issues
its allocations to an emulation of the CUDA caching allocator (512 B rounding; small pool of 2 MiB
segments for requests up to 1 MiB; 20 MiB segments for 1-10 MiB; 2 MiB rounding above; best fit;
splitting; merging; free-all-cached-segments-and-retry before the OOM) on a card of a real size,
with the CUDA context and any other process's memory taken off the top.

Per scenario:

| file | what |
|---|---|
| `<name>.pickle` | the snapshot as `torch.cuda.memory._snapshot()` lays it out for 2.1+ (`segments` with `blocks`, `device_traces`; `allocator_settings`, `external_annotations`, `compile_context`, `user_metadata` by era), pickle protocol 4. Stacks are Python-only (autograd-engine allocations then carry no frames) or `stacks="all"` style (allocator, ATen and CPython frames mixed in). Traces are ring buffers of the last 1,500-5,000 events, so long runs start mid-run with older live blocks only in `segments`. Some are dumped after the exception unwound (the failed step's tensors already freed). |
| `<name>.oom.txt` | the traceback and the OOM message as pasted: message templates of 2.0 (`reserved in total`), 2.1 (`capacty`), 2.2-2.7 and 2.8+; some re-wrapped at 120 columns, some `[rank0]:`-prefixed, one with an `nvidia-smi` table; container runs list the run itself as `Process N has ...` |
| `<name>.summary.txt` | `torch.cuda.memory_summary()` at the OOM, for some |
| `<name>.json` | the truth label |

Label format:

```
{"case": "<the correct top diagnosis id>",
 "also_acceptable": [ids also right as the top diagnosis; usually empty],
 "also_acceptable_without_text": [optional: ids that cannot be told apart from the snapshot alone],
 "phase": "load|data|forward|backward|optimizer|eval",   # where the failing request was made
 "step": N,                                               # training step (0-based) at the failure
 "capacity_bytes": N,                                     # the card's total memory
 "description": "why this is the right answer, from the physics of the run"}
```

Every label is asserted by the generator against the simulation (phase and step of the OOM, fixed
state against the card, free-but-split memory for fragmentation, the request's share of the card for
large allocations, ...), so a change that breaks a label's physics fails the generator.

## Scenarios

| scenario | case | phase | step | why |
|---|---|---|---|---|
"""


def readme(results):
    rows = []
    for r in results:
        label = r.label
        rows.append("| `%s` | `%s` | %s | %d | %s |" % (r.name, label["case"], label["phase"], label["step"],
                                                      label["description"].replace("|", "/")))
    return README_HEAD + "\n".join(rows) + "\n"


def describe(result):
    r = result.oom.report if result.oom else {}
    tags = result.dev.live_bytes_by_tag()
    live = ", ".join("%s %.2f" % (k, v / 2**30) for k, v in sorted(tags.items(), key=lambda kv: -kv[1]))
    return ("%-48s %-18s %-9s step %-3s req %8.1f MiB  free %6.2f GiB  alloc %6.2f  reserved %6.2f  largest %7.1f MiB"
            "  events %d  live GiB: %s" % (
                result.name, result.label["case"], result.label["phase"], result.label["step"], r.get("rounded", 0) / 2**20,
                r.get("free", 0) / 2**30, r.get("allocated", 0) / 2**30, r.get("reserved", 0) / 2**30,
                r.get("largest_free", 0) / 2**20, len(result.dev.trace), live))


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", default=DEFAULT_OUT)
    parser.add_argument("--only")
    parser.add_argument("--verbose", action="store_true")
    args = parser.parse_args()
    os.makedirs(args.out, exist_ok=True)
    results = []
    for make in scenarios.ALL:
        result = make()
        results.append(result)
        if args.only and result.name != args.only:
            continue
        if result.unwind:
            result.run.unwind()
        write(result, args.out)
        if args.verbose:
            print(describe(result))
    if not args.only:
        with open(os.path.join(args.out, "README.md"), "w") as f:
            f.write(readme(results))
    return 0


if __name__ == "__main__":
    sys.exit(main())
