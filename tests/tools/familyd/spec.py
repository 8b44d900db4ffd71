"""What a scenario is: a program over a simulated process, the run it starts on, the label's cause
and the counterfactual that removes it, and the sentences that explain the numbers."""

from allocator import GiB, MiB


def g(n):
    return "%.2f GiB" % (n / GiB)


def m(n):
    return "%.0f MiB" % (n / MiB)


class Spec:
    def __init__(self, name, case, framework, make_run, program, describe, counterfactual, also_acceptable=(),
                 also_acceptable_without_text=(), phase=None, rl_phase=None, checkpointing=False, ring=1200,
                 torch="2.6", rank_prefix=None, alloc_conf="", check=None, unwind=None):
        self.name, self.case, self.framework = name, case, framework
        self.make_run, self.program, self._describe = make_run, program, describe
        self.counterfactual = counterfactual
        self.also_acceptable = list(also_acceptable)
        self.also_acceptable_without_text = list(also_acceptable_without_text)
        self.phase, self.rl_phase, self.checkpointing = phase, rl_phase, checkpointing
        self.ring, self.torch, self.rank_prefix, self.alloc_conf = ring, torch, rank_prefix, alloc_conf
        self._check = check
        # unwind(r): what the exception frees before an `except` handler dumps the snapshot; without
        # it the snapshot is dumped by an OOM observer at the failure
        self.unwind = unwind

    def describe(self, r, rf):
        return " ".join(self._describe(r, rf).split())

    def check(self, r, rf):
        if self._check:
            self._check(r, rf)
