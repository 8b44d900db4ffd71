"""oomlens_capture against a stand-in torch: no GPU, no PyTorch needed.

Run from this folder with the package on the path:
    PYTHONPATH=../../python python3 -m unittest -v
"""

import glob
import json
import os
import pickle
import shutil
import stat
import subprocess
import sys
import tempfile
import time
import unittest

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "python"))

from fake_torch import FakeTorch, OutOfMemoryError  # noqa: E402

import oomlens_capture  # noqa: E402
from oomlens_capture import _capture, _sidecar  # noqa: E402

SLEEP = shutil.which("sleep") or "/bin/sleep"

OOM_TEXT = (
    "CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 39.39 GiB of which "
    "1.06 GiB is free. Including non-PyTorch memory, this process has 38.32 GiB memory in use. Of the "
    "allocated memory 36.90 GiB is allocated by PyTorch, and 912.00 MiB is reserved by PyTorch but unallocated."
)


class CaptureTestCase(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.dir = os.path.join(self.tmp.name, "dumps")
        self.fake = FakeTorch()
        self.fake.install()
        self.env = dict(os.environ)
        for key in ("RANK", "WORLD_SIZE", "SLURM_PROCID", "SLURM_NTASKS", "OMPI_COMM_WORLD_RANK",
                    "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_ALLOC_CONF", "OOMLENS_CAPTURE_DIR"):
            os.environ.pop(key, None)
        self.fake_smi("#!/bin/sh\necho '| NVIDIA-SMI 550.54.15   Driver Version: 550.54.15   CUDA Version: 12.4 |'\n")
        oomlens_capture.uninstall()
        self.logs = []
        self.saved_log = _capture._log
        _capture._log = self.logs.append

    def tearDown(self):
        _capture._log = self.saved_log
        oomlens_capture.uninstall()
        self.fake.uninstall()
        os.environ.clear()
        os.environ.update(self.env)
        self.tmp.cleanup()

    def fake_smi(self, script):
        """Puts an nvidia-smi that runs `script` (None: no nvidia-smi at all) alone on PATH."""
        bin_dir = os.path.join(self.tmp.name, "bin")
        os.makedirs(bin_dir, exist_ok=True)
        path = os.path.join(bin_dir, "nvidia-smi")
        if os.path.exists(path):
            os.remove(path)
        if script is not None:
            with open(path, "w") as out:
                out.write(script)
            os.chmod(path, stat.S_IRWXU)
        os.environ["PATH"] = bin_dir

    def install(self, **kwargs):
        kwargs.setdefault("min_interval_s", 5.0)
        return oomlens_capture.install(self.dir, **kwargs)

    def snapshots(self):
        return sorted(glob.glob(os.path.join(self.dir, "*.pickle")))

    def sidecar_of(self, snapshot):
        with open(snapshot[: -len(".pickle")] + ".oomlens.json", encoding="utf-8") as source:
            return json.load(source)

    def fire_observer(self, device=0, alloc=2 << 30):
        self.assertEqual(len(self.fake.observers), 1)
        self.fake.observers[0](device, alloc, 36 << 30, 1 << 30)


class InstallTest(CaptureTestCase):
    def test_records_history_with_bounded_python_stacks(self):
        capture = self.install()
        self.assertTrue(capture.active)
        self.assertEqual(len(self.fake.history_calls), 1)
        call = self.fake.history_calls[0]
        self.assertEqual(call["enabled"], "all")
        self.assertEqual(call["stacks"], "python")
        self.assertEqual(call["max_entries"], 100 * 1024 * 1024 // _capture.BYTES_PER_ENTRY)
        self.assertTrue(call["global_record_annotations"])
        self.assertEqual(len(self.fake.observers), 1)
        self.assertFalse(os.path.exists(self.dir), "a run that never fails leaves no folder behind")

    def test_file_budget_and_explicit_max_entries(self):
        self.install(file_budget_mb=20)
        self.assertEqual(self.fake.history_calls[0]["max_entries"], 20 * 1024)
        oomlens_capture.uninstall()
        self.fake.history_calls.clear()
        self.install(max_entries=5000)
        self.assertEqual(self.fake.history_calls[-1]["max_entries"], 5000)

    def test_install_twice_returns_the_first(self):
        first = self.install()
        self.assertIs(self.install(), first)
        self.assertEqual(len(self.fake.observers), 1)

    def test_older_signatures(self):
        self.fake.signature = "no_annotations"
        self.install()
        self.assertNotIn("global_record_annotations", self.fake.history_calls[-1])
        self.assertEqual(self.fake.history_calls[-1]["stacks"], "python")
        oomlens_capture.uninstall()
        self.fake.signature = "legacy"
        capture = self.install()
        self.assertTrue(capture.recording)
        self.assertTrue(self.fake.history_calls[-1]["legacy"])
        self.assertEqual(self.fake.history_calls[-1]["trace_alloc_max_entries"], capture.max_entries)

    def test_no_cuda_is_harmless(self):
        self.fake.uninstall()
        self.fake = FakeTorch(available=False)
        self.fake.install()
        capture = self.install()
        self.assertFalse(capture.active)
        self.assertEqual(self.fake.history_calls, [])
        self.assertIsNone(oomlens_capture.dump())
        with self.assertRaises(OutOfMemoryError):
            with oomlens_capture.guard():
                raise OutOfMemoryError(OOM_TEXT)
        self.assertEqual(self.snapshots(), [])

    def test_importing_does_not_import_torch(self):
        self.fake.uninstall()
        sys.modules.pop("torch", None)
        for name in [n for n in sys.modules if n.startswith("oomlens_capture")]:
            del sys.modules[name]
        import oomlens_capture as fresh  # noqa: F401

        self.assertNotIn("torch", sys.modules)
        self.fake.install()

    def test_directory_from_environment(self):
        os.environ["OOMLENS_CAPTURE_DIR"] = os.path.join(self.tmp.name, "fromenv")
        capture = oomlens_capture.install()
        self.assertEqual(capture.directory, os.path.join(self.tmp.name, "fromenv"))


class ObserverTest(CaptureTestCase):
    def test_observer_dumps_snapshot_and_sidecar(self):
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
        os.environ["RANK"] = "3"
        os.environ["WORLD_SIZE"] = "8"
        self.install()
        self.fire_observer()
        [snapshot] = self.snapshots()
        self.assertRegex(os.path.basename(snapshot), r"^oomlens-\d{8}-\d{6}-rank3-pid\d+-0001\.pickle$")
        with open(snapshot, "rb") as source:
            self.assertIn("device_traces", pickle.load(source))
        sidecar = self.sidecar_of(snapshot)
        self.assertEqual(sidecar["device_name"], "NVIDIA A100-SXM4-40GB")
        self.assertEqual(sidecar["total_memory_bytes"], 42298834944)
        self.assertIn("NVIDIA-SMI 550.54.15", sidecar["nvidia_smi"])
        self.assertEqual(sidecar["torch_version"], "2.7.1+cu126")
        self.assertEqual(sidecar["cuda_version"], "12.6")
        self.assertEqual(sidecar["alloc_conf"], "expandable_segments:True")
        self.assertEqual(sidecar["rank"], 3)
        self.assertEqual(sidecar["world_size"], 8)
        self.assertIsNone(sidecar["exception"])  # the observer runs before the exception exists
        self.assertEqual(sidecar["oom"]["requested_bytes"], 2 << 30)
        self.assertEqual(sidecar["oom"]["device_free_bytes"], 1 << 30)
        self.assertEqual(sidecar["snapshot"], os.path.basename(snapshot))
        self.assertEqual(sidecar["max_entries"], 102400)
        self.assertEqual(glob.glob(os.path.join(self.dir, "*.partial")), [])

    def test_rank_from_torch_distributed_wins(self):
        os.environ["RANK"] = "3"
        self.fake.distributed = (5, 16)
        self.install()
        self.fire_observer()
        sidecar = self.sidecar_of(self.snapshots()[0])
        self.assertEqual((sidecar["rank"], sidecar["world_size"]), (5, 16))

    def test_repeated_calls_for_one_failure_dump_once(self):
        self.install()
        for _ in range(3):
            self.fire_observer()
        self.assertEqual(len(self.snapshots()), 1)

    def test_observer_never_raises(self):
        self.install(min_interval_s=0)
        self.fake.dump_error = "disk full"
        self.fire_observer()  # must not raise
        self.assertEqual(self.snapshots(), [])
        self.assertTrue(any("disk full" in line for line in self.logs), self.logs)
        self.fake.dump_error = None
        self.fake.device_properties_error = "driver gone"
        self.fire_observer()
        [snapshot] = self.snapshots()
        sidecar = self.sidecar_of(snapshot)
        self.assertNotIn("total_memory_bytes", sidecar)
        self.assertIn("driver gone", sidecar["device_error"])
        self.fake.observers[0](None, "not a size", object(), None)  # whatever a future PyTorch passes
        self.assertTrue(any("OOM observer failed" in line for line in self.logs), self.logs)

    def test_observer_is_quiet_after_uninstall(self):
        self.install()
        observer = self.fake.observers[0]
        oomlens_capture.uninstall()
        observer(0, 1 << 30, 0, 0)
        self.assertEqual(self.snapshots(), [])
        self.assertEqual(self.fake.history_calls[-1]["enabled"], None)


class NvidiaSmiTest(CaptureTestCase):
    def dump_one(self):
        self.install()
        self.fire_observer()
        [snapshot] = self.snapshots()
        return self.sidecar_of(snapshot)

    def test_missing_binary(self):
        self.fake_smi(None)
        sidecar = self.dump_one()
        self.assertIsNone(sidecar["nvidia_smi"])
        self.assertIn("not found", sidecar["nvidia_smi_error"])
        self.assertEqual(sidecar["total_memory_bytes"], 42298834944)

    def test_failing_binary(self):
        self.fake_smi("#!/bin/sh\necho 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.'\nexit 9\n")
        sidecar = self.dump_one()
        self.assertIsNone(sidecar["nvidia_smi"])
        self.assertIn("status 9", sidecar["nvidia_smi_error"])
        self.assertIn("could not communicate", sidecar["nvidia_smi_error"])

    def test_hanging_binary_times_out(self):
        self.fake_smi("#!/bin/sh\nexec %s 30\n" % SLEEP)
        saved = _sidecar.NVIDIA_SMI_TIMEOUT_S
        _sidecar.NVIDIA_SMI_TIMEOUT_S = 0.5
        try:
            started = time.monotonic()
            sidecar = self.dump_one()
            self.assertLess(time.monotonic() - started, 10)
        finally:
            _sidecar.NVIDIA_SMI_TIMEOUT_S = saved
        self.assertIsNone(sidecar["nvidia_smi"])
        self.assertIn("did not answer", sidecar["nvidia_smi_error"])

    def test_unrunnable_binary(self):
        self.fake_smi("not a script at all, no shebang \x00")
        sidecar = self.dump_one()
        self.assertIsNone(sidecar["nvidia_smi"])
        self.assertIn("nvidia_smi_error", sidecar)


class GuardTest(CaptureTestCase):
    def test_guard_adds_the_exception_to_the_observer_dump_and_reraises(self):
        self.install()

        def train_step():
            self.fire_observer()  # what the allocator does just before raising
            raise OutOfMemoryError(OOM_TEXT)

        with self.assertRaises(OutOfMemoryError) as raised:
            with oomlens_capture.guard():
                train_step()
        self.assertEqual(str(raised.exception), OOM_TEXT)
        [snapshot] = self.snapshots()
        exception = self.sidecar_of(snapshot)["exception"]
        self.assertIn("OutOfMemoryError: CUDA out of memory.", exception)
        self.assertIn("Traceback (most recent call last)", exception)
        self.assertIn("in train_step", exception)

    def test_guard_dumps_when_the_observer_did_not(self):
        self.install()

        @oomlens_capture.guard()
        def train():
            raise OutOfMemoryError(OOM_TEXT)

        with self.assertRaises(OutOfMemoryError):
            train()
        [snapshot] = self.snapshots()
        self.assertIn("Tried to allocate 2.00 GiB", self.sidecar_of(snapshot)["exception"])

    def test_old_runtime_error_oom(self):
        self.install()
        with self.assertRaises(RuntimeError):
            with oomlens_capture.guard():
                raise RuntimeError("CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 7.79 GiB total capacity)")
        self.assertEqual(len(self.snapshots()), 1)

    def test_other_errors_pass_untouched(self):
        self.install()
        with self.assertRaises(ValueError):
            with oomlens_capture.guard():
                raise ValueError("bad batch")
        self.assertEqual(self.snapshots(), [])

    def test_guard_without_install_only_reraises(self):
        with self.assertRaises(OutOfMemoryError):
            with oomlens_capture.guard():
                raise OutOfMemoryError(OOM_TEXT)

    def test_guard_survives_a_failing_dump(self):
        self.install()
        self.fake.dump_error = "disk full"
        with self.assertRaises(OutOfMemoryError) as raised:
            with oomlens_capture.guard():
                raise OutOfMemoryError(OOM_TEXT)
        self.assertEqual(str(raised.exception), OOM_TEXT)


class RotationTest(CaptureTestCase):
    def test_keeps_the_newest_dumps_of_this_rank(self):
        os.environ["RANK"] = "0"
        other = os.path.join(self.dir, "oomlens-20200101-000000-rank1-pid1-0001.pickle")
        rankless = os.path.join(self.dir, "oomlens-20200101-000000-pid1-0001.pickle")
        mine = os.path.join(self.dir, "my-own-snapshot.pickle")
        lookalike = os.path.join(self.dir, "oomlens-notes-rank0-pid1-0001.pickle")
        os.makedirs(self.dir)
        for path in (other, rankless, mine, lookalike):
            open(path, "wb").close()
            os.utime(path, (0, 0))  # the oldest files in the folder
        self.install(keep=2, min_interval_s=0)
        written = []
        for _ in range(5):
            self.fire_observer()
            written.append(self.snapshots())
        kept = [p for p in self.snapshots() if "-rank0-pid%d-" % os.getpid() in p]
        self.assertEqual(len(kept), 2)
        self.assertEqual(kept, oomlens_capture.current().dumps)
        self.assertTrue(kept[-1].endswith("-0005.pickle"))
        self.assertTrue(kept[0].endswith("-0004.pickle"))
        self.assertEqual(len(glob.glob(os.path.join(self.dir, "*rank0*.oomlens.json"))), 2)
        self.assertTrue(os.path.exists(other), "another rank's dump must survive")
        self.assertTrue(os.path.exists(rankless), "a dump without a rank is another process's")
        self.assertTrue(os.path.exists(mine), "files we did not write must survive")
        self.assertTrue(os.path.exists(lookalike), "files we did not write must survive")


class StepTest(CaptureTestCase):
    def test_steps_are_annotated_and_numbered(self):
        self.install(min_interval_s=0)
        for _ in range(2):
            with oomlens_capture.step():
                pass
        with oomlens_capture.step(41) as number:
            self.assertEqual(number, 41)
            self.fire_observer()
        self.assertEqual(
            self.fake.annotations,
            [("START", "ProfilerStep#0"), ("END", "ProfilerStep#0"), ("START", "ProfilerStep#1"),
             ("END", "ProfilerStep#1"), ("START", "ProfilerStep#41"), ("END", "ProfilerStep#41")],
        )
        self.assertEqual(self.sidecar_of(self.snapshots()[0])["step"], 41)

    def test_step_without_install(self):
        with oomlens_capture.step(3) as number:
            self.assertEqual(number, 3)

    def test_manual_dump_with_note(self):
        self.install()
        path = oomlens_capture.dump("peak of step 10")
        self.assertRegex(os.path.basename(path), r"^oomlens-\d{8}-\d{6}-pid\d+-0001\.pickle$")
        sidecar = self.sidecar_of(path)
        self.assertEqual(sidecar["note"], "peak of step 10")
        self.assertIsNone(sidecar["exception"])
        # A manual dump is no failure: the next OOM still gets its own dump.
        self.fire_observer()
        self.assertEqual(len(self.snapshots()), 2)
        self.assertIsNone(self.sidecar_of(path)["exception"])


class SummarizeTest(CaptureTestCase):
    """Each dump summarized by the oomlens on PATH (here a stand-in recording its arguments)."""

    def fake_oomlens(self, body="", status=0):
        """An `oomlens` beside the fake nvidia-smi that logs its arguments and writes the summary."""
        calls = os.path.join(self.tmp.name, "oomlens-calls")
        script = (
            "#!/bin/sh\n"
            "echo \"$@\" >> %s\n"
            "snapshot=\"$2\"\n"
            "echo '{\"oomlens_rank_summary\": 1}' > \"${snapshot%%.pickle}.oomlens-summary.json\"\n"
            "%s\nexit %d\n" % (calls, body, status)
        )
        path = os.path.join(self.tmp.name, "bin", "oomlens")
        with open(path, "w") as out:
            out.write(script)
        os.chmod(path, stat.S_IRWXU)
        return calls

    def calls(self, log):
        if not os.path.exists(log):
            return []
        with open(log) as source:
            return [line.split() for line in source.read().splitlines()]

    def test_each_dump_is_summarized_beside_it(self):
        log = self.fake_oomlens()
        self.install()
        self.fire_observer()
        [snapshot] = self.snapshots()
        self.assertEqual(self.calls(log), [["summarize", snapshot, "-o", self.dir, "--jobs", "1"]])
        self.assertTrue(os.path.exists(snapshot[: -len(".pickle")] + ".oomlens-summary.json"))

    def test_again_once_guard_adds_the_exception(self):
        log = self.fake_oomlens()
        self.install()
        with self.assertRaises(OutOfMemoryError):
            with oomlens_capture.guard():
                self.fire_observer()
                raise OutOfMemoryError(OOM_TEXT)
        [snapshot] = self.snapshots()
        self.assertEqual(len(self.calls(log)), 2)
        self.assertEqual(self.sidecar_of(snapshot)["exception"].count("CUDA out of memory"), 1)

    def test_off_switch(self):
        log = self.fake_oomlens()
        self.install(summarize=False)
        self.fire_observer()
        self.assertEqual(len(self.snapshots()), 1)
        self.assertEqual(self.calls(log), [])

    def test_no_oomlens_on_path_is_quiet(self):
        self.install()
        self.fire_observer()
        self.assertEqual(len(self.snapshots()), 1)
        self.assertEqual([line for line in self.logs if "summar" in line], [])

    def test_a_failing_summarize_is_logged_and_the_dump_kept(self):
        self.fake_oomlens("echo 'oomlens: no room left' >&2", status=1)
        self.install()
        self.fire_observer()
        self.assertEqual(len(self.snapshots()), 1)
        self.assertTrue(any("no room left" in line for line in self.logs), self.logs)

    def test_a_hanging_summarize_times_out(self):
        self.fake_oomlens("exec %s 30" % SLEEP)
        saved = _capture.SUMMARIZE_TIMEOUT_S
        _capture.SUMMARIZE_TIMEOUT_S = 0.5
        try:
            started = time.monotonic()
            self.install()
            self.fire_observer()
            self.assertLess(time.monotonic() - started, 10)
        finally:
            _capture.SUMMARIZE_TIMEOUT_S = saved
        self.assertEqual(len(self.snapshots()), 1)
        self.assertTrue(any("cannot summarize" in line for line in self.logs), self.logs)

    def test_the_oomlens_beside_the_package_comes_before_path(self):
        """The release tarball's layout: the package's folder and `oomlens` side by side."""
        on_path = self.fake_oomlens()
        unpacked = os.path.join(self.tmp.name, "unpacked")
        os.makedirs(unpacked)
        beside_calls = os.path.join(self.tmp.name, "beside-calls")
        beside = os.path.join(unpacked, "oomlens")
        with open(beside, "w") as out:
            out.write("#!/bin/sh\necho \"$@\" >> %s\n" % beside_calls)
        os.chmod(beside, stat.S_IRWXU)
        saved = _capture.BESIDE_PACKAGE
        _capture.BESIDE_PACKAGE = unpacked
        try:
            self.install()
            self.fire_observer()
        finally:
            _capture.BESIDE_PACKAGE = saved
        [snapshot] = self.snapshots()
        self.assertEqual(self.calls(beside_calls), [["summarize", snapshot, "-o", self.dir, "--jobs", "1"]])
        self.assertEqual(self.calls(on_path), [])

    def test_beside_means_the_folder_that_holds_the_package(self):
        """Where an unpacked copy of the package looks, asked of that copy in a fresh interpreter."""
        unpacked = os.path.join(self.tmp.name, "oomlens-unpacked")
        package = os.path.dirname(os.path.abspath(_capture.__file__))
        shutil.copytree(package, os.path.join(unpacked, "oomlens_capture"),
                        ignore=shutil.ignore_patterns("__pycache__"))
        ask = [sys.executable, "-c", "from oomlens_capture import _capture; print(_capture.find_oomlens())"]
        env = {"PATH": os.environ["PATH"], "PYTHONPATH": unpacked, "PYTHONDONTWRITEBYTECODE": "1"}
        without = subprocess.run(ask, env=env, stdout=subprocess.PIPE, check=True, timeout=60)
        self.assertEqual(without.stdout.decode().strip(), "None")
        beside = os.path.join(unpacked, "oomlens")
        with open(beside, "w") as out:
            out.write("#!/bin/sh\n")
        os.chmod(beside, stat.S_IRWXU)
        found = subprocess.run(ask, env=env, stdout=subprocess.PIPE, check=True, timeout=60)
        self.assertEqual(found.stdout.decode().strip(), beside)

    def test_rotation_removes_the_summaries_too(self):
        os.environ["RANK"] = "0"
        self.fake_oomlens()
        self.install(keep=2, min_interval_s=0)
        for _ in range(4):
            self.fire_observer()
        self.assertEqual(len(self.snapshots()), 2)
        self.assertEqual(len(glob.glob(os.path.join(self.dir, "*.oomlens-summary.json"))), 2)


OOMLENS_BINARY = os.environ.get("OOMLENS_BINARY", "")


@unittest.skipUnless(os.path.isfile(OOMLENS_BINARY), "OOMLENS_BINARY (the built oomlens) is not set or not built")
class EndToEndTest(CaptureTestCase):
    """What the helper writes is what oomlens reads: the sidecar is found beside the dump."""

    def test_oomlens_reads_the_dump_with_its_sidecar(self):
        os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "expandable_segments:True"
        self.install()

        def train_step():
            self.fire_observer()
            raise OutOfMemoryError(OOM_TEXT)

        with self.assertRaises(OutOfMemoryError):
            with oomlens_capture.guard():
                train_step()
        [snapshot] = self.snapshots()
        done = subprocess.run([OOMLENS_BINARY, "diagnose", "--json", snapshot], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=60, check=False)
        self.assertEqual(done.returncode, 0, done.stderr.decode())
        report = json.loads(done.stdout)
        kinds = [item["kind"] for item in report["inputs"]]
        self.assertEqual(kinds, ["snapshot", "sidecar"])
        sidecar_input = report["inputs"][1]
        self.assertIsNone(sidecar_input["error"])
        self.assertEqual(sidecar_input["sidecar"]["total_memory_bytes"], 42298834944)
        self.assertEqual(sidecar_input["sidecar"]["alloc_conf"], "expandable_segments:True")
        [message] = report["oom_messages"]
        self.assertEqual(message["requested_bytes"], 2 << 30)


    def test_the_summary_the_helper_writes_stands_for_the_dump(self):
        bin_dir = os.path.join(self.tmp.name, "bin")
        os.symlink(os.path.abspath(OOMLENS_BINARY), os.path.join(bin_dir, "oomlens"))
        os.environ["RANK"] = "5"
        os.environ["WORLD_SIZE"] = "8"
        self.install()
        self.fire_observer()
        [snapshot] = self.snapshots()
        summary = snapshot[: -len(".pickle")] + ".oomlens-summary.json"
        self.assertTrue(os.path.exists(summary), self.logs)
        with open(summary, encoding="utf-8") as source:
            written = json.load(source)
        self.assertEqual(written["oomlens_rank_summary"], 1)
        self.assertEqual(written["rank"], 5)
        self.assertEqual(written["rank_source"], "metadata")
        self.assertEqual(written["snapshot"]["path"], snapshot)
        self.assertEqual(written["snapshot"]["size_bytes"], os.path.getsize(snapshot))
        done = subprocess.run([OOMLENS_BINARY, "diagnose", "--json", summary], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=60, check=False)
        self.assertEqual(done.returncode, 0, done.stderr.decode())
        report = json.loads(done.stdout)
        self.assertEqual(report["job"]["from_summaries"], 1)
        self.assertEqual(report["job"]["ranks"][0]["rank"], 5)
        # The dump lies beside its summary: the rank is diagnosed in full from it.
        self.assertEqual(len(report["snapshots"]), 1)


if __name__ == "__main__":
    unittest.main()
