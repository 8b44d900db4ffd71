"""Pieces of console text: Python tracebacks, per-line prefixes (Docker compose service names,
vLLM's process tags) and a log under construction."""


def traceback(frames, error, header="Traceback (most recent call last):"):
    """A CPython traceback: frames are (file, line, function, source line)."""
    lines = [header]
    for path, line, func, code in frames:
        lines.append(f'  File "{path}", line {line}, in {func}')
        lines.append(f"    {code}")
    lines.extend(error.split("\n"))
    return lines


class Log:
    """Lines of one paste, each written with the prefix current at the time."""

    def __init__(self, prefix=""):
        self.lines = []
        self.prefix = prefix

    def add(self, *lines, prefix=None):
        p = self.prefix if prefix is None else prefix
        for line in lines:
            for part in line.split("\n"):
                self.lines.append((p + part).rstrip() if part else p.rstrip())
        return self

    def extend(self, lines, prefix=None):
        return self.add(*lines, prefix=prefix)

    def text(self):
        return "\n".join(self.lines) + "\n"
