#!/usr/bin/env python3
"""Two oomlens executables timed side by side on the same command: the portable static build
against the desktop build (bench/README.md, "The portable executable").

usage: bench/compare_builds.py --runs 5 DESKTOP PORTABLE -- diagnose --json /tmp/snap_1m.pickle

Runs alternate (desktop, portable, desktop, ...) so that a machine getting busier slows both
alike; prints each build's best and median wall time, median CPU time (user + system: on a
machine shared with other work, where wall time measures the neighbours as much as the program,
the figure to compare) and peak RSS, and the ratios of the medians. Output is discarded; a run
that fails stops the benchmark.
"""

import argparse
import os
import statistics
import subprocess
import sys
import time


def timed_run(binary, arguments):
    """Wall seconds, CPU seconds and peak RSS (MiB) of one run, from the kernel's accounting of
    the child."""
    started = time.monotonic()
    child = subprocess.Popen([binary] + arguments, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.monotonic() - started
    child.returncode = os.waitstatus_to_exitcode(status)
    stderr = child.stderr.read().decode(errors="replace")
    child.stderr.close()
    if child.returncode not in (0, 1):
        sys.exit("%s exited %d: %s" % (binary, child.returncode, stderr.strip()[-500:]))
    return wall, usage.ru_utime + usage.ru_stime, usage.ru_maxrss / 1024.0


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("desktop")
    parser.add_argument("portable")
    parser.add_argument("command", nargs=argparse.REMAINDER, help="-- then the oomlens command")
    arguments = parser.parse_args()
    command = arguments.command[1:] if arguments.command[:1] == ["--"] else arguments.command
    builds = {"desktop": arguments.desktop, "portable": arguments.portable}
    samples = {name: [] for name in builds}
    for _ in range(arguments.runs):
        for name, binary in builds.items():
            samples[name].append(timed_run(binary, command))
    medians, cpu_medians = {}, {}
    for name, runs in samples.items():
        walls = [wall for wall, _, _ in runs]
        medians[name] = statistics.median(walls)
        cpu_medians[name] = statistics.median(cpu for _, cpu, _ in runs)
        print("%-8s %10d bytes  best %.3f s  median %.3f s  CPU median %.3f s  peak RSS %.0f MiB" % (
            name, os.path.getsize(builds[name]), min(walls), medians[name], cpu_medians[name],
            max(rss for _, _, rss in runs)))
    print("portable / desktop (medians): wall %.3f, CPU %.3f; load average %.1f" % (
        medians["portable"] / medians["desktop"], cpu_medians["portable"] / cpu_medians["desktop"], os.getloadavg()[0]))


if __name__ == "__main__":
    main()
