#!/usr/bin/env python3
"""Family E: writes tests/data/scenarios_e/ byte for byte (deterministic; python3 standard library).

A held-out family: written without reading oomlens's diagnosis rules, on family D's simulation
(../familyd: allocator emulation, frames, loop, FSDP2 and engine modules, imported, not copied) with
the allocator's out-of-memory path as upstream writes it (common.py). Every scenario is a program
run twice: as written, where it must run out of memory, and with the one change its label names as
the cause undone, where it must run to its end. The label's byte figures are counted from the run
that failed. The measured results are in tests/data/scenarios_e/README.md; the scenarios were frozen
before that measurement and are not to be tuned to it."""

import importlib.util
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)

import common  # noqa: E402  (puts ../familyd on the path)
import writer  # noqa: E402

_spec = importlib.util.spec_from_file_location("familyd_generate", os.path.join(common.FAMILYD, "generate.py"))
familyd_generate = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(familyd_generate)

import e_pending  # noqa: E402
import e_comm  # noqa: E402
import e_graph  # noqa: E402
import e_rl  # noqa: E402
import e_controls  # noqa: E402

OUT = os.path.normpath(os.path.join(HERE, "..", "..", "data", "scenarios_e"))
MODULES = (e_pending, e_comm, e_graph, e_rl, e_controls)


def all_specs():
    specs = []
    for mod in MODULES:
        for make in mod.ALL:
            spec = make()
            spec.control = mod is e_controls
            specs.append(spec)
    return specs


def main():
    out = OUT
    if len(sys.argv) == 3 and sys.argv[1] == "--out":
        out = sys.argv[2]  # the test writes a second copy and compares it byte for byte
    elif len(sys.argv) != 1:
        raise SystemExit("usage: generate.py [--out DIR]")
    os.makedirs(out, exist_ok=True)
    for old in os.listdir(out):
        if old.endswith((".pickle", ".json", ".oom.txt")):
            os.remove(os.path.join(out, old))
    rows = []
    for spec in all_specs():
        r, failed = familyd_generate.simulate(spec, fixed=False)
        if not failed:
            raise SystemExit("%s: the run as written did not run out of memory" % spec.name)
        rf, fixed_failed = familyd_generate.simulate(spec, fixed=True)
        if fixed_failed:
            raise SystemExit("%s: the counterfactual (%s) ran out of memory too: %s in %s"
                             % (spec.name, spec.counterfactual, rf.failure["phase"], rf.failure["stack"][-1][2]))
        spec.check(r, rf)
        base = os.path.join(out, spec.name)
        writer.write_pickle(base + ".pickle", writer.snapshot_dict(r, spec.ring, spec.alloc_conf))
        text, _ = writer.oom_text(r, rank_prefix=spec.rank_prefix, url_era=spec.torch)
        with open(base + ".oom.txt", "w") as fh:
            fh.write(text)
        label = familyd_generate.label_for(spec, r, rf)
        writer.write_json(base + ".json", label)
        rows.append((spec, label))
        print("%-66s %-22s %-9s step %-3d pend %6.2f GiB  pools %6.2f GiB  cf peak %6.2f GiB" % (
            spec.name, spec.case, label["phase"], label["step"], label["pending_free_bytes_at_oom"] / 2 ** 30,
            label["private_pool_bytes_at_oom"] / 2 ** 30, label["counterfactual_peak_reserved_bytes"] / 2 ** 30))
    write_readme(out, rows)


def write_readme(out, rows):
    """README.md from README.template.md: the scenario table from the labels, and the measurement
    recorded once in measured.md."""
    lines = ["| scenario | case | phase | step | physics and counterfactual |", "|---|---|---|---|---|"]
    for spec, label in rows:
        phase = label["phase"] + (" (%s)" % label["rl_phase"] if "rl_phase" in label else "")
        why = "%s Counterfactual: %s." % (label["description"], label["counterfactual"])
        lines.append("| `%s`%s | `%s` | %s | %d | %s |" % (spec.name, " (control)" if label["control"] else "",
                                                          label["case"], phase, label["step"], why.replace("|", "\\|")))
    with open(os.path.join(HERE, "README.template.md")) as fh:
        template = fh.read()
    with open(os.path.join(HERE, "measured.md")) as fh:
        measured = fh.read().strip()
    with open(os.path.join(out, "README.md"), "w") as fh:
        fh.write(template.replace("{scenarios}", "\n".join(lines)).replace("{measured}", measured))


if __name__ == "__main__":
    main()
