#!/usr/bin/env python3
"""Measures the built oomlens on the serving family as a black box: `oomlens diagnose --json LOG`
for every log, the first diagnosis against the label, and whether any fix of any diagnosis is a
training remedy on an inference log. Prints the Markdown that measured.md holds.

    python3 tests/tools/servingfamily/measure.py BUILD/app/oomlens [--commit SHA]
"""

import argparse
import collections
import json
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
DATA = os.path.normpath(os.path.join(HERE, "..", "..", "data", "scenarios_serving"))

# The same pattern as tst_diagservingfamily's: a fix that only training has (smaller micro-batch,
# gradient accumulation, autocast, activation or gradient checkpointing, ZeRO, LoRA, optimizer state).
TRAINING_FIX = re.compile(r"micro-?batch|gradient accumulation|accumulat\w* gradients|autocast|mixed precision training|"
                          r"(activation|gradient) checkpointing|\bZeRO\b|\bLoRA\b|optimi[sz]er state|8-bit optimi[sz]er",
                          re.IGNORECASE)


def labels():
    with open(os.path.join(DATA, "labels.jsonl"), encoding="utf-8") as f:
        return [json.loads(line) for line in f if line.strip()]


def diagnose(binary, path):
    env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
    out = subprocess.run([binary, "diagnose", "--json", path], capture_output=True, text=True, env=env, timeout=120)
    if out.returncode != 0:
        return None, [], f"exit {out.returncode}: {out.stderr.strip()[:200]}"
    doc = json.loads(out.stdout)
    diagnoses = doc.get("diagnoses") or []
    top = diagnoses[0]["id"] if diagnoses else "(none)"
    fixes = [fx.get("title", "") for d in diagnoses for fx in d.get("fixes") or []]
    return top, fixes, ""


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("binary")
    parser.add_argument("--commit", default="")
    args = parser.parse_args()
    rows = labels()
    confusion = collections.Counter()
    right, leaks, lines = 0, [], []
    for row in rows:
        top, fixes, err = diagnose(args.binary, os.path.join(DATA, row["file"]))
        ok = top == row["expected"]
        right += ok
        confusion[(row["expected"], top)] += 1
        leaked = [f for f in fixes if TRAINING_FIX.search(f)] if not row["control"] else []
        if leaked:
            leaks.append((row["file"], leaked))
        lines.append(f"| `{row['file']}` | `{row['expected']}` | `{top}` | {'yes' if ok else 'no'} | "
                     f"{'; '.join(leaked) if leaked else ('-' if not row['control'] else 'n/a (training)')}{err} |")
    inference = [r for r in rows if not r["control"]]
    inf_right = sum(1 for r, l in zip(rows, lines) if not r["control"] and "| yes |" in l)
    out = []
    at = f" at commit {args.commit}" if args.commit else ""
    out.append(f"Measured once{at} with `oomlens diagnose --json` on each log (`measure.py`), before any rule "
               "for serving logs was looked at.")
    out.append("")
    out.append(f"- First diagnosis right: **{right}/{len(rows)}** ({inf_right}/{len(inference)} inference logs, "
               f"{right - inf_right}/{len(rows) - len(inference)} controls).")
    out.append(f"- Inference logs with a training fix among any diagnosis's fixes: **{len(leaks)}/{len(inference)}**.")
    out.append("")
    out.append("| log | expected | first diagnosis | right | training fixes offered |")
    out.append("|---|---|---|---|---|")
    out.extend(lines)
    out.append("")
    out.append("Confusion (expected -> first diagnosis, count):")
    out.append("")
    out.append("| expected | first diagnosis | count |")
    out.append("|---|---|---|")
    for (exp, got), n in sorted(confusion.items()):
        out.append(f"| `{exp}` | `{got}` | {n} |")
    print("\n".join(out))
    return 0


if __name__ == "__main__":
    sys.exit(main())
