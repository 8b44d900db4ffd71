#!/usr/bin/env python3
"""Generate a small distributed job: one memory snapshot per rank, without a GPU and without torch.

    python3 tests/tools/make_job.py OUTDIR

The job is 2 pipeline stages x 4 data-parallel replicas = 8 ranks of a TinyGPT, each replayed (trainsim) against
the caching-allocator emulation (allocsim) on the same card:

    ranks 0-3   stage 0: 2 transformer blocks
    ranks 4-7   stage 1: 4 blocks, the heavier stage
    rank 6      its second batch is longer (seq 384): it runs out of memory in the forward of step 2
    rank 5      its third batch is as long: it runs out of memory too, in step 3, later by the clock
    rank 3      is written as worker-b.pickle, its rank only in the capture sidecar beside it
                (worker-b.oomlens.json: rank, world_size, the card)

It writes rank0.pickle ... rank7.pickle (rank 3 as worker-b.pickle), rank6.oom.txt (the failing rank's
traceback, as a launcher prefixes it) and job.json (the truth: ranks, which failed, which failed first, the
stages). Every rank's clock starts at the same time base, as ranks launched together do, so the oom events'
time_us say which rank failed first. Deterministic: fixed seeds, fixed time base, pickle protocol 4.
"""

import json
import os
import pickle
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

import allocsim  # noqa: E402
import trainsim  # noqa: E402
from allocsim import MiB  # noqa: E402
from make_scenarios import OVERHEAD, PROTOCOL, Program, Run  # noqa: E402

WORLD_SIZE = 8
STAGES = {0: 2, 1: 4}          # pipeline stage -> transformer blocks it holds
SHORT, LONG = 256, 384         # sequence lengths of an ordinary and of the long batch
STEPS = {5: (SHORT, SHORT, LONG), 6: (SHORT, LONG, SHORT)}
SIDECAR_RANK = 3


def stage_of(rank):
    return 0 if rank < WORLD_SIZE // 2 else 1


def config(rank):
    return trainsim.Config(vocab=4096, d=256, layers=STAGES[stage_of(rank)], heads=4, batch=4)


def program(rank):
    return Program(config(rank), steps=STEPS.get(rank, (SHORT, SHORT, SHORT)))


def replay(rank, capacity):
    # Seeds differ per rank (each replica's clock ticks its own way); the time base is shared.
    return Run(program(rank), capacity, False, seed=rank + 1)


def peak_reserved(rank, capacity=1 << 40):
    run = replay(rank, capacity)
    return run.allocator.stats.values["reserved_bytes"][0][1]


def card_capacity():
    """A card on which stage 1 fits its ordinary batches but not the long one: halfway between the two peaks."""
    ordinary = peak_reserved(4)
    long_batch = peak_reserved(6)
    if long_batch <= ordinary:
        raise SystemExit("the long batch does not raise stage 1's peak")
    return (OVERHEAD + (ordinary + long_batch) // 2) // MiB * MiB


def file_name(rank):
    return "worker-b" if rank == SIDECAR_RANK else "rank%d" % rank


def main(argv):
    if len(argv) != 2 or argv[1] in ("-h", "--help"):
        print(__doc__.strip())
        return 0 if len(argv) == 2 else 2
    outdir = argv[1]
    os.makedirs(outdir, exist_ok=True)
    capacity = card_capacity()
    truth = {"world_size": WORLD_SIZE, "capacity_bytes": capacity, "overhead_bytes": OVERHEAD,
             "stages": {str(s): [r for r in range(WORLD_SIZE) if stage_of(r) == s] for s in STAGES},
             "ranks": []}
    oom_times = {}
    for rank in range(WORLD_SIZE):
        run = replay(rank, capacity)
        name = file_name(rank)
        with open(os.path.join(outdir, name + ".pickle"), "wb") as f:
            pickle.dump(run.snapshot(), f, protocol=PROTOCOL)
        entry = {"rank": rank, "file": name + ".pickle", "stage": stage_of(rank), "oom": run.oom is not None,
                 "rank_in_name": rank != SIDECAR_RANK, "steps": list(program(rank).steps),
                 "peak_reserved_bytes": run.allocator.stats.values["reserved_bytes"][0][1],
                 "peak_allocated_bytes": run.allocator.stats.values["allocated_bytes"][0][1]}
        if run.oom is not None:
            entry.update(oom_phase=run.trainer.phase, oom_step=run.trainer.step,
                         oom_time_us=run.sink.trace[run.oom_event]["time_us"])
            oom_times[rank] = entry["oom_time_us"]
            if rank == 6:
                with open(os.path.join(outdir, name + ".oom.txt"), "w") as f:
                    # torchrun prefixes every line of a rank's output with its rank
                    f.write("".join("[rank%d]: %s\n" % (rank, line) for line in run.traceback().splitlines()))
        if rank == SIDECAR_RANK:
            sidecar = {"device_name": "NVIDIA Emulated %d MiB" % (capacity // MiB), "total_memory_bytes": capacity,
                       "torch_version": "2.8.0", "rank": rank, "world_size": WORLD_SIZE}
            with open(os.path.join(outdir, name + ".oomlens.json"), "w") as f:
                json.dump(sidecar, f, indent=1)
                f.write("\n")
        truth["ranks"].append(entry)
    if sorted(oom_times) != [5, 6]:
        raise SystemExit("expected ranks 5 and 6 to run out of memory, got %s" % sorted(oom_times))
    truth["oom_ranks"] = sorted(oom_times)
    truth["failing_rank"] = min(oom_times, key=oom_times.get)
    if truth["failing_rank"] != 6:
        raise SystemExit("expected rank 6 to fail first, got %s" % truth["failing_rank"])
    with open(os.path.join(outdir, "job.json"), "w") as f:
        json.dump(truth, f, indent=1, sort_keys=True)
        f.write("\n")
    for entry in truth["ranks"]:
        print("rank %d  %-16s stage %d  peak reserved %5d MiB  oom=%s" % (
            entry["rank"], entry["file"], entry["stage"], entry["peak_reserved_bytes"] // MiB, entry["oom"]))
    print("card %d MiB; failing rank %d" % (capacity // MiB, truth["failing_rank"]))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
