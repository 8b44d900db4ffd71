#!/usr/bin/env python3
"""The sweep behind the README's finding on pending frees: each record_stream program (FSDP1's
unshard/post-backward streams, ZeRO-3-style per-parameter gathers, torchtune-style activation
offloading, an apex-style CUDA prefetcher) is run over sizes and CPU run-ahead twice, with
record_stream and with frees that complete at once, and the runs are counted by outcome. Runs where
only the record_stream variant fails are the pending-frees OOMs of eager mode; the sweep finds them
only at the margin. Not part of generate.py (it takes a few minutes); `python3 sweep_pending.py`."""

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from allocator import GiB  # noqa: E402
from run import Run, Failed  # noqa: E402
import frames as F  # noqa: E402
import models as M  # noqa: E402
from fsdp1 import run_fsdp1  # noqa: E402
from zero3 import run_zero3  # noqa: E402
from offload import run_offload  # noqa: E402
from prefetch import run_prefetch  # noqa: E402

P = F.Paths("/usr/local/lib/python3.11/site-packages", "/workspace")


def outcome(card, outside, program):
    r = Run(card, outside=int(outside * GiB))
    try:
        program(r)
        return False
    except Failed:
        return True


def programs():
    for card, model, world in [("A100-40", M.LLAMA2_13B, 8), ("H100", M.LLAMA3_70B, 32)]:
        for tokens in range(4096, 16385, 2048):
            for lag, clag in [(2, 40), (8, 32)]:
                yield ("fsdp1", card, 1.6, lambda r, rs, a=(model, world, tokens, lag, clag): run_fsdp1(
                    r, P, a[0], a[1], a[2], 2, a[3], record_streams=rs, ckpt=True, comm_lag=a[4]))
    for card, model, world in [("A100-40", M.QWEN25_7B, 8), ("L40S", M.LLAMA3_8B, 8)]:
        for tokens in range(2048, 8193, 1024):
            for lag in (8, 64):
                yield ("zero3", card, 1.6, lambda r, rs, a=(model, world, tokens, lag): run_zero3(
                    r, P, a[0], a[1], a[2], 2, a[3], record_streams=rs))
    for card, model in [("A10G", M.QWEN25_1_5B), ("RTX4090", M.QWEN25_3B)]:
        for tokens in (4096, 8192, 16384):
            for d2h in (4, 64):
                yield ("offload", card, 0.6, lambda r, rs, a=(model, tokens, d2h): run_offload(
                    r, P, a[0], a[1], 2, a[2], 4, record_streams=rs))
    sizes = [(h, w) for h in range(640, 1345, 64) for w in range(800, 1345, 96)]
    for card in ("RTX4090", "A10G"):
        for batch in (8, 16, 24, 32):
            for lag in (4, 40):
                yield ("prefetch", card, 0.6, lambda r, rs, a=(batch, lag): run_prefetch(
                    r, P, 60, a[0], sizes, 128, 60_000_000, 50, a[1], record_streams=rs))


def main():
    counts = {}
    for kind, card, outside, program in programs():
        with_rs = outcome(card, outside, lambda r: program(r, True))
        without = outcome(card, outside, lambda r: program(r, False))
        key = (kind, {(True, False): "only with record_stream", (False, True): "only without",
                      (True, True): "both fail", (False, False): "both complete"}[(with_rs, without)])
        counts[key] = counts.get(key, 0) + 1
    for (kind, what), n in sorted(counts.items()):
        print("%-9s %-24s %d" % (kind, what, n))


if __name__ == "__main__":
    main()
