"""Every command-line path, run by the portable oomlens in its empty root and by the desktop build,
and the two answers compared byte for byte (exit status, stdout, stderr, files written)."""

import json
import os
import re
import shutil

# The fixtures diagnosed one by one: every kind of input the command line reads (OOM messages,
# tracebacks, memory_summary, nvidia-smi, serving logs, snapshots in every container, sidecars,
# host-memory kills, the real corpus's pastes), READMEs and generators included as the inputs
# that are refused.
DIAGNOSE_FOLDERS = ["text", "text_b", "text_c", "real", "snapshots", "sidecar", "hostmemory",
                    "scenarios_serving", "compare", "job"]
SCENARIO = "data/scenarios/first_backward"
MCP_REPORT_CASE = "data/scenarios/closure_first_backward"
# The one thing in a written file that differs by design: a report's footer says when it was
# written, to the second ("Written by oomlens 0.1.0 on 2026-11-29T13:50:00Z."), and the two builds
# run one after the other. Both files' stamps are replaced by the same word before comparing.
GENERATED_AT = re.compile(rb"(Written by oomlens \S+ on )\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ")


class Tally:
    def __init__(self):
        self.passed = 0
        self.failed = 0

    def check(self, name, portable, desktop):
        why = difference(portable, desktop)
        if why is None:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL %s: %s" % (name, why))

    def expect(self, name, ok, why):
        if ok:
            self.passed += 1
        else:
            self.failed += 1
            print("FAIL %s: %s" % (name, why))


def first_difference(a, b):
    lines_a, lines_b = a.splitlines(), b.splitlines()
    for number, (line_a, line_b) in enumerate(zip(lines_a, lines_b), 1):
        if line_a != line_b:
            return "line %d: portable %r, desktop %r" % (number, line_a[:300], line_b[:300])
    return "portable %d lines, desktop %d lines" % (len(lines_a), len(lines_b))


def difference(portable, desktop):
    if portable.status != desktop.status:
        return "exit status %d, desktop %d (stderr: %r)" % (portable.status, desktop.status, portable.stderr[-300:])
    if portable.stdout != desktop.stdout:
        return "stdout differs, " + first_difference(portable.stdout, desktop.stdout)
    if portable.stderr != desktop.stderr:
        return "stderr differs, " + first_difference(portable.stderr, desktop.stderr)
    return None


def fixtures(root, folders):
    """Files under data/FOLDER, as paths relative to the root ("data/text/x.txt")."""
    found = []
    for folder in folders:
        for directory, _, names in os.walk(os.path.join(root.path, "data", folder)):
            for name in names:
                found.append(os.path.relpath(os.path.join(directory, name), root.path))
    return sorted(found)


def both(root, tally, name, arguments, stdin=b""):
    tally.check(name, root.portable(arguments, stdin), root.desktop(arguments, stdin))


def diagnose_each(root, tally):
    for path in fixtures(root, DIAGNOSE_FOLDERS):
        both(root, tally, "diagnose --json " + path, ["diagnose", "--json", path])
    for path in fixtures(root, ["snapshots", "job"]):
        both(root, tally, "diagnose " + path, ["diagnose", path])
    both(root, tally, "diagnose --full --json on a job folder", ["diagnose", "--full", "--json", "data/job"])
    both(root, tally, "diagnose a job folder", ["diagnose", "data/job"])
    both(root, tally, "diagnose - (stdin)", ["diagnose", "--json", "-"],
         open(os.path.join(root.path, SCENARIO + ".oom.txt"), "rb").read())


def files_under(folder, unrooted=b""):
    contents = {}
    for directory, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(directory, name)
            with open(path, "rb") as source:
                data = source.read()
            data = GENERATED_AT.sub(rb"\1(time)", data)
            contents[os.path.relpath(path, folder)] = data.replace(unrooted, b"") if unrooted else data
    return contents


def run_writing(root, arguments, stdin=b""):
    """Both builds run a command that writes under out/: their answers and the files each wrote."""
    out = os.path.join(root.path, "out")
    shutil.rmtree(out, ignore_errors=True)
    os.makedirs(out)
    desktop = root.desktop(arguments, stdin)
    desktop_files = files_under(out, root.path.encode())
    shutil.rmtree(out)
    os.makedirs(out)
    portable = root.portable(arguments, stdin)
    return portable, desktop, files_under(out), desktop_files


def same_files(tally, name, portable_files, desktop_files):
    differing = sorted(set(portable_files) ^ set(desktop_files)) or [
        path for path in sorted(portable_files) if portable_files[path] != desktop_files[path]]
    tally.expect(name + " (files written)", not differing and len(portable_files) > 0,
                 "files differ or none written: %s" % (differing[:5] or "none written"))


def written(root, tally, name, arguments):
    portable, desktop, portable_files, desktop_files = run_writing(root, arguments)
    tally.check(name, portable, desktop)
    same_files(tally, name, portable_files, desktop_files)


def commands_that_write(root, tally):
    written(root, tally, "summarize a job folder", ["summarize", "data/job", "-o", "out/summaries"])
    written(root, tally, "summarize one shard", ["summarize", "data/job", "-o", "out/shard", "--shard", "1/2"])
    written(root, tally, "report", ["report", SCENARIO + ".pickle", SCENARIO + ".oom.txt", "-o", "out/report.html"])
    # Summaries written on the node, merged where the user diagnoses. A summary names its
    # snapshot by absolute path ("/data/job/rank0.pickle" in the root) and the diagnosis reads the
    # snapshot when it is there; the desktop build, outside the root, could not find it at that
    # path. So both diagnose the summaries as they are read after being copied home: with the
    # snapshots left behind (data/job moved aside meanwhile).
    written(root, tally, "summarize for the merge", ["summarize", "data/job", "-o", "out/merge"])
    merge = os.path.join(root.path, "out", "merge")
    if os.path.isdir(merge):  # else the summarize above failed, and said so
        os.replace(merge, os.path.join(root.path, "data", "job-summaries"))
    job, aside = os.path.join(root.path, "data", "job"), os.path.join(root.path, "job-left-on-the-cluster")
    os.replace(job, aside)
    try:
        both(root, tally, "diagnose --json on summaries", ["diagnose", "--json", "data/job-summaries"])
        both(root, tally, "diagnose on summaries", ["diagnose", "data/job-summaries"])
    finally:
        os.replace(aside, job)


def commands_that_print(root, tally):
    both(root, tally, "compare --json", ["compare", "--json", "data/compare/batch.a.pickle", "data/compare/batch.b.pickle"])
    both(root, tally, "compare", ["compare", "data/compare/checkpointing.a.pickle", "data/compare/checkpointing.b.pickle"])
    both(root, tally, "compare --window", ["compare", "data/compare/leak.pickle", "--window", "2:2", "--window", "3:3"])
    both(root, tally, "plan --json (preset)",
         ["plan", "--json", "--model", "llama-2-7b", "--batch", "2", "--seq", "2048", "--zero", "3", "--gpus", "8",
          "--card", "80GB"])
    both(root, tally, "plan (config.json)", ["plan", "--model", "data/planner/mixtral-8x7b.config.json", "--gpus", "8"])
    both(root, tally, "--version", ["--version"])
    both(root, tally, "diagnose --help", ["diagnose", "--help"])


def bad_input(root, tally):
    both(root, tally, "a missing file", ["diagnose", "--json", "data/no-such-file.pickle"])
    both(root, tally, "an unknown command", ["diagnoze", "data/job"])
    both(root, tally, "an unknown option", ["diagnose", "--frobnicate", "data/job"])
    both(root, tally, "plan without a model", ["plan", "--json"])
    both(root, tally, "summarize without -o", ["summarize", "data/job"])
    both(root, tally, "a folder of no inputs", ["diagnose", "--json", "data/planner"])


def window_asked(root, tally):
    """The one answer that differs by design: the portable build has no window, and says so in
    one line (the desktop build, without a display here, says that instead)."""
    for arguments in ([], [SCENARIO + ".pickle"]):
        answer = root.portable(arguments)
        lines = answer.stderr.decode(errors="replace").splitlines()
        tally.expect("asked for the GUI: %s" % (arguments or "no arguments"),
                     answer.status != 0 and len(lines) == 1 and "no GUI" in lines[0] and not answer.stdout,
                     "exit %d, stderr %r" % (answer.status, lines))


def mcp_messages():
    """A coding agent's session: the handshake, tools/list, every tool on the fixtures."""
    snapshot, traceback = "/" + SCENARIO + ".pickle", "/" + SCENARIO + ".oom.txt"
    calls = [
        ("diagnose", {"inputs": [snapshot, traceback]}),
        ("live_at", {"input": snapshot, "at": "oom", "top": 10}),
        ("evidence", {"inputs": [snapshot, traceback], "top": 3}),
        ("step_peaks", {"input": "/data/scenarios/leak.pickle"}),
        ("stack_history", {"input": "/data/scenarios/leak.pickle", "site": ".py:", "limit": 5}),
        ("compare", {"a": "/data/compare/batch.a.pickle", "b": "/data/compare/batch.b.pickle"}),
        ("plan", {"model": "llama-2-7b", "batch": 2, "seq": 2048, "zero": 3, "gpus": 8, "card": "80GB"}),
        # The report holds its inputs' paths and its answer says its size: relative paths (from
        # the server's working directory, the root's top for both builds) so that the desktop
        # build, which sees the fixtures under the root's longer path, writes the same bytes.
        # And a case no other call opens: the server's cache is keyed by absolute path, so a case
        # another call loaded first (calls run on several workers, in any order) would bring
        # that call's spelling of the paths.
        ("report", {"inputs": [MCP_REPORT_CASE + ".pickle", MCP_REPORT_CASE + ".oom.txt"], "output": "out/report.html"}),
        ("diagnose", {"inputs": ["/data/no-such-file.pickle"]}),
    ]
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize",
         "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "node-test", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]
    for number, (tool, arguments) in enumerate(calls, 3):
        messages.append({"jsonrpc": "2.0", "id": number, "method": "tools/call",
                         "params": {"name": tool, "arguments": arguments}})
    return calls, b"".join(json.dumps(message).encode() + b"\n" for message in messages)


def by_id(stdout):
    """Tool calls run on several workers: answers come in any order, each on its own line."""
    answers = {}
    for number, line in enumerate(stdout.splitlines()):
        try:
            answers[json.loads(line).get("id")] = line
        except (ValueError, AttributeError):
            answers["not JSON-RPC, line %d" % number] = line  # compared like the rest: never equal by luck
    return answers


def mcp_session(root, tally):
    calls, session = mcp_messages()
    portable, desktop, portable_files, desktop_files = run_writing(root, ["mcp"], session)
    tally.expect("mcp exit status", portable.status == desktop.status == 0,
                 "portable %d, desktop %d: %r" % (portable.status, desktop.status, portable.stderr[-300:]))
    mine, theirs = by_id(portable.stdout), by_id(desktop.stdout)
    names = ["initialize", "tools/list"] + [tool for tool, _ in calls]
    for number, name in enumerate(names, 1):
        tally.expect("mcp id %d (%s)" % (number, name), number in mine and mine.get(number) == theirs.get(number),
                     "answers differ: portable %r, desktop %r" % ((mine.get(number) or b"")[:300],
                                                                   (theirs.get(number) or b"")[:300]))
    same_files(tally, "mcp report", portable_files, desktop_files)


def run_all(root):
    tally = Tally()
    diagnose_each(root, tally)
    commands_that_write(root, tally)
    commands_that_print(root, tally)
    bad_input(root, tally)
    window_asked(root, tally)
    mcp_session(root, tally)
    return tally.passed, tally.failed
