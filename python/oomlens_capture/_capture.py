"""The capture itself: memory history on, a dump on every CUDA OOM."""

import contextlib
import os
import shutil
import subprocess
import sys
import threading
import time
import traceback

from . import _rotation, _sidecar

# What one trace entry costs in the pickle: the entry's dict plus one memo reference per
# frame (PyTorch hands out one shared dict per unique frame, so pickle writes each frame
# once). 25 real snapshots (stacks 3-114 frames deep) measured 96-510 bytes per entry,
# median 223, file size over entries; 1 KiB is twice the worst of them. Python-only stacks
# are shallower than "all" (C++ frames too), hence "python" by default.
BYTES_PER_ENTRY = 1024
DEFAULT_FILE_BUDGET_MB = 100

# The OOM text can be long (a traceback through a deep model); keep its end, where the
# message and the failing frames are.
MAX_EXCEPTION_CHARS = 64 * 1024

# `oomlens summarize` decodes the snapshot once: seconds for 100 MB. A summarizer stuck on a
# hung file system must not keep a dying rank alive for ever.
SUMMARIZE_TIMEOUT_S = 600


# The release tarball unpacks the static `oomlens` beside this package's folder: on a node where
# it was only unpacked (nothing installed, nothing added to PATH) dumps are still summarized.
BESIDE_PACKAGE = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def find_oomlens():
    """The oomlens to summarize with: the one beside this package's folder (the tarball's
    layout) first, then the first on PATH; None when there is neither."""
    beside = os.path.join(BESIDE_PACKAGE, "oomlens")
    if os.path.isfile(beside) and os.access(beside, os.X_OK):
        return beside
    return shutil.which("oomlens")


def max_entries_for(file_budget_mb):
    return max(1000, int(file_budget_mb * 1024 * 1024) // BYTES_PER_ENTRY)


def _log(message):
    try:
        sys.stderr.write("oomlens_capture: %s\n" % message)
    except Exception:
        pass


class Capture:
    def __init__(self, torch, directory, max_entries, keep, stacks, min_interval_s, annotate, summarize=True):
        self._torch = torch
        self.directory = os.path.abspath(directory)
        self.max_entries = max_entries
        self.keep = keep
        self.stacks = stacks
        self.min_interval_s = min_interval_s
        self.annotate = annotate
        self.summarize = summarize
        self.recording = False
        self.active = False
        self.dumps = []  # snapshot paths written by this process, oldest first
        self._lock = threading.Lock()
        self._sequence = 0
        self._step = None
        self._last_dump = None  # (monotonic time, snapshot path, has exception text)

    def start(self):
        torch = self._torch
        try:
            available = torch.cuda.is_available()
        except Exception:
            available = False
        if not available:
            _log("CUDA is not available; nothing will be recorded")
            return self
        self.recording = self._record_history()
        try:
            torch._C._cuda_attach_out_of_memory_observer(self._observe_oom)
        except Exception as error:
            _log("cannot attach the OOM observer (%s); wrap the training loop in oomlens_capture.guard()" % error)
        self.active = True
        return self

    def stop(self):
        """Stop recording. PyTorch cannot detach an OOM observer; ours goes quiet instead."""
        self.active = False
        if self.recording:
            try:
                self._torch.cuda.memory._record_memory_history(enabled=None)
            except Exception:
                pass
            self.recording = False

    def _record_history(self):
        record = self._torch.cuda.memory._record_memory_history
        # Newest first. record_function annotations are recorded from PyTorch 2.5 on, from 2.8
        # only with global_record_annotations=True; 2.1+ takes the string form, 2.0 only the
        # legacy boolean one.
        attempts = []
        if self.annotate:
            attempts.append(
                lambda: record(
                    enabled="all",
                    context="all",
                    stacks=self.stacks,
                    max_entries=self.max_entries,
                    global_record_annotations=True,
                )
            )
        attempts.append(lambda: record(enabled="all", context="all", stacks=self.stacks, max_entries=self.max_entries))
        attempts.append(
            lambda: record(True, trace_alloc_max_entries=self.max_entries, trace_alloc_record_context=True)
        )
        last_error = None
        for attempt in attempts:
            try:
                attempt()
                return True
            except TypeError as error:
                last_error = error
            except Exception as error:
                last_error = error
                break
        _log("cannot record memory history (%s); dumps will have no timeline" % last_error)
        return False

    def _observe_oom(self, device, alloc, device_allocated, device_free):
        # Called by the allocator just before it raises; an exception escaping from here
        # would replace the user's OutOfMemoryError, so nothing may.
        try:
            if not self.active:
                return
            if self._recently_dumped():
                return
            oom = {
                "device": int(device),
                "requested_bytes": int(alloc),
                "device_allocated_bytes": int(device_allocated),
                "device_free_bytes": int(device_free),
            }
            self.dump(device=int(device), oom=oom, blocking=False)
        except Exception as error:
            _log("OOM observer failed: %s" % error)

    def _recently_dumped(self):
        # One failure can call the observer several times (cuDNN retries with less
        # workspace); the snapshot barely changes in between.
        last = self._last_dump
        return last is not None and time.monotonic() - last[0] < self.min_interval_s

    def dump(self, device=None, exception_text=None, oom=None, note=None, blocking=True):
        """Write a snapshot and its sidecar now; returns the snapshot's path or None."""
        if not self._lock.acquire(blocking):
            return None
        try:
            return self._dump_locked(device, exception_text, oom, note)
        finally:
            self._lock.release()

    def _dump_locked(self, device, exception_text, oom, note):
        torch = self._torch
        if device is None:
            try:
                device = int(torch.cuda.current_device())
            except Exception:
                device = 0
        rank, _ = _sidecar.rank_and_world_size(torch)
        self._sequence += 1
        path = _rotation.dump_path(self.directory, rank, self._sequence)
        partial = path + ".partial"
        try:
            os.makedirs(self.directory, exist_ok=True)  # only now: no empty folders from runs that fit
            torch.cuda.memory._dump_snapshot(partial)
            os.replace(partial, path)
        except Exception as error:
            _log("cannot write the snapshot %s: %s" % (path, error))
            with contextlib.suppress(OSError):
                os.remove(partial)
            return None
        try:
            sidecar = _sidecar.collect(
                torch,
                device,
                os.path.basename(path),
                exception_text=exception_text,
                oom=oom,
                note=note,
                step=self._step,
                max_entries=self.max_entries if self.recording else None,
            )
            _sidecar.write(_rotation.sidecar_path(path), sidecar)
        except Exception as error:
            _log("wrote %s but not its sidecar: %s" % (path, error))
        self._summarize(path)
        self.dumps.append(path)
        if oom is not None or exception_text is not None:
            # Only a dump for a failure can be completed by guard() with the exception text.
            self._last_dump = (time.monotonic(), path, exception_text is not None)
        for removed in _rotation.rotate(self.directory, rank, self.keep):
            if removed in self.dumps:
                self.dumps.remove(removed)
        _log("wrote %s (open it with oomlens)" % path)
        return path

    def _summarize(self, snapshot_path):
        """`oomlens summarize` on our own dump, when this node has an oomlens (find_oomlens): the few-KB
        summary that a job of many ranks is merged from on a desktop, written beside the dump
        before the job dies. Returns the summary's path, or None."""
        if not self.summarize:
            return None
        executable = find_oomlens()
        if executable is None:
            return None
        command = [executable, "summarize", snapshot_path, "-o", os.path.dirname(snapshot_path), "--jobs", "1"]
        try:
            done = subprocess.run(command, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                  stderr=subprocess.PIPE, timeout=SUMMARIZE_TIMEOUT_S, check=False)
        except (OSError, subprocess.SubprocessError) as error:
            _log("cannot summarize %s: %s" % (snapshot_path, error))
            return None
        if done.returncode != 0:
            _log("oomlens summarize %s failed: %s" % (snapshot_path, done.stderr.decode(errors="replace").strip()))
            return None
        return _rotation.summary_path(snapshot_path)

    def record_exception(self, error):
        """Called for an OutOfMemoryError that reached guard(): the observer usually dumped
        already, a moment ago; give that dump the exception text, else dump now."""
        if not self.active:
            return None
        text = "".join(traceback.format_exception(type(error), error, error.__traceback__))
        text = text[-MAX_EXCEPTION_CHARS:]
        with self._lock:
            last = self._last_dump
            if last is not None and not last[2] and self._recently_dumped():
                sidecar_path = _rotation.sidecar_path(last[1])
                try:
                    sidecar = _sidecar.read(sidecar_path)
                    sidecar["exception"] = text
                    _sidecar.write(sidecar_path, sidecar)
                    self._last_dump = (last[0], last[1], True)
                    self._summarize(last[1])  # again: the summary reads the sidecar too
                    return last[1]
                except Exception as error:
                    _log("cannot add the exception to %s: %s" % (sidecar_path, error))
        return self.dump(exception_text=text)

    def is_oom(self, error):
        torch = self._torch
        types = tuple(
            t
            for t in (
                getattr(getattr(torch, "cuda", None), "OutOfMemoryError", None),
                getattr(torch, "OutOfMemoryError", None),
            )
            if isinstance(t, type)
        )
        if types and isinstance(error, types):
            return True
        # Before PyTorch 1.13 an OOM was a plain RuntimeError.
        return isinstance(error, RuntimeError) and "out of memory" in str(error)

    @contextlib.contextmanager
    def step_context(self, number):
        if number is None:
            number = 0 if self._step is None else self._step + 1
        self._step = number
        record_function = None
        if self.annotate and self.recording:
            try:
                record_function = self._torch.profiler.record_function("ProfilerStep#%d" % number)
            except Exception:
                record_function = None
        if record_function is None:
            yield number
            return
        with record_function:
            yield number
