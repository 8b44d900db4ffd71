#include "core/diagnosis/fixladder.h"

// Fixes for a run the host's OOM killer ended. They act on host RAM (DataLoader workers, pinned
// buffers, checkpoint loading, the container's limit); none of them touches GPU memory, and no
// VRAM fix is ever offered for such a kill.

namespace oomlens {

std::optional<Fix> makeHostMemoryFix(FixKind kind, const FixContext&)
{
    switch (kind) {
    case FixKind::HostFewerWorkers:
        return Fix { FixKind::HostFewerWorkers, "Use fewer DataLoader workers and prefetch less",
            "Every worker is a separate process with its own copy of whatever the dataset object holds, plus "
            "prefetch_factor batches in flight. Eight workers over a dataset that keeps a few GiB in Python "
            "objects need eight times that in RAM.",
            "loader = DataLoader(dataset, batch_size=32,\n"
            "                    num_workers=2,            # was 8\n"
            "                    prefetch_factor=2,        # batches queued per worker\n"
            "                    persistent_workers=False)\n"
            "\n"
            "# Hugging Face Trainer\n"
            "TrainingArguments(dataloader_num_workers=2, dataloader_prefetch_factor=2)",
            std::nullopt, std::nullopt, false };
    case FixKind::HostSharedDataset:
        return Fix { FixKind::HostSharedDataset,
            "Keep the dataset in memory-mapped or shared storage, not per-worker copies",
            "Python lists and dicts are copied page by page into each forked worker as soon as it touches them "
            "(reference counts write to every object). Arrays in a memory-mapped file or Arrow table are shared "
            "by all workers and read from the page cache.",
            "import numpy as np\n"
            "tokens = np.load(\"tokens.npy\", mmap_mode=\"r\")   # shared, read-only, paged in on demand\n"
            "\n"
            "# Hugging Face datasets are Arrow files, memory-mapped already: keep them that way\n"
            "ds = datasets.load_from_disk(\"data/\")            # not ds.to_pandas() / list(ds)",
            std::nullopt, std::nullopt, false };
    case FixKind::HostPinMemory:
        return Fix { FixKind::HostPinMemory, "Turn off pinned host buffers",
            "pin_memory=True page-locks a copy of every batch in host RAM; page-locked memory cannot be swapped "
            "and counts fully against a container's limit.",
            "loader = DataLoader(dataset, batch_size=32, num_workers=2, pin_memory=False)\n"
            "\n"
            "# Hugging Face Trainer\n"
            "TrainingArguments(dataloader_pin_memory=False)",
            std::nullopt, std::nullopt, false };
    case FixKind::HostLazyCheckpoint:
        return Fix { FixKind::HostLazyCheckpoint, "Load checkpoints memory-mapped, to the CPU, one rank at a time",
            "torch.load reads the whole checkpoint into RAM, and every rank on the node does it at once: eight "
            "ranks loading a 30 GiB checkpoint need 240 GiB. mmap=True reads tensors lazily from the file; "
            "Hugging Face loads shards one by one with low_cpu_mem_usage.",
            "state = torch.load(\"model.pt\", map_location=\"cpu\", mmap=True, weights_only=True)\n"
            "model.load_state_dict(state, assign=True)\n"
            "\n"
            "# Hugging Face\n"
            "AutoModelForCausalLM.from_pretrained(name, low_cpu_mem_usage=True, torch_dtype=torch.bfloat16)",
            std::nullopt, std::nullopt, false };
    case FixKind::HostMemoryLimit:
        return Fix { FixKind::HostMemoryLimit, "Raise the job's or container's memory limit",
            "A cgroup limit (Slurm --mem, a Kubernetes memory limit, docker --memory) kills the job when it is "
            "passed, even with free RAM on the machine. Ask for more, or check that the limit is what you meant.",
            "#SBATCH --mem=128G                   # Slurm: per node\n"
            "docker run --memory=64g --shm-size=16g ...\n"
            "# Kubernetes\n"
            "resources: {limits: {memory: 64Gi}}\n"
            "\n"
            "# what the job actually used, after the fact\n"
            "sacct -j <jobid> --format=JobID,MaxRSS,ReqMem,State",
            std::nullopt, std::nullopt, false };
    case FixKind::HostSharedMemory:
        return Fix { FixKind::HostSharedMemory, "Give the container a larger /dev/shm",
            "DataLoader workers hand batches to the main process through shared memory; Docker's default /dev/shm "
            "is 64 MiB, and a worker dies with SIGBUS when it is full.",
            "docker run --shm-size=16g ...       # or --ipc=host\n"
            "df -h /dev/shm                      # how big it is now",
            std::nullopt, std::nullopt, false };
    default:
        return std::nullopt;
    }
}

} // namespace oomlens
