"""The checks that make a label true: each diagnosis's physical condition, asserted against what
the simulation did (where and when it failed, what was live, what the card held)."""

from allocator import GiB, MiB


class LabelError(AssertionError):
    pass


def require(condition, what):
    if not condition:
        raise LabelError(what)


def usable(run):
    """What this process could ever reserve: the card minus the CUDA context and other processes,
    or the per-process limit."""
    a = run.alloc
    card = a.card_total - a.context_bytes - a.other_process_bytes
    return min(card, a.allowed) if a.allowed is not None else card


def check(case, run, result, **kw):
    info = result["info"]
    a = run.alloc
    fixed_projected = run.projected_fixed_bytes()
    whole_card = a.card_total - a.context_bytes
    # a label's phase or step left open (None) is the simulated one; the case's own checks still bind it
    require(kw["phase"] is None or result["phase"] == kw["phase"], f"phase {result['phase']} != {kw['phase']}")
    require(kw["step"] is None or result["step"] == kw["step"], f"step {result['step']} != {kw['step']}")
    if case == "optimizer_step2":
        require(fixed_projected < usable(run), "optimizer_step2: the fixed state must fit the card")
        if result["phase"] == "optimizer":
            require(result["step"] == 0, "optimizer_step2 in the optimizer: the first step")
        else:
            require(result["step"] == 1 and run.state_created, "optimizer_step2 later: the step after the state appeared")
            require(run.step_log[0]["peak"] < usable(run), "step 0 fitted without the state")
    elif case == "capacity":
        require(fixed_projected > usable(run), f"capacity: projected fixed state {fixed_projected / GiB:.2f} GiB fits")
        require(a.other_process_bytes < 0.05 * a.card_total and a.allowed is None, "capacity: nothing else limits the run")
    elif case == "first_backward":
        require(result["phase"] == "backward" and result["step"] == 0, "first_backward: backward of step 0")
        require(fixed_projected < 0.8 * usable(run), "first_backward: the fixed state fits with room")
        require(info["rounded"] < 0.25 * a.card_total, "first_backward: no single huge request")
    elif case == "longest_batch":
        shapes = [s["shape"] for s in run.step_log]
        require(len(shapes) >= 5, "longest_batch: a run of earlier batches")
        size = kw["batch_size_of"]
        require(size(result["shape"]) >= 2 * max(size(s) for s in shapes), "longest_batch: the failing batch is at least twice the longest earlier one")
        require(max(s["peak"] for s in run.step_log) < 0.9 * usable(run), "longest_batch: every earlier step fitted with room")
        require(fixed_projected < usable(run), "longest_batch: fixed state fits")
    elif case == "eval_accumulation":
        require(result["phase"] == "eval", "eval_accumulation: fails in eval")
        kept = sum(b.size for b in run.kept if b.allocated)
        require(kept > 0.3 * info["allocated"], "eval_accumulation: the kept outputs are a large part of what is live")
        require(kept + info["rounded"] > info["reserved"] - info["allocated"] or True, "")
    elif case == "leak":
        log = run.step_log
        require(len(log) >= 8, "leak: many steps")
        starts = [s["start"] for s in log[1:]]
        require(all(b > a_ for a_, b in zip(starts, starts[1:])), "leak: live memory at step start grows every step")
        require(len({tuple(sorted(s["shape"].items())) for s in log}) == 1, "leak: the batch never changes")
    elif case == "other_process":
        require(a.other_process_bytes >= 0.3 * a.card_total, "other_process: another process holds a large part of the card")
        require(info["reserved"] + info["alloc_size"] < whole_card, "other_process: the run would fit on the whole card")
    elif case == "memory_fraction_cap":
        require(a.allowed is not None and info["reserved"] + info["alloc_size"] > a.allowed, "fraction: the limit refused it")
        require(info["device_free"] >= info["alloc_size"], "fraction: the card itself had room")
    elif case == "large_allocation":
        require(info["rounded"] >= 0.25 * a.card_total, "large_allocation: one request is at least a quarter of the card")
        huge = sum(b.size for b in a.live_blocks() if b.size >= 0.25 * a.card_total)
        require(info["allocated"] - huge < 0.6 * a.card_total, "large_allocation: the rest is not what fills the card")
    elif case == "fragmentation":
        require(info["reserved"] - info["allocated"] >= info["rounded"], "fragmentation: enough reserved-but-free memory")
        require(info["largest_free"] < info["rounded"], "fragmentation: no free block large enough")
        require(info["allocated"] + info["rounded"] <= usable(run), "fragmentation: the live set plus the request fits the card")
        # steady state: the second half of the run (a server ramps up to its slot count first)
        starts = [s["start"] for s in run.step_log[len(run.step_log) // 2:]]
        require(len(starts) >= 8, "fragmentation: a steady run before the failure")
        half = len(starts) // 2
        earlier, later = sum(starts[:half]) / half, sum(starts[half:]) / (len(starts) - half)
        require(later - earlier < 0.04 * usable(run), "fragmentation: no growth across steps")
        size = kw.get("batch_size_of")
        done = [s for s in run.step_log if size(s["shape"]) >= size(result["shape"])]
        require(done, "fragmentation: an earlier step with an equal or larger batch ran to its end")
        require(min(s["peak"] for s in done) + info["rounded"] <= usable(run), "fragmentation: that step's live peak fits the card")
    elif case == "working_set":
        require(result["phase"] == "forward" and result["step"] == 0, "working_set: the first forward")
        require(fixed_projected < 0.5 * usable(run), "working_set: fixed state small")
        require(info["rounded"] < 0.1 * a.card_total, "working_set: no single huge request")
    else:
        raise LabelError(case)
