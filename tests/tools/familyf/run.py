"""The program side of a simulated run: tensors with what they are for, the Python stack the
program is in, ticks of GPU time, and the out-of-memory outcome."""
from allocator import Allocator, OutOfMemory
from frames import Frames
from writer import Recorder

DEFAULT = 0
# Side streams as cudaStream_t handles cast to int.
AG_COPY_IN = 0x55D8C1A2F3B0
AG_STREAM = 0x55D8C1A30C70
RS_STREAM = 0x55D8C1A31530
CAPTURE_STREAM = 0x55D8C1B04E10


class Tensor:
    __slots__ = ("block", "cat", "nbytes")

    def __init__(self, block, cat, nbytes):
        self.block, self.cat, self.nbytes = block, cat, nbytes


class Run:
    def __init__(self, device, site_packages, t0_us):
        self.rec = Recorder(t0_us)
        self.alloc = Allocator(device, self.rec)
        self.fr = Frames(site_packages)
        self.device = device
        self.py = []  # the main thread's Python stack, outermost first
        self.engine = None  # autograd Node running on the engine thread, or None
        self.hook_py = None  # Python frames of a hook running on the engine thread
        self.phase, self.step = "init", 0
        self.oom = None
        self.annotations = []

    # where the program is
    def at(self, *frames):
        self.py = list(frames)

    def push(self, *frames):
        self.py = self.py + list(frames)

    def pop(self, n=1):
        self.py = self.py[:-n]

    def frames(self, extra=(), op="empty", free=False):
        if self.engine is not None:
            py = (self.hook_py or []) + list(extra) if self.hook_py is not None else []
            return self.fr.stack(py, op, engine_node=self.engine, free=free)
        return self.fr.stack(self.py + list(extra), op, free=free)

    # tensors
    def new(self, nbytes, cat, op="empty", stream=DEFAULT, extra=()):
        block = self.alloc.malloc(nbytes, stream, self.frames(extra, op), cat)
        return Tensor(block, cat, nbytes)

    def free(self, t, extra=(), ready_after=1):
        if t is None:
            return
        self.alloc.free(t.block, self.frames(extra, free=True), ready_after)

    def free_all(self, ts, extra=()):
        for t in ts:
            self.free(t, extra)

    def record_stream(self, t, stream):
        self.alloc.record_stream(t.block, stream)

    def tick(self, n=1):
        self.alloc.tick += n
        self.rec.advance(8000 * n)

    def execute(self, program):
        try:
            program(self)
            return True
        except OutOfMemory as e:
            self.oom = e.info
            self.oom["phase"], self.oom["step"] = self.phase, self.step
            self.oom["main_py"] = list(self.py)
            self.oom["entry_index"] = len(self.rec.entries) - 1
            return False
