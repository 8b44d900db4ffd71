#!/usr/bin/env python3
"""An agent's questions about one big snapshot through `oomlens mcp`, timed call by call.

diagnose reads and decodes the file; the questions after it (live_at, step_peaks,
stack_history, evidence) are answered from the case the server keeps, so they cost the query,
not another decode. Prints each call's wall time and the server's RSS after it.

    python3 bench/gen_snapshot.py --events 1000000 --out /tmp/snap_1m.pickle
    python3 bench/mcp_session.py build/release/app/oomlens /tmp/snap_1m.pickle
"""

import argparse
import json
import subprocess
import sys
import time


def rss_mib(pid):
    with open(f"/proc/{pid}/status") as status:
        for line in status:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return -1


def main():
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("oomlens")
    parser.add_argument("snapshot")
    args = parser.parse_args()

    server = subprocess.Popen([args.oomlens, "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                              stderr=subprocess.DEVNULL, text=True, bufsize=1)
    next_id = 0

    def call(method, params):
        nonlocal next_id
        next_id += 1
        started = time.monotonic()
        server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": next_id, "method": method, "params": params}) + "\n")
        server.stdin.flush()
        line = server.stdout.readline()
        elapsed = time.monotonic() - started
        if not line:
            sys.exit("the server closed its output")
        answer = json.loads(line)
        return answer, elapsed, len(line)

    call("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "mcp_session"}})
    snapshot = args.snapshot
    questions = [
        ("diagnose", {"inputs": [snapshot]}),
        ("live_at", {"input": snapshot, "top": 20}),
        ("live_at", {"input": snapshot, "at": "peak", "top": 100, "frames": "all"}),
        ("step_peaks", {"input": snapshot}),
        ("stack_history", {"input": snapshot, "site": ".py:", "limit": 50}),
        ("evidence", {"inputs": [snapshot]}),
        ("diagnose", {"inputs": [snapshot]}),
    ]
    for tool, arguments in questions:
        answer, elapsed, size = call("tools/call", {"name": tool, "arguments": arguments})
        result = answer.get("result", {})
        status = "error: " + result["content"][0]["text"] if result.get("isError") else "ok"
        print(f"{tool:14s} {elapsed * 1000:9.1f} ms  answer {size / 1024:8.1f} KiB  RSS {rss_mib(server.pid):7.1f} MiB"
              f"  {status[:80]}")
    server.stdin.close()
    server.wait(timeout=60)


if __name__ == "__main__":
    main()
