#!/usr/bin/env python3
"""Memory of a long `oomlens mcp` session: N tool calls over plain stdio, RSS read from /proc.

Cycles through every tool on several snapshots (more than the server keeps decoded, so the cache
evicts and reads again) and prints the server's resident memory after the warm-up and every
N/10 calls. Bounded memory means the RSS stops growing once every file has been read: it moves
with which cases the cache holds, not with the number of calls.

    python3 bench/mcp_rss.py build/release/app/oomlens [--calls 1000] [--data tests/data]
"""

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time


def rss_kib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return -1


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("oomlens")
    parser.add_argument("--calls", type=int, default=1000)
    parser.add_argument("--data", default=os.path.join(os.path.dirname(__file__), "..", "tests", "data"))
    parser.add_argument("--cache", type=int, default=3)
    args = parser.parse_args()

    scenarios = os.path.join(args.data, "scenarios")
    names = ["first_backward", "leak", "longest_batch", "optimizer_step2", "eval_accumulation", "fragmentation"]
    report_dir = tempfile.mkdtemp(prefix="oomlens-mcp-rss-")
    calls = []
    for name in names:
        snapshot = os.path.join(scenarios, name + ".pickle")
        text = os.path.join(scenarios, name + ".oom.txt")
        calls += [
            ("diagnose", {"inputs": [snapshot, text]}),
            ("live_at", {"input": snapshot, "at": "oom", "top": 50}),
            ("evidence", {"inputs": [snapshot, text]}),
            ("step_peaks", {"input": snapshot}),
            ("stack_history", {"input": snapshot, "site": ".py:", "limit": 20}),
            ("live_at", {"input": snapshot, "at": "peak", "frames": "all"}),
            ("report", {"inputs": [snapshot, text], "output": os.path.join(report_dir, name + ".html")}),
            ("diagnose", {"inputs": ["/nonexistent/" + name + ".pickle"]}),
        ]
    calls += [
        ("compare", {"a": os.path.join(args.data, "compare", "batch.a.pickle"),
                     "b": os.path.join(args.data, "compare", "batch.b.pickle")}),
        ("plan", {"model": "llama-2-7b", "batch": 4, "zero": 3, "gpus": 8, "card": "80GB"}),
    ]

    server = subprocess.Popen([args.oomlens, "mcp", "--cache", str(args.cache)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, bufsize=1)

    def exchange(message):
        server.stdin.write(json.dumps(message) + "\n")
        server.stdin.flush()
        line = server.stdout.readline()
        if not line:
            sys.exit("the server closed its output")
        return json.loads(line)

    exchange({"jsonrpc": "2.0", "id": 0, "method": "initialize",
              "params": {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "mcp_rss"}}})
    server.stdin.write(json.dumps({"jsonrpc": "2.0", "method": "notifications/initialized"}) + "\n")

    errors = 0
    started = time.monotonic()
    # Warm-up: one round over every call, so that every file has been read once.
    for i, (tool, arguments) in enumerate(calls):
        answer = exchange({"jsonrpc": "2.0", "id": i + 1, "method": "tools/call",
                           "params": {"name": tool, "arguments": arguments}})
        errors += answer["result"]["isError"]
    warm = rss_kib(server.pid)
    print(f"after warm-up ({len(calls)} calls): RSS {warm / 1024:.1f} MiB")
    samples = []
    for n in range(1, args.calls + 1):
        tool, arguments = calls[n % len(calls)]
        answer = exchange({"jsonrpc": "2.0", "id": 1000 + n, "method": "tools/call",
                           "params": {"name": tool, "arguments": arguments}})
        if "result" not in answer:
            sys.exit(f"call {n} ({tool}): {answer}")
        errors += answer["result"]["isError"]
        if n % max(1, args.calls // 10) == 0:
            samples.append(rss_kib(server.pid))
            print(f"after {n:5d} calls: RSS {samples[-1] / 1024:.1f} MiB")
    elapsed = time.monotonic() - started
    server.stdin.close()
    server.wait(timeout=60)
    print(f"{args.calls + len(calls)} calls in {elapsed:.1f} s ({errors} tool errors, the /nonexistent inputs); "
          f"RSS warm {warm / 1024:.1f} MiB, max {max(samples) / 1024:.1f} MiB, last {samples[-1] / 1024:.1f} MiB; "
          f"exit status {server.returncode}")


if __name__ == "__main__":
    main()
