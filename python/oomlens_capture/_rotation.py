"""Dump file names and keeping only the newest few of them."""

import glob
import os
import time

from ._sidecar import SIDECAR_SUFFIX

PREFIX = "oomlens-"
SNAPSHOT_SUFFIX = ".pickle"


def dump_path(directory, rank, sequence):
    """oomlens-20261124-021500-rank0-pid4242-0001.pickle: sortable by time; the rank and
    pid keep processes sharing one directory from overwriting each other."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    who = "rank%d" % rank if rank is not None else "rank-"
    name = "%s%s-%s-pid%d-%04d%s" % (PREFIX, stamp, who, os.getpid(), sequence, SNAPSHOT_SUFFIX)
    return os.path.join(directory, name)


def sidecar_path(snapshot_path):
    if snapshot_path.endswith(SNAPSHOT_SUFFIX):
        return snapshot_path[: -len(SNAPSHOT_SUFFIX)] + SIDECAR_SUFFIX
    return snapshot_path + SIDECAR_SUFFIX


def rotate(directory, rank, keep):
    """Delete all but the `keep` newest dumps of this rank (snapshot and sidecar).

    Only files with our own naming are touched, never anything else in the folder.
    Returns the removed snapshot paths.
    """
    if keep is None or keep <= 0:
        return []
    who = "rank%d" % rank if rank is not None else "rank-"
    pattern = os.path.join(glob.escape(directory), "%s*-%s-pid*%s" % (PREFIX, who, SNAPSHOT_SUFFIX))

    def age_key(path):
        try:
            return (os.path.getmtime(path), path)
        except OSError:
            return (0.0, path)

    dumps = sorted(glob.glob(pattern), key=age_key)
    removed = []
    for path in dumps[: max(0, len(dumps) - keep)]:
        for victim in (path, sidecar_path(path)):
            try:
                os.remove(victim)
            except OSError:
                pass
        removed.append(path)
    return removed
