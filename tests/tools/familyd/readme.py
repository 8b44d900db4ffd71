"""README.md of tests/data/scenarios_d from README.template.md: the scenario table from the labels
and the "before the rules" figures kept in before_rules.md (bench_diagnosis output, recorded once)."""

import os

HERE = os.path.dirname(os.path.abspath(__file__))


def write(out, rows):
    lines = ["| scenario | case | phase | step | why |", "|---|---|---|---|---|"]
    for spec, label in rows:
        phase = label["phase"] + (" (%s)" % label["rl_phase"] if "rl_phase" in label else "")
        lines.append("| `%s` | `%s` | %s | %d | %s |" % (spec.name, label["case"], phase, label["step"],
                                                        label["description"].replace("|", "\\|")))
    with open(os.path.join(HERE, "README.template.md")) as fh:
        template = fh.read()
    before = os.path.join(HERE, "before_rules.md")
    text = open(before).read().strip() if os.path.exists(before) else "(not measured yet)"
    doc = template.replace("{scenarios}", "\n".join(lines)).replace("{before_rules}", text)
    with open(os.path.join(out, "README.md"), "w") as fh:
        fh.write(doc)
