#!/usr/bin/env python3
"""Writes the seeds of the mcp fuzz target (fuzz/mcptarget.h) with nothing but the standard library.

    python3 fuzz/corpus/make_mcp_seeds.py

Each seed is what a client writes: JSON-RPC messages, one a line. Together they hold every request
the MCP tests send (tests/cli/tst_mcpserver.cpp, tests/mcp/client.test.mjs): the handshake, the
protocol's errors, tools/list and every tool with the arguments the tests give it, right and
wrong. The fuzz target reads no files, so the paths reach the arguments' checks; pasted text
reaches the parsers. Deterministic; rerun after editing and commit the result. Crash reproducers
(crash-*) live beside the seeds and are never touched here.
"""

import json
import os

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "mcp")
DATA = "tests/data"
SNAPSHOT = DATA + "/scenarios/first_backward.pickle"
TRACEBACK = DATA + "/scenarios/first_backward.oom.txt"
LEAK = DATA + "/scenarios/leak.pickle"

TRACEBACK_TEXT = (
    "Traceback (most recent call last):\n"
    '  File "train.py", line 42, in train_step\n'
    "    loss.backward()\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
    "23.65 GiB of which 1.12 GiB is free. Including non-PyTorch memory, this process has 22.52 GiB memory in use. "
    "Of the allocated memory 21.80 GiB is allocated by PyTorch, and 312.45 MiB is reserved by PyTorch but "
    "unallocated.\n"
)


def line(message):
    return json.dumps(message, separators=(",", ":"))


def request(id, method, params=None):
    message = {"jsonrpc": "2.0", "id": id, "method": method}
    if params is not None:
        message["params"] = params
    return message


HANDSHAKE = [
    request(0, "initialize", {"protocolVersion": "2025-06-18", "capabilities": {},
                              "clientInfo": {"name": "seed", "version": "1"}}),
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
]


def call(id, tool, arguments, token=None):
    params = {"name": tool, "arguments": arguments}
    if token is not None:
        params["_meta"] = {"progressToken": token}
    return request(id, "tools/call", params)


# Every tool call the tests make, right and wrong (tst_mcpserver.cpp, client.test.mjs).
CALLS = {
    "diagnose": [{"inputs": [SNAPSHOT, TRACEBACK]}, {"text": TRACEBACK_TEXT}, {"inputs": ["/nonexistent/run.pickle"]},
                 {}, {"inputs": "-"}, {"inputs": [LEAK], "device": "zero"}, {"inputs": [LEAK], "devise": 0}],
    "live_at": [{"input": SNAPSHOT, "at": "oom", "top": 10}, {"input": SNAPSHOT, "at": "peak", "top": 0},
                {"input": SNAPSHOT, "at": "event:10"}, {"input": SNAPSHOT, "at": "event:-1"},
                {"input": SNAPSHOT, "at": "time_us:1760000000000000"}, {"input": SNAPSHOT, "frames": "all"},
                {"input": LEAK, "device": 3}, {"input": LEAK, "at": "soon"}, {"input": LEAK, "at": "event:99999999"}],
    "evidence": [{"inputs": [SNAPSHOT, TRACEBACK], "top": 3}, {"text": TRACEBACK_TEXT, "diagnosis": "first_backward"},
                 {"text": TRACEBACK_TEXT, "diagnosis": 99}, {"text": TRACEBACK_TEXT, "diagnosis": "0"}],
    "step_peaks": [{"input": LEAK}],
    "stack_history": [{"input": LEAK, "site": ".py:", "limit": 5}, {"input": LEAK, "allocation": 3},
                      {"input": LEAK}, {"input": LEAK, "site": "no_such_file.py:1"}],
    "compare": [{"a": DATA + "/compare/batch.a.pickle", "b": DATA + "/compare/batch.b.pickle"},
                {"a": LEAK, "windows": ["2:2", "3:3"]}, {"a": LEAK}, {"a": LEAK, "windows": ["2:2", "x"]}],
    "plan": [{"model": "llama-2-7b", "batch": 2, "seq": 2048, "zero": 3, "gpus": 8, "card": "80GB"},
             {"model": "llama-2-70b", "tp": 8, "pp": 4, "gpus": 8, "nodes": 4, "batch": 1, "seq": 4096,
              "card": "80GB", "sequence_parallel": True, "distributed_optimizer": True},
             {"model": "llama-2-7b", "inference": True, "batch": 16, "seq": 4096, "card": "80GB", "kv_dtype": "fp8"},
             {"model": "gpt2", "batch": 8, "seq": 512, "card": "24GB", "precision": "mixed-bf16"},
             {"params": 1.3e9, "qlora": False}, {"model": "gpt2", "inference": "yes"}, {"model": "gpt2", "batch": "x"},
             {"model": "gpt2", "precision": "fp8"}, {"batch": 2}, {"model": "gpt2", "help": True},
             {"model": "gpt2", "batch": "many"}],
    "report": [{"inputs": [SNAPSHOT, TRACEBACK], "output": "/tmp/oomlens-fuzz-report.html"},
               {"inputs": [SNAPSHOT], "output": "-"}],
}

# The protocol's own lines: lifecycle, errors, batches, cancellation, progress, cursors.
PROTOCOL = [
    '{"jsonrpc": "2.0", "id": 1, "method": ',
    "[]",
    line({"jsonrpc": "1.0", "id": 4, "method": "ping"}),
    line({"jsonrpc": "2.0", "id": 4, "method": 7}),
    line({"jsonrpc": "2.0", "id": None, "method": "ping"}),
    '"just a string"',
    line(request(9, "resources/read")),
    line(request(10, "tools/call", {"name": "no_such_tool"})),
    line(request(11, "tools/call", {})),
    line([request(1, "ping"), {"jsonrpc": "2.0", "method": "notifications/initialized"}, request(2, "nope")]),
    line({"jsonrpc": "2.0", "id": 5, "result": {}}),
    line({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}}),
    line(request(12, "tools/list", {"cursor": "page-2"})),
    line(request("abc", "ping")),
    "this is not json",
]


def write(name, lines):
    with open(os.path.join(HERE, name), "w", encoding="utf-8", newline="\n") as out:
        out.write("\n".join(l if isinstance(l, str) else line(l) for l in lines) + "\n")


def main():
    os.makedirs(HERE, exist_ok=True)
    # The crash this target was written for: params nested 50,000 deep overflowed the stack
    # (any method, before initialize too). Kept first, as found.
    with open(os.path.join(HERE, "crash-params-nested-fifty-thousand-deep"), "w") as out:
        out.write('{"jsonrpc":"2.0","id":1,"method":"ping","params":' + "[" * 50000 + "]" * 50000 + "}\n")
    # A bad token 60 KB long: the parse error quotes it, clipped.
    write("parse_error_long_token", ['{"jsonrpc":"2.0","id":1,"method":"' + "a" * 60000])
    write("before_initialize", [request(1, "tools/list"), call(2, "plan", CALLS["plan"][0]), request(3, "ping")]
          + HANDSHAKE + [request(4, "tools/list")])
    write("handshake_versions", [request(i, "initialize", {"protocolVersion": v}) for i, v in
                                 enumerate(["2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05", "2099-01-01"])])
    write("protocol_errors", HANDSHAKE + PROTOCOL)
    write("tools_list", HANDSHAKE + [request(1, "tools/list")])
    for tool, calls in CALLS.items():
        write("call_" + tool, HANDSHAKE + [call(i + 1, tool, arguments, token=i) for i, arguments in enumerate(calls)])


if __name__ == "__main__":
    main()
