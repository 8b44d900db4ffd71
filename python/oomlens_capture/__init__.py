"""Capture PyTorch memory snapshots that oomlens can fully explain.

Two lines at the top of a training script::

    import oomlens_capture
    oomlens_capture.install()

Memory history is recorded from then on (Python stacks, a bounded number of entries), and
every CUDA out-of-memory error writes ``oomlens-…-rankR-….pickle`` plus
``….oomlens.json`` — the card, nvidia-smi, versions, PYTORCH_CUDA_ALLOC_CONF, rank and the
exception, which the snapshot itself lacks — into ``./oomlens-dumps`` (or
``$OOMLENS_CAPTURE_DIR``). Open the .pickle with oomlens; the sidecar is read with it.

When the node has an ``oomlens`` executable (beside this package's folder, as the release
tarball unpacks it, or else on PATH), each dump is also summarized right
away (``oomlens summarize``: a few KB, ``….oomlens-summary.json``), so that a job of many
ranks is merged on a desktop from the summaries alone; ``install(summarize=False)`` turns
that off.

Optional: ``with oomlens_capture.step():`` around each training step marks steps on the
timeline, and ``with oomlens_capture.guard():`` (or ``@oomlens_capture.guard()``) adds the
exception text to the dump and re-raises it.

Only PyTorch is needed, imported when install() is called.
"""

import contextlib
import os

from ._capture import BYTES_PER_ENTRY, DEFAULT_FILE_BUDGET_MB, Capture, max_entries_for

__all__ = ["install", "uninstall", "step", "guard", "dump", "current", "BYTES_PER_ENTRY"]

_current = None


def install(
    directory=None,
    *,
    file_budget_mb=DEFAULT_FILE_BUDGET_MB,
    max_entries=None,
    keep=3,
    stacks="python",
    annotate_steps=True,
    min_interval_s=5.0,
    summarize=True,
):
    """Start recording and dump on every CUDA OOM. Safe to call twice (returns the first).

    directory: where dumps go (default $OOMLENS_CAPTURE_DIR, else ./oomlens-dumps).
    file_budget_mb: the snapshot size to stay under; max_entries = budget / BYTES_PER_ENTRY
        (1 KiB per entry: 100 MB -> 102400 entries). max_entries overrides it.
    keep: dumps of this rank kept in the directory; older ones are deleted.
    stacks: "python" (small, fast) or "all" (adds C++ frames; files several times larger).
    summarize: run `oomlens summarize` on each dump when an oomlens executable is found
        (beside this package's folder first, then on PATH)
        (seconds per 100 MB of snapshot, in the dying process; False skips it).
    """
    global _current
    if _current is not None:
        return _current
    import torch  # only now: importing this package must not pull in PyTorch

    if directory is None:
        directory = os.environ.get("OOMLENS_CAPTURE_DIR") or "oomlens-dumps"
    if max_entries is None:
        max_entries = max_entries_for(file_budget_mb)
    _current = Capture(
        torch,
        directory,
        max_entries=int(max_entries),
        keep=keep,
        stacks=stacks,
        min_interval_s=min_interval_s,
        annotate=annotate_steps,
        summarize=summarize,
    ).start()
    return _current


def uninstall():
    """Stop recording; the observer stays attached (PyTorch cannot detach it) but idle."""
    global _current
    if _current is not None:
        _current.stop()
    _current = None


def current():
    return _current


def step(number=None):
    """Context manager around one training step: a ProfilerStep#N annotation on the
    timeline (PyTorch 2.5+ records them), and the step number in the sidecar."""
    if _current is None:
        return contextlib.nullcontext(number)
    return _current.step_context(number)


def dump(note=None):
    """Write a snapshot and sidecar now (e.g. at the peak of a step that did not fail);
    `note` is kept in the sidecar for the reader."""
    if _current is None or not _current.active:
        return None
    return _current.dump(note=note)


class guard(contextlib.ContextDecorator):
    """Context manager and decorator: on a CUDA OutOfMemoryError, make sure a dump with the
    exception text exists, then let the error propagate unchanged."""

    def __enter__(self):
        return self

    def __exit__(self, kind, error, tb):
        if error is not None and _current is not None:
            try:
                if _current.is_oom(error):
                    _current.record_exception(error)
            except Exception:
                pass  # the user's error matters more than ours
        return False
