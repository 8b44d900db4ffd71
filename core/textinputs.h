#pragma once

#include "core/backend.h"
#include "core/oomtemplate.h"
#include "core/phase.h"
#include "core/serving/servingrun.h"

#include <algorithm>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

// Value types for everything parsed from pasted text: OOM messages, tracebacks,
// memory_summary() tables, nvidia-smi tables and allocator settings.
// Every byte field is an integer in bytes; a field the input does not carry is empty.

namespace oomlens {

struct TracebackFrame
{
    std::string filename;
    int line = 0;
    std::string function;
    std::string code; // the source line under the frame, when printed
};

struct TracebackInfo
{
    std::vector<TracebackFrame> frames; // outermost first, as Python prints them (last block)
    std::string exceptionLine; // "torch.OutOfMemoryError: CUDA out of memory. ..."
    Phase phase = Phase::Unknown;
    std::string phaseEvidence; // the frame or line that decided the phase, in words
    bool chained = false; // "During handling of the above exception ..."
    bool compiled = false; // torch._dynamo / torch._inductor frames present
    bool truncated = false; // the input ends inside the frames, before the exception line
    size_t sourceLine = 0; // 1-based line of the first frame (or the header)
};

struct ProcessUsage
{
    std::optional<int64_t> pid; // empty for "this process" without a PID
    std::optional<uint64_t> bytes; // empty when NVML reported garbage (2^64 "not available")
    bool self = false;
};

// The compiled program's memory, as XLA prints it after RESOURCE_EXHAUSTED ("BufferAssignment stats:").
// Parameters are the program's inputs (weights, batch), temporaries its intermediates; XLA allocates
// all temporaries as one buffer, so the failing request is often exactly `tempBytes`.
struct XlaBufferStats
{
    std::optional<uint64_t> parameterBytes;
    std::optional<uint64_t> constantBytes;
    std::optional<uint64_t> liveOutBytes;
    std::optional<uint64_t> tempBytes;
    std::optional<uint64_t> totalBytes;
};

// One line of a training loop's progress log: its step, and the memory, sequence length or batch it printed.
struct MemoryLogPoint
{
    int64_t step = 0;
    std::optional<uint64_t> bytes; // "allocated 10.80 GB", "mem 14.2 GiB", "torch.cuda.memory_allocated()=6.02GB"
    std::optional<uint64_t> sequenceLength; // "seq_len 4096", "padded to 4096 tokens"
    std::string batch; // "16x512" or "32", as printed ("torch.Size([16, 512])" reads "16x512"); empty when not printed
    size_t sourceLine = 0;
    // What `bytes` measures, from the name it was printed under: "allocated" (live tensors), "reserved"
    // (the allocator's cache), "peak_allocated" / "peak_reserved" (running maxima), "memory" (not said).
    std::string bytesMetric;
    std::optional<uint64_t> tokens; // the batch's tokens printed as one count ("ntokens 3412", "tokens=32768")
};

// The progress lines a text printed before one failure. Every message of a text sees a prefix of the
// same parsed log, so the log is held once and shared: a 30 MB log with hundreds of failures would
// otherwise copy up to 100,000 points per failure.
class MemoryLog
{
public:
    MemoryLog() = default;
    explicit MemoryLog(std::vector<MemoryLogPoint> points)
        : m_points(std::make_shared<const std::vector<MemoryLogPoint>>(std::move(points)))
        , m_count(m_points->size())
    { }
    // The first `count` points of a log shared with other messages.
    MemoryLog(std::shared_ptr<const std::vector<MemoryLogPoint>> points, size_t count)
        : m_points(std::move(points))
        , m_count(m_points ? std::min(count, m_points->size()) : 0)
    { }

    const MemoryLogPoint* begin() const { return m_count ? m_points->data() : nullptr; }
    const MemoryLogPoint* end() const { return begin() + m_count; }
    size_t size() const { return m_count; }
    bool empty() const { return m_count == 0; }
    const MemoryLogPoint& operator[](size_t index) const { return (*m_points)[index]; }
    const MemoryLogPoint& front() const { return (*m_points)[0]; }
    const MemoryLogPoint& back() const { return (*m_points)[m_count - 1]; }
    // The points this log adds to `earlier`, a prefix of the same log (an earlier message of the same
    // text); all of them when the two come from different texts.
    std::span<const MemoryLogPoint> pointsAfter(const MemoryLog& earlier) const
    {
        const size_t from = earlier.m_points == m_points ? std::min(earlier.m_count, m_count) : 0;
        return { begin() + from, end() };
    }

private:
    std::shared_ptr<const std::vector<MemoryLogPoint>> m_points;
    size_t m_count = 0;
};

// How the run trains, as far as the log says: the width of the weights, mixed precision, the
// optimizer. Empty fields were not said; `evidence` keeps each line that said something.
struct TrainingRecipe
{
    std::string weightPrecision; // "fp32", "bf16", "fp16"
    bool autocast = false; // 16-bit compute over the weights (autocast, AMP, Lightning's "16-mixed")
    bool masterWeights = false; // an fp32 copy of 16-bit weights kept by the optimizer (DeepSpeed fp16/bf16, apex O2)
    std::string optimizer; // "adamw", "adam", "adamw-8bit", "sgd", "adafactor", "lion"
    std::string optimizerVariant; // "fused", "foreach", "paged", "offload" (state kept on the host)
    std::string sharding; // "zero1", "zero2", "zero3", "fsdp": state split across GPUs; empty when not said
    // Activation checkpointing as the log sets it (gradient_checkpointing=True, --recompute-granularity
    // full): nullopt when not said, false when a line turns it off; the line that said it last.
    std::optional<bool> activationCheckpointing;
    std::string checkpointingEvidence;
    std::vector<std::string> evidence; // "line 2: Using fused AdamW, lr=1e-5, bf16 autocast, fp32 weights"
    bool empty() const
    {
        return weightPrecision.empty() && !autocast && !masterWeights && optimizer.empty() && sharding.empty()
            && !activationCheckpointing;
    }
};

struct OomMessage
{
    Backend backend = Backend::None;
    OomTemplate templateId = OomTemplate::None;
    std::string exception; // the exception class as printed ("torch.OutOfMemoryError"), may be empty
    std::optional<int> device;
    std::optional<uint64_t> requestedBytes;
    std::optional<uint64_t> totalBytes;
    std::optional<uint64_t> freeBytes;
    std::optional<uint64_t> allocatedBytes;
    std::optional<uint64_t> reservedBytes;
    std::optional<uint64_t> reservedUnallocatedBytes;
    std::optional<uint64_t> allowedBytes;
    std::optional<uint64_t> privatePoolsBytes;
    std::optional<uint64_t> otherAllocationsBytes; // MPS "other allocations"
    std::optional<XlaBufferStats> xlaBuffers; // XLA's BufferAssignment stats after the message
    // A per-allocation limit of the platform refused the request, not exhausted memory (IPEX on GPUs
    // without 2D block arrays: no single block above 4 GB).
    std::optional<uint64_t> platformLimitBytes;
    // The trainable parameter count the log printed before the failure (PEFT's "trainable params: N",
    // the HF Trainer's "Number of trainable parameters = N"): what training state will need.
    std::optional<uint64_t> trainableParameters;
    // All parameters, frozen ones included, when printed beside the trainable count ("all params: N",
    // Lightning's "Total params"): frozen weights take memory too, without gradients or moments.
    std::optional<uint64_t> totalParameters;
    TrainingRecipe recipe; // what the log printed before the failure about precision and optimizer
    // The training loop's own memory log before the failure ("iter 300 allocated 10.80 GB batch 16x512",
    // "step 4430 | seq_len 4096"): growth at a constant batch, or one batch much longer than the rest.
    MemoryLog memoryLog;
    std::vector<ProcessUsage> processes;
    std::string torchVersionHint; // "2.2-2.7", "<=1.3", ...
    Phase phase = Phase::Unknown;
    bool truncated = false;
    bool probable = false; // near-OOM errors (cuBLAS alloc failure, runtime 'out of memory')
    std::string text; // the message, whitespace-normalized, prefixes stripped
    std::optional<TracebackInfo> traceback;
    std::vector<std::string> notes; // oddities noticed while parsing, in plain words
    size_t sourceLine = 0; // 1-based line in the input where the message starts
    // The rank whose torchrun "[rankN]:" prefix the message's lines carry; nullopt without one.
    std::optional<int> rank;

    // The template's name, else the backend's ("cublas"): what a sentence calls a message it has no
    // numbers from.
    std::string wordingName() const;
};

// One metric row of memory_summary(): values in bytes for memory rows, in counts otherwise.
struct SummaryRow
{
    std::optional<uint64_t> current;
    std::optional<uint64_t> peak;
    std::optional<uint64_t> allocated;
    std::optional<uint64_t> freed;
};

struct MemorySummary
{
    int device = 0;
    std::optional<int64_t> ooms;
    std::optional<int64_t> allocRetries;
    std::map<std::string, SummaryRow> rows; // snake_case metric -> "all" row
    std::map<std::string, SummaryRow> largePool; // "from large pool" sub-rows
    std::map<std::string, SummaryRow> smallPool; // "from small pool" sub-rows
    std::string unitEra; // "KB/MB" (<=1.13) or "KiB/MiB" (2.0+)
    bool abbreviated = false;
    bool truncated = false;
    bool allZero = false; // cudaMallocAsync: counters are meaningless
    size_t sourceLine = 0;
};

struct GpuProcess
{
    int gpu = 0;
    std::optional<int64_t> pid;
    std::string type; // C, G, C+G
    std::string name;
    std::optional<uint64_t> bytes;
};

struct NvidiaSmiGpu
{
    int index = 0;
    std::string name;
    std::optional<uint64_t> usedBytes;
    std::optional<uint64_t> totalBytes;
};

struct NvidiaSmiTable
{
    std::string driverVersion;
    std::string cudaVersion;
    std::vector<NvidiaSmiGpu> gpus;
    std::vector<GpuProcess> processes;
    size_t sourceLine = 0;
};

// PYTORCH_CUDA_ALLOC_CONF's "backend:" option; PyTorch refuses any other value at start-up.
enum class AllocatorBackend {
    Native, // the caching allocator
    CudaMallocAsync, // the driver's pools: no split blocks, no cache counters
};

std::string_view allocatorBackendName(AllocatorBackend backend); // "native", "cudaMallocAsync"

struct AllocConfSetting
{
    std::string raw; // "expandable_segments:True,max_split_size_mb:128"
    std::map<std::string, std::string> options; // key -> value as written
    std::string source; // "export", "os.environ", "set_allocator_settings", "snapshot"
    bool expandableSegments() const;
    std::optional<int64_t> maxSplitSizeMb() const;
    AllocatorBackend backend() const; // Native unless set
    size_t sourceLine = 0;
};

// How a line says the host killed the process for lack of RAM.
enum class HostKillKind : uint8_t {
    KernelOomKiller, // "Out of memory: Killed process"
    Cgroup, // "Memory cgroup out of memory", "oom-kill:constraint=CONSTRAINT_MEMCG", slurmstepd's oom-kill event,
            // OOMKilled
    DataloaderWorker, // "DataLoader worker (pid N) is killed by signal: Killed"
    SharedMemory, // "... killed by signal: Bus error": /dev/shm is full
    Killed, // a shell's "Killed"
    Exit137, // exit status 137 = 128 + SIGKILL, torchrun's "exitcode: -9"
};
// The JSON's host_kills[].kind: "kernel_oom_killer", "cgroup", "dataloader_worker", "shared_memory",
// "killed", "exit_137".
std::string_view hostKillKindName(HostKillKind kind);
std::optional<HostKillKind> hostKillKindFromName(std::string_view name);

// One sign that the host ran out of RAM and the kernel (or a cgroup, or a container runtime) killed
// the process: no CUDA message, often no Python traceback at all.
struct HostMemoryKill
{
    HostKillKind kind = HostKillKind::Killed;
    std::string line; // the line as printed, whitespace-normalized
    std::optional<int64_t> pid;
    std::string process; // the killed command when printed ("python")
    std::optional<uint64_t> residentBytes; // the kernel's anon-rss of the killed process
    std::optional<uint64_t> limitBytes; // the cgroup's limit when printed ("memory: usage X, limit Y")
    size_t sourceLine = 0;
};

// Everything found in one piece of text (a paste, a file, a whole training log).
struct TextFindings
{
    std::vector<OomMessage> oomMessages;
    std::vector<MemorySummary> summaries;
    std::vector<NvidiaSmiTable> nvidiaSmi;
    std::vector<AllocConfSetting> allocConfs;
    std::vector<TracebackInfo> tracebacks; // tracebacks that carry no OOM message of their own
    std::vector<int> launcherRanks; // distinct ranks in torchrun's "[rankN]:" line prefixes, ascending
    // Ranks whose own lines hold an OOM message, failing rank first (torchrun's first observed failure,
    // else the first message printed), the others ascending; empty without rank prefixes.
    std::vector<int> failedRanks;
    std::vector<HostMemoryKill> hostKills; // host RAM exhausted: OOM-killer lines, "Killed", exit 137
    // The inference engine the text shows serving or generating (servingrun.h); the first text's
    // when several show one.
    std::optional<ServingRun> serving;
    bool empty() const
    {
        return oomMessages.empty() && summaries.empty() && nvidiaSmi.empty() && allocConfs.empty() && tracebacks.empty()
            && hostKills.empty() && !serving;
    }
    // The phase the texts say the failure happened in: the first OOM message's (or its
    // traceback's), else the first bare traceback's; Unknown when none says.
    Phase failingPhase() const;
};

} // namespace oomlens
