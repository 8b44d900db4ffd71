"""A stand-in for the few parts of PyTorch that oomlens_capture touches.

Installed into sys.modules as `torch` so the helper can be tested without a GPU and
without PyTorch. It records every call so tests can check what the helper asked for.
"""

import pickle
import sys
import types


class OutOfMemoryError(RuntimeError):
    pass


class DeviceProperties:
    def __init__(self, name, total_memory):
        self.name = name
        self.total_memory = total_memory


class RecordFunction:
    def __init__(self, owner, name):
        self.owner = owner
        self.name = name

    def __enter__(self):
        self.owner.annotations.append(("START", self.name))
        return self

    def __exit__(self, *exc):
        self.owner.annotations.append(("END", self.name))
        return False


class FakeTorch:
    """Holds the modules and the call log; install() puts them in sys.modules."""

    def __init__(self, available=True, signature="new"):
        self.history_calls = []
        self.observers = []
        self.dumped = []
        self.annotations = []
        self.dump_error = None
        self.device_properties_error = None
        self.distributed = None  # (rank, world_size) when "initialised"
        self.signature = signature  # "new" (2.8+), "no_annotations" (2.1-2.7), "legacy" (2.0)

        torch = types.ModuleType("torch")
        torch.__version__ = "2.7.1+cu126"
        torch.version = types.SimpleNamespace(cuda="12.6")
        torch.OutOfMemoryError = OutOfMemoryError

        cuda = types.ModuleType("torch.cuda")
        cuda.OutOfMemoryError = OutOfMemoryError
        cuda.is_available = lambda: available
        cuda.current_device = lambda: 0
        cuda.get_device_properties = self._get_device_properties
        memory = types.ModuleType("torch.cuda.memory")
        memory._record_memory_history = self._record_memory_history
        memory._dump_snapshot = self._dump_snapshot
        cuda.memory = memory
        torch.cuda = cuda

        c = types.ModuleType("torch._C")
        c._cuda_attach_out_of_memory_observer = self.observers.append
        torch._C = c

        dist = types.ModuleType("torch.distributed")
        dist.is_available = lambda: True
        dist.is_initialized = lambda: self.distributed is not None
        dist.get_rank = lambda: self.distributed[0]
        dist.get_world_size = lambda: self.distributed[1]
        torch.distributed = dist

        profiler = types.ModuleType("torch.profiler")
        profiler.record_function = lambda name: RecordFunction(self, name)
        torch.profiler = profiler

        self.modules = {
            "torch": torch,
            "torch.cuda": cuda,
            "torch.cuda.memory": memory,
            "torch._C": c,
            "torch.distributed": dist,
            "torch.profiler": profiler,
        }
        self.torch = torch

    def install(self):
        self._saved = {name: sys.modules.get(name) for name in self.modules}
        sys.modules.update(self.modules)

    def uninstall(self):
        for name, module in self._saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module

    def _record_memory_history(self, enabled="all", *args, **kwargs):
        if isinstance(enabled, bool):
            self.history_calls.append(dict(kwargs, enabled=enabled, legacy=True))
            return
        if self.signature == "legacy":
            raise TypeError("_record_memory_history() got an unexpected keyword argument 'context'")
        if self.signature == "no_annotations" and "global_record_annotations" in kwargs:
            raise TypeError("unexpected keyword argument 'global_record_annotations'")
        self.history_calls.append(dict(kwargs, enabled=enabled))

    def _get_device_properties(self, device):
        if self.device_properties_error:
            raise RuntimeError(self.device_properties_error)
        return DeviceProperties("NVIDIA A100-SXM4-40GB", 42298834944)

    def _dump_snapshot(self, filename="dump_snapshot.pickle"):
        if self.dump_error:
            raise RuntimeError(self.dump_error)
        # The smallest snapshot PyTorch 2.1+ writes: one segment, one trace entry.
        snapshot = {
            "segments": [
                {
                    "device": 0,
                    "address": 1 << 32,
                    "total_size": 2 << 20,
                    "allocated_size": 1 << 20,
                    "active_size": 1 << 20,
                    "requested_size": 1 << 20,
                    "stream": 0,
                    "segment_type": "large",
                    "blocks": [
                        {"size": 1 << 20, "requested_size": 1 << 20, "address": 1 << 32, "state": "active_allocated", "frames": []},
                        {"size": 1 << 20, "requested_size": 0, "address": (1 << 32) + (1 << 20), "state": "inactive", "frames": []},
                    ],
                }
            ],
            "device_traces": [
                [{"action": "alloc", "addr": 1 << 32, "size": 1 << 20, "stream": 0, "time_us": 1, "frames": []}]
            ],
        }
        with open(filename, "wb") as out:
            pickle.dump(snapshot, out, protocol=2)
        self.dumped.append(filename)
