"""What family E shares: family D's modules on the path, and the allocator's out-of-memory path as
upstream writes it.

Family D's allocator (../familyd/allocator.py) searches the free lists once more after the
out-of-memory path's synchronise-and-release. PyTorch does not: DeviceCachingAllocator::malloc
(c10/cuda/CUDACachingAllocator.cpp, 2.1-2.7) runs

    block_found = alloc_block(params, false, context, lock)
        || (release_available_cached_blocks(params, context) && alloc_block(params, false, context, lock))
        || (C10_LIKELY(captures_underway.empty()) && release_cached_blocks(context)
            && alloc_block(params, true, context, lock));

so after release_cached_blocks() (which synchronises every outstanding event, turning pending frees
into free blocks, and returns the completely free segments to the driver) it only tries cudaMalloc
again. A pending block that becomes free there inside a segment that still holds live blocks would
have fit the request and is not used for it. UpstreamAllocator keeps everything else of family D's
emulation and drops that second search."""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
FAMILYD = os.path.normpath(os.path.join(HERE, "..", "familyd"))
if FAMILYD not in sys.path:
    sys.path.insert(1, FAMILYD)

from allocator import Allocator  # noqa: E402
from run import Run  # noqa: E402


class UpstreamAllocator(Allocator):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self._after_release = False

    def _release_cached(self):
        super()._release_cached()
        self._after_release = True

    def empty_cache(self):
        super().empty_cache()
        self._after_release = False

    def _find_free(self, pool, stream, small, size):
        if self._after_release:
            # the out-of-memory path goes straight from release_cached_blocks() to cudaMalloc
            self._after_release = False
            return None
        return super()._find_free(pool, stream, small, size)


def run_on(card, outside, device=0, visible=1, others=()):
    r = Run(card, outside=outside, device=device, others=others)
    r.a = UpstreamAllocator(r.a.total, r.a.limit, device=device)
    r.visible_devices = visible
    return r
