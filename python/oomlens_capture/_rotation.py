"""Dump file names and keeping only the newest few of them."""

import os
import re
import time

from ._sidecar import SIDECAR_SUFFIX

SNAPSHOT_SUFFIX = ".pickle"
# What `oomlens summarize` names a snapshot's summary: its name without the extension, then this.
SUMMARY_SUFFIX = ".oomlens-summary.json"
# Only names we wrote ourselves are ever rotated away, never anything else in the folder.
_OUR_NAME = re.compile(r"^oomlens-\d{8}-\d{6}(?:-rank(\d+))?-pid\d+-\d+\.pickle$")


def dump_path(directory, rank, sequence):
    """oomlens-20261124-021500-rank0-pid4242-0001.pickle: sortable by time; the rank and
    pid keep processes sharing one directory from overwriting each other."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    who = "-rank%d" % rank if rank is not None else ""
    name = "oomlens-%s%s-pid%d-%04d%s" % (stamp, who, os.getpid(), sequence, SNAPSHOT_SUFFIX)
    return os.path.join(directory, name)


def sidecar_path(snapshot_path):
    if snapshot_path.endswith(SNAPSHOT_SUFFIX):
        return snapshot_path[: -len(SNAPSHOT_SUFFIX)] + SIDECAR_SUFFIX
    return snapshot_path + SIDECAR_SUFFIX


def summary_path(snapshot_path):
    if snapshot_path.endswith(SNAPSHOT_SUFFIX):
        return snapshot_path[: -len(SNAPSHOT_SUFFIX)] + SUMMARY_SUFFIX
    return snapshot_path + SUMMARY_SUFFIX


def _dumps_of(directory, rank):
    try:
        names = os.listdir(directory)
    except OSError:
        return []
    wanted = None if rank is None else str(rank)
    paths = []
    for name in names:
        match = _OUR_NAME.match(name)
        if match and match.group(1) == wanted:
            paths.append(os.path.join(directory, name))
    return paths


def rotate(directory, rank, keep):
    """Delete all but the `keep` newest dumps of this rank (snapshot, sidecar and summary).

    Returns the removed snapshot paths.
    """
    if keep is None or keep <= 0:
        return []

    def age_key(path):
        try:
            return (os.path.getmtime(path), path)
        except OSError:
            return (0.0, path)

    dumps = sorted(_dumps_of(directory, rank), key=age_key)
    removed = []
    for path in dumps[: max(0, len(dumps) - keep)]:
        for victim in (path, sidecar_path(path), summary_path(path)):
            try:
                os.remove(victim)
            except OSError:
                pass
        removed.append(path)
    return removed
