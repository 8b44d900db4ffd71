"""What the user ends up holding: the snapshot pickle, the pasted OOM text, memory_summary()."""

import pickle

from cachingallocator import GiB, KiB, MiB


def format_size(n):
    """c10's format_size: bytes up to 1024, then KiB/MiB/GiB with two decimals (<= boundaries)."""
    if n <= 1024:
        return "%d bytes" % n
    if n <= 1048576:
        return "%.2f KiB" % (n / 1024.0)
    if n <= 1073741824:
        return "%.2f MiB" % (n / 1048576.0)
    return "%.2f GiB" % (n / 1073741824.0)


# -- snapshot ---------------------------------------------------------------------------------

def snapshot(device, era="2.5", max_entries=None, conf=""):
    trace = device.trace
    if max_entries is not None and len(trace) > max_entries:
        trace = trace[-max_entries:]
    if era >= "2.6":
        for entry in trace:
            entry.setdefault("compile_context", "")
            if era >= "2.8":
                entry.setdefault("user_metadata", "")
    out = {"segments": device.snapshot_segments(), "device_traces": [trace]}
    if era >= "2.3":
        out["allocator_settings"] = {
            "PYTORCH_CUDA_ALLOC_CONF": conf, "max_split_size": -1, "garbage_collection_threshold": 0.0,
            "expandable_segments": device.expandable, "pinned_num_register_threads": 1,
            "release_lock_on_cudamalloc": False, "pinned_use_cuda_host_register": False,
            "roundup_power2_divisions": {str(2 ** k): 0 for k in range(16)}}
    if era >= "2.5":
        out["external_annotations"] = []
    return out


def write_pickle(path, data, protocol):
    with open(path, "wb") as f:
        f.write(pickle.dumps(data, protocol=protocol))


# -- OOM message ------------------------------------------------------------------------------

def oom_sentence(report, era, procs="self", pid=0, other=None, backend="CUDA"):
    """The exception's message, as the allocator of that era formats it (one line)."""
    r = report
    tried = format_size(r["tried"])
    total = format_size(r["total"])
    free = format_size(r["free"])
    allowed = (format_size(r["allowed"]) + " allowed; ") if r.get("allowed") else ""
    if era < "2.1":
        hint = "" if era < "1.10" else (" If reserved memory is >> allocated memory try setting max_split_size_mb to avoid"
                                        " fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF")
        return ("%s out of memory. Tried to allocate %s (GPU 0; %s total capacity; %s already allocated; %s free; %s%s"
                " reserved in total by PyTorch)%s" % (backend, tried, total, format_size(r["allocated"]), free, allowed,
                                                      format_size(r["reserved"]), hint))
    clause = ""
    in_use = r["reserved"] + r["context"]
    if procs == "self":
        clause = "Including non-PyTorch memory, this process has %s memory in use. " % format_size(in_use)
    elif procs == "container":
        clause = "Process %d has %s memory in use. " % (pid, format_size(in_use))
    if other:
        other_clause = "Process %d has %s memory in use. " % (other[0], format_size(other[1]))
        clause = other_clause + clause
    cap = "capacty" if era.startswith("2.1") else "capacity"
    text = ("%s out of memory. Tried to allocate %s. GPU 0 has a total %s of %s of which %s is free. %s%sOf the allocated"
            " memory %s is allocated by PyTorch, and %s is reserved by PyTorch but unallocated." % (
                backend, tried, cap, total, free, clause, allowed, format_size(r["allocated"]),
                format_size(r["reserved"] - r["allocated"])))
    if era.startswith("2.1"):
        text += (" If reserved but unallocated memory is large try setting max_split_size_mb to avoid fragmentation.  "
                 "See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF")
    elif era < "2.8":
        text += (" If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
                 " to avoid fragmentation.  See documentation for Memory Management  "
                 "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")
    else:
        text += (" If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
                 " to avoid fragmentation.  See documentation for Memory Management  "
                 "(https://docs.pytorch.org/docs/stable/notes/cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)")
    return text


def exception_class(era):
    if era < "1.13":
        return "RuntimeError"
    if era < "2.5":
        return "torch.cuda.OutOfMemoryError"
    return "torch.OutOfMemoryError"


def traceback_text(frames, code, python311=False):
    """frames outermost first: (file, line, name); code: {(file, line): source line}."""
    lines = ["Traceback (most recent call last):"]
    for filename, line, name in frames:
        lines.append('  File "%s", line %d, in %s' % (filename, line, name))
        src = code.get((filename, line)) or code.get(name)
        if src:
            lines.append("    " + src)
            if python311 and "(" in src:
                start = src.index("(") - len(src.split("(")[0].split(".")[-1].split(" ")[-1])
                lines.append("    " + " " * max(0, start) + "^" * max(1, len(src) - start))
    return lines


def wrap(lines, width):
    out = []
    for line in lines:
        while len(line) > width:
            cut = line.rfind(" ", 0, width)
            if cut <= 0:
                cut = width
            out.append(line[:cut])
            line = line[cut + 1:]
        out.append(line)
    return out


def oom_text(report, era, frames, code, procs="self", pid=0, other=None, width=None, prefix="", python311=False,
             preamble=(), smi=None):
    lines = list(preamble)
    lines += traceback_text(frames, code, python311)
    lines.append(exception_class(era) + ": " + oom_sentence(report, era, procs, pid, other))
    if width:
        lines = wrap(lines, width)
    if prefix:
        lines = [prefix + line for line in lines]
    if smi:
        lines += [""] + smi
    return "\n".join(lines) + "\n"


def nvidia_smi(total_mib, used_mib, processes, name="NVIDIA A100-SXM4-80GB", driver="535.154.05", cuda="12.2"):
    """A 79-column nvidia-smi table; processes: [(pid, name, mib)]."""
    lines = [
        "+---------------------------------------------------------------------------------------+",
        "| NVIDIA-SMI %-22s Driver Version: %-14s CUDA Version: %-9s|" % (driver, driver, cuda),
        "|-----------------------------------------+----------------------+----------------------+",
        "| GPU  Name                 Persistence-M | Bus-Id        Disp.A | Volatile Uncorr. ECC |",
        "| Fan  Temp   Perf          Pwr:Usage/Cap |         Memory-Usage | GPU-Util  Compute M. |",
        "|                                         |                      |               MIG M. |",
        "|=========================================+======================+======================|",
        "|   0  %-25s      On  | 00000000:07:00.0 Off |                    0 |" % name[:25],
        "| N/A   41C    P0              88W / 400W | %8dMiB / %5dMiB |     97%%      Default |" % (used_mib, total_mib),
        "|                                         |                      |             Disabled |",
        "+-----------------------------------------+----------------------+----------------------+",
        "",
        "+---------------------------------------------------------------------------------------+",
        "| Processes:                                                                            |",
        "|  GPU   GI   CI        PID   Type   Process name                            GPU Memory |",
        "|        ID   ID                                                             Usage      |",
        "|=======================================================================================|",
    ]
    for pid, pname, mib in processes:
        lines.append("|    0   N/A  N/A   %8d      C   %-38s %6dMiB |" % (pid, pname[-38:], mib))
    lines.append("+---------------------------------------------------------------------------------------+")
    return lines


# -- memory_summary() -------------------------------------------------------------------------

def _size_cells(values, new_era):
    prefixes = ["B  ", "KiB", "MiB", "GiB", "TiB", "PiB"] if new_era else ["B ", "KB", "MB", "GB", "TB", "PB"]
    out = []
    for sz in values:
        pref = sz
        prefix = prefixes[0]
        for p in prefixes[1:]:
            if pref < 768 * 1024:
                break
            prefix = p
            pref //= 1024
            sz //= 1024
        out.append(("%6d %s" if new_era else "%7d %s") % (sz, prefix))
    return out


def _count_cells(values):
    out = []
    for cnt in values:
        pref = cnt
        prefix = " "
        for p in ["K", "M"]:
            if pref < 750 * 1000:
                break
            prefix = p
            pref //= 1000
            cnt //= 1000
        out.append("%7d %s " % (cnt, prefix))
    return out


def memory_summary(device, new_era=True):
    stats = device.stats
    lines = ["=" * 75,
             " %-16s PyTorch CUDA memory summary, device ID %-17d " % ("", 0),
             "-" * 75,
             "  %-9s CUDA OOMs: %-12d | %-6s cudaMalloc retries: %-8d  " % ("", stats.num_ooms, "", stats.num_alloc_retries),
             "=" * 75,
             "        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  "]
    # inactive_split is a state, not a counter the emulation tracks per event: report current
    split_bytes, split_count = device.inactive_split()
    metrics = [("allocated_bytes", "Allocated memory", True), ("active_bytes", "Active memory", True)]
    if new_era:
        metrics.append(("requested_bytes", "Requested memory", True))
    metrics += [("reserved_bytes", "GPU reserved memory", True), ("inactive_split_bytes", "Non-releasable memory", True),
                ("allocation", "Allocations", False), ("active", "Active allocs", False),
                ("segment", "GPU reserved segments", False), ("inactive_split", "Non-releasable allocs", False)]
    for key, label, is_size in metrics:
        lines.append("-" * 75)
        rows = []
        for pool, sub in (("all", label), ("large_pool", "      from large pool"), ("small_pool", "      from small pool")):
            c = stats.pools[pool][key]
            values = [c.current, c.peak, c.allocated, c.freed]
            if key == "inactive_split_bytes" and pool == "all":
                values = [split_bytes, max(split_bytes, c.peak), max(split_bytes, c.allocated), c.freed]
            if key == "inactive_split" and pool == "all":
                values = [split_count, split_count, split_count, 0]
            rows.append((sub, values))
        if is_size:
            ref = rows[0][1]
            cells = []
            for _, values in rows:
                cells.append(_scaled(values, ref, new_era))
        else:
            cells = [_count_cells(values) for _, values in rows]
        for (sub, _), c in zip(rows, cells):
            lines.append(" %-21s | %s | %s | %s | %s " % (sub, c[0], c[1], c[2], c[3]))
    lines.append("-" * 75)
    lines.append(" %-21s | %s | %s | %s | %s " % tuple(["Oversize allocations"] + _count_cells([0, 0, 0, 0])))
    lines.append("-" * 75)
    lines.append(" %-21s | %s | %s | %s | %s " % tuple(["Oversize GPU segments"] + _count_cells([0, 0, 0, 0])))
    lines.append("=" * 75)
    return "|" + "|\n|".join(lines) + "|\n"


def _scaled(values, ref, new_era):
    prefixes = ["B  ", "KiB", "MiB", "GiB", "TiB", "PiB"] if new_era else ["B ", "KB", "MB", "GB", "TB", "PB"]
    out = []
    for sz, pref in zip(values, ref):
        prefix = prefixes[0]
        for p in prefixes[1:]:
            if pref < 768 * 1024:
                break
            prefix = p
            pref //= 1024
            sz //= 1024
        out.append(("%6d %s" if new_era else "%7d %s") % (sz, prefix))
    return out


__all__ = ["format_size", "snapshot", "write_pickle", "oom_text", "nvidia_smi", "memory_summary", "GiB", "MiB", "KiB"]
