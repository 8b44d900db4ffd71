#!/usr/bin/env python3
"""The portable oomlens run as a cluster node runs it.

The static executable is copied alone into an empty root (no libraries, no Python, no Qt, no
/proc), with the project's fixtures (tests/data) beside it, and every command-line path runs
there under chroot: `diagnose --json` and `diagnose` on each fixture, `summarize`, `report`,
`compare`, `plan`, an MCP session calling every tool, and the errors for bad input. Each answer
(stdout, stderr, exit status, files written) must be byte for byte the desktop build's, run on the
same files. The aarch64 executable runs the same way under qemu-user (--emulator).

usage: node_test.py --portable build/portable/app/oomlens --desktop build/release/app/oomlens
                    [--emulator /usr/bin/qemu-aarch64-static] [--data tests/data]
Exit status: 0 all passed, 1 something differed, 77 skipped (chroot is not allowed here, neither
as root nor in a user namespace).
"""

import argparse
import os
import shutil
import subprocess
import sys
import tempfile

import node_cases
from node_root import NodeRoot, RootNotAllowed

SKIPPED = 77


def is_static(binary, foreign):
    """No program interpreter (PT_INTERP): nothing for a loader to find on the node. And `ldd`,
    what a user on a node asks, must call it not dynamic; the host's ldd cannot read another
    architecture's file, so for that one the ELF header alone decides."""
    headers = subprocess.run(["readelf", "-lW", binary], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    if headers.returncode != 0 or "INTERP" in headers.stdout:
        return False, "readelf: a program interpreter is named (or no ELF file): dynamically linked"
    if foreign:
        return True, "readelf: no program interpreter"
    done = subprocess.run(["ldd", binary], stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    said = done.stdout.strip()
    return "not a dynamic executable" in said or "statically linked" in said, "ldd: " + said


def parse_arguments():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--portable", required=True, help="the static oomlens to test")
    parser.add_argument("--desktop", required=True, help="the desktop build's oomlens, the reference")
    parser.add_argument("--emulator", help="a static qemu-user that runs --portable (another architecture)")
    parser.add_argument("--data", default=os.path.normpath(os.path.join(here, "..", "data")))
    return parser.parse_args()


def main():
    arguments = parse_arguments()
    for path in filter(None, (arguments.portable, arguments.desktop, arguments.emulator)):
        if not os.access(path, os.X_OK):
            print("node test: %s is not an executable" % path, file=sys.stderr)
            return 1
    label = os.path.basename(arguments.emulator) if arguments.emulator else "native"
    static, said = is_static(arguments.portable, foreign=bool(arguments.emulator))
    print("%s static %s (%s)" % ("PASS" if static else "FAIL", arguments.portable, said))
    if not static:
        return 1
    scratch = tempfile.mkdtemp(prefix="oomlens-node-")
    try:
        try:
            root = NodeRoot(scratch, arguments.portable, arguments.desktop, arguments.emulator, arguments.data)
        except RootNotAllowed as why:
            print("SKIPPED: the node test needs chroot (as root, or `unshare -r` in a user namespace): %s" % why)
            return SKIPPED
        print("node test (%s, %s): the static oomlens alone in %s" % (label, root.how, root.path))
        passed, failed = node_cases.run_all(root)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    print("%d passed, %d failed" % (passed, failed))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
