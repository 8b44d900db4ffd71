#include "core/diagnosis/textrules.h"

#include "core/diagnosis/catalogue.h"
#include "core/runtimewords.h"
#include "core/units.h"

#include <algorithm>

namespace oomlens::textrules {

namespace {

// What this process holds outside the allocator, in the backend's own terms: MPS reports it as
// "other allocations" (Metal buffers PyTorch's cache does not own); CUDA and ROCm as the process's
// usage beyond what PyTorch reserved.
std::string selfOutsideEvidence(const OomFacts& f)
{
    const std::string held = formatBytes(*f.selfNonPyTorchBytes);
    if (f.backend == Backend::Mps)
        return "this process itself holds " + held + " outside the MPS allocator's "
            + formatBytes(f.reserved.value_or(0))
            + " (the message's \"other allocations\"): Metal buffers made outside PyTorch's cache, such as "
              "MPSGraph's cached graphs or another library's";
    return "this process itself holds " + held + " outside PyTorch's cache (process usage "
        + formatBytes(f.selfProcessBytes.value_or(*f.selfNonPyTorchBytes)) + " − reserved "
        + formatBytes(f.reserved.value_or(0)) + "): " + outsideCacheHolders(f.backend);
}

// The processes the message lists besides this one. How likely the memory they hold is what this
// run was missing: 0.3 for a few percent of the card, 0.75 from 30% up; +0.15 when the request
// would have fit in it plus the free memory, -0.1 when it would not have fit even without them.
// 0 when they hold too little to matter.
double listedProcessesConfidence(const OomFacts& f, Diagnosis& d, Candidates& out)
{
    const uint64_t total = *f.total;
    const uint64_t request = f.request.value_or(0);
    if (f.otherProcessBytes == 0 || (f.otherProcessBytes < GiB && safeRatio(f.otherProcessBytes, total) < 0.02))
        return 0.0;
    double confidence = 0.3 + 0.45 * clamp01(safeRatio(f.otherProcessBytes, total) / 0.3);
    std::string who = f.otherPids.size() == 1 ? "process " + std::to_string(f.otherPids.front())
                                              : std::to_string(f.otherPids.size()) + " other processes";
    if (f.otherPids.empty())
        who = "other processes";
    addEvidence(d,
        who + (f.otherPids.size() == 1 ? " holds " : " hold ") + formatBytes(f.otherProcessBytes) + " of the "
            + formatBytes(total) + " card (" + percentText(f.otherProcessBytes, total) + ")");
    if (f.free && request > 0) {
        // A new segment needs the request in one piece of free memory; split cache does not add to it.
        const uint64_t room = *f.free;
        if (room < request && room + f.otherProcessBytes >= request) {
            confidence += 0.15;
            addEvidence(d,
                std::string(f.otherPids.size() == 1 ? "without it" : "without them") + " the " + formatBytes(request)
                    + " request would have fit: " + formatBytes(*f.free) + " free + "
                    + formatBytes(f.otherProcessBytes));
            out.strongestFullExplanation = std::max(out.strongestFullExplanation, confidence);
        } else if (room + f.otherProcessBytes < request) {
            confidence -= 0.1;
            out.otherProcessFallsShort = true;
            addEvidence(d,
                std::string(f.otherPids.size() == 1 ? "even without it" : "even without them") + " the "
                    + formatBytes(request) + " request would not have fit: " + formatBytes(*f.free) + " free + "
                    + formatBytes(f.otherProcessBytes) + " is " + formatBytes(room + f.otherProcessBytes));
        }
    }
    d.summary
        = "Another process holds " + formatBytes(f.otherProcessBytes) + " on this GPU, memory this run counted on.";
    return confidence;
}

// Memory in use on the card that neither this run's cache, a context, nor a listed process
// accounts for: another process the message did not name. Inferred from arithmetic, no process
// named: 0.35 at 15% of the card unaccounted, 0.7 at 60%; 0 below that.
double unaccountedMemoryConfidence(const OomFacts& f, Diagnosis& d, Candidates& out)
{
    const uint64_t total = *f.total;
    const uint64_t request = f.request.value_or(0);
    const auto unattributed = f.unattributedOutsideBytes();
    if (!unattributed || *unattributed <= cudaContextAllowance)
        return 0.0;
    const uint64_t beyondContext = *unattributed - cudaContextAllowance;
    const double share = safeRatio(beyondContext, total);
    if (beyondContext < GiB / 2 || share < 0.15)
        return 0.0;
    const double implicit = 0.35 + 0.35 * clamp01((share - 0.15) / 0.45);
    addEvidence(d,
        formatBytes(*f.outsideBytes) + " of the " + formatBytes(total) + " card (" + percentText(*f.outsideBytes, total)
            + ") is in use outside PyTorch's " + formatBytes(f.reserved.value_or(0))
            + " cache: total − free − reserved, far more than a " + std::string(runtimeWords(f.backend).context)
            + " (0.3-1 GiB)");
    if (f.free && *f.free < request && *f.free + beyondContext >= request)
        out.strongestFullExplanation = std::max(out.strongestFullExplanation, implicit);
    if (d.summary.empty())
        d.summary = formatBytes(*f.outsideBytes)
            + " of the card is used by something other than this run's PyTorch cache: "
            + "most likely another process, or the job landed on a busy GPU.";
    return implicit;
}

// This run's own memory outside the allocator: worth knowing, rarely the whole story (0.3).
double selfOutsideConfidence(const OomFacts& f, Diagnosis& d)
{
    if (!f.selfNonPyTorchBytes || *f.selfNonPyTorchBytes < 3 * GiB / 2
        || safeRatio(*f.selfNonPyTorchBytes, *f.total) < 0.1)
        return 0.0;
    addEvidence(d, selfOutsideEvidence(f));
    if (d.summary.empty())
        d.summary = "This process holds " + formatBytes(*f.selfNonPyTorchBytes) + " outside PyTorch's "
            + (f.backend == Backend::Mps ? "MPS allocator." : "allocator on the GPU.");
    return 0.3;
}

} // namespace

void diagnoseOtherProcess(const OomFacts& f, const FixContext& fixes, Candidates& out)
{
    if (!f.total || f.inconsistent)
        return;
    Diagnosis d = makeDiagnosis(DiagnosisId::OtherProcess, 0.0, {});
    double confidence = listedProcessesConfidence(f, d, out);
    confidence = std::max(confidence, unaccountedMemoryConfidence(f, d, out));
    const bool anotherProcess = confidence > 0;
    confidence = std::max(confidence, selfOutsideConfidence(f, d));
    if (confidence <= 0)
        return;
    if (f.garbageProcessNumbers)
        addEvidence(d, "the message also lists an impossible process figure (NVML's \"not available\" value), ignored");
    d.confidence = confidence;
    if (anotherProcess) {
        appendFixes(d.fixes, { FixKind::StopOtherProcess, FixKind::ChooseGpu }, fixes);
    } else {
        // Only this process's own memory outside the allocator: there is no other process to stop.
        // What is left is to make the run itself smaller, or on MPS to let it use more of the machine.
        d.title = "This process holds memory outside PyTorch's allocator";
        if (f.backend == Backend::Mps)
            appendFixes(d.fixes, { FixKind::MpsWatermark }, fixes);
        appendLadder(d.fixes, fixes);
    }
    out.add(std::move(d));
}

// Class of its own: the "other" process in the message is this run seen from outside its container.
void explainContainerSelf(const OomFacts& f, Diagnosis& top)
{
    const uint64_t self = f.selfProcessBytes.value_or(0);
    const uint64_t reserved = f.reserved.value_or(0);
    const RuntimeWords words = runtimeWords(f.backend);
    std::string text = "process " + std::to_string(*f.inferredSelfPid) + " (" + formatBytes(self)
        + ") is most likely this run itself: it holds PyTorch's " + formatBytes(reserved) + " reserved";
    if (self > reserved)
        text += " plus " + formatBytes(self - reserved) + ", the size of a " + std::string(words.context)
            + " and library workspaces";
    text += ", and no line says \"this process\": inside a container the driver reports host PIDs, which PyTorch "
            "cannot match to its own. Compare "
        + std::string(words.processTool) + " inside the container with " + std::string(words.processTool)
        + " on the host to confirm";
    top.evidence.insert(top.evidence.begin(), { text, std::nullopt });
}

} // namespace oomlens::textrules
