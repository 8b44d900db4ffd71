"""An empty root holding the static oomlens alone, and the two ways to run a command there.

The portable executable runs under chroot, so it sees nothing but itself and the fixtures
(/data): no libraries, no interpreter, no /proc, /dev or /etc. The desktop build runs outside, in
the same folder, on the same relative paths, so that both print the same names.
"""

import os
import shutil
import subprocess

COMMAND_TIMEOUT_S = 300
ROOT_BINARY = "/oomlens"
CHROOT_FAILED = 125
NODE_ENVIRONMENT = {"PATH": "/", "LANG": "en_US.UTF-8", "LC_ALL": "en_US.UTF-8", "HOME": "/home/user"}


class RootNotAllowed(Exception):
    pass


def find_tool(name):
    return shutil.which(name) or shutil.which(name, path="/usr/sbin:/sbin:/usr/bin:/bin")


class Answer:
    """What one run said: exit status, stdout, stderr (bytes)."""

    def __init__(self, status, stdout, stderr):
        self.status, self.stdout, self.stderr = status, stdout, stderr


class NodeRoot:
    def __init__(self, scratch, portable, desktop, emulator, data):
        self.path = os.path.join(scratch, "root")
        self.desktop_binary = os.path.abspath(desktop)
        os.makedirs(self.path)
        shutil.copy2(portable, self.path + ROOT_BINARY)
        # A node of that architecture runs the file itself; here a static qemu-user, alone in
        # the root beside it, stands in for the processor.
        self.prefix = [ROOT_BINARY]
        if emulator:
            inside = "/" + os.path.basename(emulator)
            shutil.copy2(emulator, self.path + inside)
            self.prefix = [inside, ROOT_BINARY]
        shutil.copytree(data, os.path.join(self.path, "data"))
        self.how, self.enter = self._way_in()

    def _way_in(self):
        """chroot as root, else in a user namespace of our own: the first that gets the binary
        started. GNU chroot exits 125 when it cannot change root, unshare names itself when it
        cannot make the namespace; any other status is the binary's own (checked by the cases)."""
        chroot = find_tool("chroot")
        unshare = find_tool("unshare")
        if chroot is None:
            raise RootNotAllowed("no chroot command")
        ways = []
        if os.geteuid() == 0:
            ways.append(("chroot as root", [chroot, self.path]))
        if unshare is not None:
            ways.append(("unshare -r + chroot", [unshare, "-r", chroot, self.path]))
        said = "not root and no unshare"
        for how, enter in ways:
            done = subprocess.run(enter + self.prefix + ["--version"], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, timeout=COMMAND_TIMEOUT_S)
            refused = done.returncode == CHROOT_FAILED or done.stderr.startswith(b"unshare:")
            if not refused:
                return how, enter
            said = "%s: %s" % (how, done.stderr.decode(errors="replace").strip())
        raise RootNotAllowed(said)

    def portable(self, arguments, stdin=b""):
        """The static oomlens inside the root (working directory /), with a user's environment on
        a node: a named locale whose files are not there (a static C library would look for
        them only if the program asked for the user's locale, which it must not) and a home that
        does not exist."""
        done = subprocess.run(self.enter + self.prefix + arguments, input=stdin, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, timeout=COMMAND_TIMEOUT_S, env=NODE_ENVIRONMENT)
        return Answer(done.returncode, done.stdout, done.stderr)

    def desktop(self, arguments, stdin=b""):
        """The desktop build on the same files, from the root's folder; the root's own path taken
        out of what it prints, so that /data/x and ROOT/data/x read the same."""
        env = dict(os.environ, QT_QPA_PLATFORM="offscreen")
        for name in ("DISPLAY", "WAYLAND_DISPLAY"):
            env.pop(name, None)
        done = subprocess.run([self.desktop_binary] + arguments, input=self.inside(stdin), cwd=self.path,
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=COMMAND_TIMEOUT_S, env=env)
        unrooted = self.path.encode()
        return Answer(done.returncode, done.stdout.replace(unrooted, b""), done.stderr.replace(unrooted, b""))

    def inside(self, stdin):
        """What the desktop build is sent for what the portable one is sent: absolute paths in
        the root ("/data/x") name the same files under the root's folder."""
        return stdin.replace(b'"/data/', b'"' + self.path.encode() + b"/data/").replace(
            b'"/out/', b'"' + self.path.encode() + b"/out/")

    def host_path(self, inside):
        return os.path.join(self.path, inside.lstrip("/"))
