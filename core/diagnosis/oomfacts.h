#pragma once

#include "core/phase.h"
#include "core/textinputs.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace oomlens {

// The numbers of one OOM message, completed and cross-checked: templates print different
// subsets (T0 has "cached", T2+ has "reserved but unallocated"), so every consumer works from
// this one normalized view instead of re-deriving reserved or unallocated bytes itself.
struct OomFacts
{
    int device = 0;
    Backend backend = Backend::None;
    std::optional<uint64_t> request;
    std::optional<uint64_t> total;
    std::optional<uint64_t> free;
    std::optional<uint64_t> allocated; // PyTorch's live tensors (private pools included)
    std::optional<uint64_t> reserved; // PyTorch's cache: allocated + unallocated
    std::optional<uint64_t> reservedUnallocated; // cached but not in use
    std::optional<uint64_t> allowed; // per-process memory fraction, when printed
    std::optional<uint64_t> limit; // what this process may use: allowed, else total

    uint64_t otherProcessBytes = 0; // believable numbers of other PIDs only
    std::vector<int64_t> otherPids;
    // A "Process N" line that is this run seen from outside its container (host PIDs): with no
    // "this process" clause, the listed process holding this run's reserved memory plus a context.
    std::optional<int64_t> inferredSelfPid;
    std::optional<uint64_t> platformLimit; // a per-allocation cap of the platform (IPEX: 4 GB)
    std::optional<XlaBufferStats> xlaBuffers; // the compiled program's parameters / temporaries / total
    std::optional<uint64_t> trainableParameters; // printed by the log before the failure
    std::optional<uint64_t> totalParameters; // frozen ones included, when printed
    TrainingRecipe recipe; // precision and optimizer, as far as the log says
    MemoryLog memoryLog; // the loop's own progress lines before the failure
    std::optional<uint64_t> selfProcessBytes; // "this process has X memory in use"
    std::optional<uint64_t> selfNonPyTorchBytes; // self − reserved: CUDA context, cuDNN, NCCL, other libraries
    std::optional<uint64_t> mpsOtherBytes; // MPS "other allocations"
    std::optional<uint64_t> outsideBytes; // total − free − reserved: not held by this allocator
    bool garbageProcessNumbers = false; // NVML's 2^64 "not available"
    bool inconsistent = false; // numbers that cannot all be true (UVM, WSL)
    bool asyncAllocator = false; // cudaMallocAsync keeps no split blocks
    bool probable = false; // near-OOM error without allocator numbers
    bool preAllowedClause = false; // template era that may omit the "allowed" clause
    bool preExpandableTorch = false; // PyTorch 2.0 or older: no expandable segments yet

    Phase phase = Phase::Unknown;
    std::string phaseEvidence;
    std::vector<std::string> tracebackFunctions; // for case-specific hints (HF evaluation loop, torch.load)
    std::optional<TracebackFrame> failingFrame; // the innermost frame the traceback printed

    bool hasNumbers() const { return request.has_value() && (total.has_value() || limit.has_value()); }
    // The request would have fit had nothing else been on the card besides this process.
    std::optional<uint64_t> unattributedOutsideBytes() const;
};

OomFacts oomFacts(const OomMessage& message);

// nvidia-smi rows for the message's GPU: fills capacity and other processes the message lacks.
void addNvidiaSmi(OomFacts& facts, const std::vector<NvidiaSmiTable>& tables);

} // namespace oomlens
