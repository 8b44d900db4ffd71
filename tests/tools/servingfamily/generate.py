#!/usr/bin/env python3
"""Writes the serving family (tests/data/scenarios_serving): console pastes of inference engines
running out of memory, their labels (labels.jsonl) and the README, byte for byte.

    python3 tests/tools/servingfamily/generate.py [--out DIR]

Python 3 standard library only. Every figure in a log is computed from its scenario's inputs
(parameter counts, attention geometry, the engine's budget arithmetic, PyTorch's out-of-memory
template); the scenario functions assert that each run really fails and that the labelled fix has
room. See README.template.md for how the family was made and measured.
"""

import argparse
import json
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import library_logs  # noqa: E402
import server_logs  # noqa: E402
import vllm_logs  # noqa: E402

IDS = ("kv_cache_budget", "engine_batch", "graph_capture", "other_process", "capacity", "large_allocation")
ENGINES = ("vllm", "sglang", "tgi", "trtllm", "hf_generate", "diffusers")
DEFAULT_OUT = os.path.normpath(os.path.join(HERE, "..", "..", "data", "scenarios_serving"))


def scenarios():
    rows = []
    for make in vllm_logs.SCENARIOS + server_logs.SCENARIOS + library_logs.SCENARIOS:
        name, text, label = make()
        row = {"file": name, "engine": label["engine"], "version": label["version"],
               "workload": label.get("workload", "inference"), "stage": label["stage"],
               "expected": label["expected"], "control": label.get("control", False),
               "first_fix_knob": label["first_fix_knob"], "physics": label["physics"],
               "noise": label.get("noise", [])}
        check(row, text)
        rows.append((row, text))
    rows.sort(key=lambda r: r[0]["file"])
    names = [r["file"] for r, _ in rows]
    assert len(set(names)) == len(names), "two scenarios share a file name"
    return rows


def check(row, text):
    assert row["engine"] in ENGINES, row
    assert "\t" not in text and text.endswith("\n")
    if row["control"]:
        assert row["workload"] == "training" and row["expected"] not in IDS, row
    else:
        assert row["workload"] == "inference" and row["expected"] in IDS, row


def coverage(rows):
    per_id = {i: sorted({r["engine"] for r, _ in rows if r["expected"] == i}) for i in IDS}
    counts = {i: sum(1 for r, _ in rows if r["expected"] == i) for i in IDS}
    for i in IDS:
        assert counts[i] >= 2 and len(per_id[i]) >= 2, (i, per_id[i])
    assert sum(1 for r, _ in rows if r["control"]) == 2
    assert len(rows) >= 18
    return counts, per_id


def readme(rows):
    with open(os.path.join(HERE, "README.template.md"), encoding="utf-8") as f:
        template = f.read()
    with open(os.path.join(HERE, "measured.md"), encoding="utf-8") as f:
        measured = f.read()
    table = ["| log | engine | version | stage | expected | first fix | physics |", "|---|---|---|---|---|---|---|"]
    for r, _ in rows:
        expected = r["expected"] + (" (control)" if r["control"] else "")
        table.append(f"| `{r['file']}` | {r['engine']} | {r['version']} | {r['stage']} | `{expected}` | "
                     f"`{r['first_fix_knob']}` | {r['physics']} |")
    return template.replace("@TABLE@", "\n".join(table)).replace("@MEASURED@", measured.rstrip("\n"))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", default=DEFAULT_OUT)
    args = parser.parse_args()
    rows = scenarios()
    coverage(rows)
    os.makedirs(args.out, exist_ok=True)
    for row, text in rows:
        with open(os.path.join(args.out, row["file"]), "w", encoding="utf-8", newline="\n") as f:
            f.write(text)
    with open(os.path.join(args.out, "labels.jsonl"), "w", encoding="utf-8", newline="\n") as f:
        for row, _ in rows:
            f.write(json.dumps(row, ensure_ascii=False, sort_keys=False) + "\n")
    with open(os.path.join(args.out, "README.md"), "w", encoding="utf-8", newline="\n") as f:
        f.write(readme(rows))
    print(f"wrote {len(rows)} logs to {args.out}")


if __name__ == "__main__":
    main()
