"""What a memory snapshot does not record, gathered at the moment of a dump.

Every field is best effort: a missing binary, an uninitialised process group or an
old PyTorch leaves the field out (or None) instead of failing the dump.
"""

import json
import os
import shutil
import socket
import subprocess
import time

# Keys oomlens reads (product brief §5); anything else is extra context for a person.
SIDECAR_SUFFIX = ".oomlens.json"
FORMAT = "oomlens-capture/1"

NVIDIA_SMI_TIMEOUT_S = 10.0


def nvidia_smi_text(timeout_s=None):
    """Return (text, error): nvidia-smi's default table, or why there is none.

    A hung driver can make nvidia-smi block for minutes, hence the timeout; the
    dump must go out either way.
    """
    if timeout_s is None:
        timeout_s = NVIDIA_SMI_TIMEOUT_S
    binary = shutil.which("nvidia-smi")
    if binary is None:
        return None, "nvidia-smi not found on PATH"
    try:
        done = subprocess.run(
            [binary],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return None, "nvidia-smi did not answer within %.0f s" % timeout_s
    except OSError as error:
        return None, "nvidia-smi could not be run: %s" % error
    text = done.stdout.decode("utf-8", "replace")
    if done.returncode != 0:
        return None, "nvidia-smi exited with status %d: %s" % (done.returncode, text.strip()[:500])
    return text, None


def rank_and_world_size(torch):
    """The process's rank and world size: torch.distributed when initialised, else the
    launcher's environment (torchrun, SLURM, Open MPI), else None."""
    try:
        dist = getattr(torch, "distributed", None)
        if dist is not None and dist.is_available() and dist.is_initialized():
            return int(dist.get_rank()), int(dist.get_world_size())
    except Exception:
        pass
    for rank_key, size_key in (
        ("RANK", "WORLD_SIZE"),
        ("SLURM_PROCID", "SLURM_NTASKS"),
        ("OMPI_COMM_WORLD_RANK", "OMPI_COMM_WORLD_SIZE"),
    ):
        rank, size = os.environ.get(rank_key), os.environ.get(size_key)
        if rank is not None:
            try:
                return int(rank), (int(size) if size is not None else None)
            except ValueError:
                continue
    return None, None


def _device_facts(torch, device):
    facts = {"device": device}
    try:
        props = torch.cuda.get_device_properties(device)
        facts["device_name"] = str(props.name)
        facts["total_memory_bytes"] = int(props.total_memory)
    except Exception as error:
        facts["device_error"] = "get_device_properties failed: %s" % error
    return facts


def collect(torch, device, snapshot_name, exception_text=None, oom=None, note=None, step=None, max_entries=None):
    """Build the sidecar object for a snapshot written as `snapshot_name`."""
    sidecar = {"format": FORMAT, "snapshot": snapshot_name}
    sidecar.update(_device_facts(torch, device))
    text, error = nvidia_smi_text()
    sidecar["nvidia_smi"] = text
    if error:
        sidecar["nvidia_smi_error"] = error
    sidecar["torch_version"] = str(getattr(torch, "__version__", "")) or None
    version = getattr(torch, "version", None)
    sidecar["cuda_version"] = getattr(version, "cuda", None)
    sidecar["alloc_conf"] = os.environ.get("PYTORCH_CUDA_ALLOC_CONF", os.environ.get("PYTORCH_ALLOC_CONF"))
    sidecar["rank"], sidecar["world_size"] = rank_and_world_size(torch)
    sidecar["exception"] = exception_text
    if oom is not None:
        sidecar["oom"] = oom
    if note is not None:
        sidecar["note"] = note
    if step is not None:
        sidecar["step"] = step
    if max_entries is not None:
        sidecar["max_entries"] = max_entries
    sidecar["hostname"] = socket.gethostname()
    sidecar["pid"] = os.getpid()
    sidecar["time"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
    return sidecar


def write(path, sidecar):
    """Write atomically, so that a reader never sees half a file."""
    partial = path + ".partial"
    with open(partial, "w", encoding="utf-8") as out:
        json.dump(sidecar, out, indent=1)
        out.write("\n")
    os.replace(partial, path)


def read(path):
    with open(path, encoding="utf-8") as source:
        return json.load(source)
