#include "core/diagnosis/snapshotrules.h"

#include "core/diagnosis/catalogue.h"
#include "core/units.h"

#include <algorithm>
#include <unordered_map>

namespace oomlens::snapshotrules {

namespace {

// Outputs gathered into one tensor (Trainer's nested_concat, `all = torch.cat([all, logits])`):
// each batch allocates a buffer one batch larger than the last and copies the old one in, so the
// old buffer is still live when the new one is made. A chain of such buffers from the failing
// request's call stack, each larger than and allocated while its predecessor lived, ending at the
// request, is the pile growing in one piece. Forward activations of batches sorted by length grow
// too, but each batch's are freed before the next batch allocates: no chain.
struct GrowingBuffer
{
    int buffers = 0; // earlier buffers in the chain, the request not counted; 0: no chain
    uint64_t heldBytes = 0; // the newest buffer, live at the failure
    uint64_t perBatchBytes = 0; // the median step between successive sizes, the request included
    int64_t firstEvent = -1;
};

GrowingBuffer growingBuffer(const SnapshotEvidence& e)
{
    const StackId stack = e.oom.stack;
    if (!stack.isValid() || stack == FrameTable::emptyStack())
        return {};
    std::vector<const Allocation*> chain; // newest first
    int64_t next = e.oom.eventIndex;
    uint64_t nextBytes = e.oom.requestedBytes;
    for (auto it = e.device.allocations.rbegin(); it != e.device.allocations.rend(); ++it) {
        const Allocation& allocation = *it;
        if (allocation.stack != stack || allocation.phase != Phase::Eval || allocation.allocEvent < 0
            || allocation.allocEvent >= next)
            continue;
        if (!allocation.liveAfter(next) || allocation.requestedSize >= nextBytes)
            break;
        chain.push_back(&allocation);
        next = allocation.allocEvent;
        nextBytes = allocation.requestedSize;
    }
    if (chain.size() < 2)
        return {};
    std::vector<uint64_t> steps { e.oom.requestedBytes - chain.front()->requestedSize };
    for (size_t i = 0; i + 1 < chain.size(); ++i)
        steps.push_back(chain[i]->requestedSize - chain[i + 1]->requestedSize);
    GrowingBuffer found;
    found.buffers = static_cast<int>(chain.size());
    found.heldBytes = chain.front()->requestedSize;
    found.perBatchBytes = median(steps);
    found.firstEvent = chain.back()->allocEvent;
    return found;
}

// What the trace shows evaluation freeing before the failure: the batches it saw come and go.
struct EvalTurnover
{
    int freedCount = 0;
    uint64_t freedBytes = 0;
    // Live at the failure but allocated before the trace began, and not weights or optimizer
    // state: outputs kept before the ring buffer's window would hide here.
    uint64_t olderDynamicBytes = 0;
};

// Enough evaluation allocations seen freed that "nothing was kept" is measured, not a gap in the trace.
constexpr int kEvalAllocationsToJudge = 20;

// A share of live memory that evaluation's kept outputs must reach to be the pile that filled the card.
constexpr double kRetainedShare = 0.15;

EvalTurnover evalTurnover(const SnapshotEvidence& e)
{
    EvalTurnover turnover;
    for (const auto& allocation : e.device.allocations) {
        const bool freedBefore = allocation.freeEvent >= 0 && allocation.freeEvent <= e.oom.eventIndex;
        if (allocation.phase == Phase::Eval && allocation.allocEvent >= 0 && freedBefore) {
            ++turnover.freedCount;
            turnover.freedBytes += allocation.requestedSize;
        }
        // An inference engine's or generate()'s KV cache is state it keeps for its sequences, not
        // evaluation's outputs.
        const bool fixedState = allocation.category == Category::Parameters
            || allocation.category == Category::OptimizerState || allocation.category == Category::Gradients
            || allocation.category == Category::KvCache;
        if (allocation.olderThanTrace() && !fixedState && allocation.liveAfter(e.oom.eventIndex))
            turnover.olderDynamicBytes += allocation.requestedSize;
    }
    return turnover;
}

// Evaluation runs under no_grad: each layer's intermediates are freed once the next layer has
// consumed them, and a batch's logits once they are scored. Outputs are kept only across a batch
// that ended. When the trace shows evaluation from its start (none of its live tensors is older
// than the trace) and evaluation has freed nothing yet, everything it holds is the first batch's
// forward in progress, its working set (an oversized batch, attention's scores), not a pile.
bool stillInFirstForward(const SnapshotEvidence& e)
{
    if (e.oom.phase != Phase::Eval)
        return false;
    bool sawEvaluation = false;
    for (const auto& allocation : e.device.allocations) {
        if (allocation.phase != Phase::Eval)
            continue;
        if (allocation.olderThanTrace())
            return false;
        // A free_completed always follows its free_requested: released covers both.
        if (allocation.releasedBy(e.oom.eventIndex))
            return false;
        sawEvaluation = true;
    }
    return sawEvaluation;
}

// What evaluation left live outside CUDA graphs. A no_grad forward captured into a graph (eval or
// generation under torch.cuda.graph, cudagraph trees, mode="reduce-overhead") allocates its
// intermediates and static outputs in the graph's private pool, where every replay rewrites them:
// that is the graph's memory, not outputs of batches that ended staying live.
struct KeptOutputs
{
    int count = 0;
    uint64_t bytes = 0;
};

bool isCaptured(const SnapshotEvidence& e, size_t allocation)
{
    const auto& captured = e.distributed.capturedAllocations;
    return std::binary_search(captured.begin(), captured.end(), allocation);
}

KeptOutputs keptOutsideGraphs(const SnapshotEvidence& e)
{
    KeptOutputs kept { e.profile.evalRetainedCount, e.profile.evalRetainedBytes };
    for (const size_t i : e.distributed.capturedAllocations) {
        const Allocation& a = e.device.allocations[i];
        if (a.phase != Phase::Eval || a.category == Category::Parameters || a.category == Category::KvCache
            || a.category == Category::Communication || a.releasedBy(e.oom.eventIndex) || kept.count == 0)
            continue;
        --kept.count;
        kept.bytes -= std::min(kept.bytes, a.requestedSize);
    }
    return kept;
}

// The batches kept: the repeats of the most repeated allocation site among what evaluation left
// live outside CUDA graphs.
int batchesKept(const SnapshotEvidence& e)
{
    int batches = 0;
    std::unordered_map<uint32_t, int> perSite;
    for (size_t i = 0; i < e.device.allocations.size(); ++i) {
        const Allocation& allocation = e.device.allocations[i];
        if (allocation.phase == Phase::Eval && allocation.category != Category::Parameters
            && allocation.category != Category::KvCache && allocation.category != Category::Communication
            && allocation.liveAfter(e.oom.eventIndex) && !allocation.releasedBy(e.oom.eventIndex) && !isCaptured(e, i))
            batches = std::max(batches, ++perSite[allocation.stack.value]);
    }
    return batches;
}

// What evaluation piled up by the failure, each way the trace shows it.
struct EvalPile
{
    KeptOutputs kept;
    uint64_t live = 0;
    bool firstForward = false;
    bool retains = false; // kept outputs are a real share of live memory
    GrowingBuffer buffer;
    bool gathered = false; // gathered into one ever larger tensor
    EvalTurnover turnover;
    bool seenFreeingEverything = false;
    int batches = 0;

    bool measuredPerBatch() const { return retains && batches >= 2; }
};

EvalPile measureKeptOutputs(const SnapshotEvidence& e, const KeptOutputs& kept)
{
    EvalPile pile;
    pile.kept = kept;
    pile.live = e.fixes.budget.liveBytes;
    pile.firstForward = stillInFirstForward(e);
    pile.retains = kept.count >= 3 && safeRatio(kept.bytes, pile.live) >= kRetainedShare && !pile.firstForward;
    return pile;
}

void measureHowItPiles(const SnapshotEvidence& e, EvalPile& pile)
{
    pile.buffer = e.oom.phase == Phase::Eval ? growingBuffer(e) : GrowingBuffer {};
    pile.gathered = pile.buffer.buffers > 0;
    // Only a failure in evaluation with nothing kept is judged by the batches seen coming and going
    // (outside evaluation the rule runs only when outputs were kept).
    pile.turnover = pile.retains || pile.gathered ? EvalTurnover {} : evalTurnover(e);
    const bool traceCoversLive = safeRatio(pile.turnover.olderDynamicBytes, pile.live) < kRetainedShare;
    pile.seenFreeingEverything
        = !pile.retains && !pile.gathered && traceCoversLive && pile.turnover.freedCount >= kEvalAllocationsToJudge;
    pile.batches = pile.kept.count > 0 ? batchesKept(e) : 0;
}

// 0.85: the failure is in evaluation and evaluation's own outputs are a large share of what
// is live, or are gathered into one buffer that grows batch after batch; 0.5: in evaluation
// with nothing retained (an oversized evaluation batch is as likely); 0.3 when the trace saw
// evaluation allocate batch after batch and free nearly all of it (nothing piles up: only the
// phase is left, a description), or when it failed in its first batch's forward (no batch has
// ended to keep anything); 0.45: retained outputs measured but the failure is elsewhere.
double evalConfidence(const SnapshotEvidence& e, const EvalPile& pile)
{
    if (e.oom.phase != Phase::Eval)
        return 0.45;
    if (pile.retains || pile.gathered)
        return 0.85;
    return pile.seenFreeingEverything || pile.firstForward ? 0.3 : 0.5;
}

// What evaluation left live, what of it is CUDA graphs' memory, and what it was seen freeing.
void keptOutputsEvidence(const SnapshotEvidence& e, const EvalPile& pile, Diagnosis& d)
{
    const KeptOutputs& kept = pile.kept;
    if (kept.count > 0)
        e.evidence(d,
            std::to_string(kept.count) + " allocations made during evaluation are still live at the failure: "
                + formatBytes(kept.bytes) + ", " + percentText(kept.bytes, pile.live) + " of live memory",
            e.profile.firstEvalRetainedEvent);
    if (!e.distributed.capturedAllocations.empty() && kept.count < e.profile.evalRetainedCount)
        e.evidence(d,
            std::to_string(e.profile.evalRetainedCount - kept.count)
                + " more are a CUDA graph's (made inside a capture, or in a graph's private pool): memory every "
                  "replay rewrites, not outputs kept per batch");
    if (pile.firstForward && kept.count > 0)
        e.evidence(d,
            "evaluation has freed none of its allocations since the trace saw it begin: what it holds is its first "
            "batch's forward in progress (its working set), not outputs kept from batches that ended");
    if (pile.seenFreeingEverything)
        e.evidence(d,
            "the trace saw evaluation free " + std::to_string(pile.turnover.freedCount) + " of its allocations ("
                + formatBytes(pile.turnover.freedBytes) + ") and keep "
                + (kept.count > 0 ? formatBytes(kept.bytes) : std::string("nothing"))
                + ": no outputs pile up, so only the phase points here");
}

// How fast the pile grows per evaluation batch: by the tensors one site kept, or by the steps of
// the gathered buffer.
void growthPerBatch(const SnapshotEvidence& e, const EvalPile& pile, Diagnosis& d)
{
    d.outlook = RunOutlook {};
    d.outlook->leadingFixStopsGrowth = !pile.seenFreeingEverything;
    if (pile.measuredPerBatch()) {
        d.outlook->growthPerUnitBytes = pile.kept.bytes / static_cast<uint64_t>(pile.batches);
        d.outlook->unit = "evaluation batch";
        e.evidence(d,
            "one allocation site kept " + std::to_string(pile.batches) + " tensors, one per batch: about "
                + formatBytes(d.outlook->growthPerUnitBytes)
                + " more per evaluation batch, until the evaluation set ends");
    }
    if (pile.gathered && !pile.measuredPerBatch()) {
        const GrowingBuffer& buffer = pile.buffer;
        d.outlook->growthPerUnitBytes = buffer.perBatchBytes;
        d.outlook->unit = "evaluation batch";
        e.evidence(d,
            "the failing " + formatBytes(e.oom.requestedBytes) + " request is the newest of "
                + std::to_string(buffer.buffers + 1) + " ever larger buffers from the same code, each made while the "
                + "one before it was live: outputs gathered into one tensor (torch.cat of the old pile and the new "
                  "batch), about "
                + formatBytes(buffer.perBatchBytes) + " more per evaluation batch",
            buffer.firstEvent);
        e.evidence(d,
            formatBytes(buffer.heldBytes) + " of gathered outputs were live at the failure, and the copy needs "
                + "the old pile and the new one at once");
    }
}

std::string evalSummary(const EvalPile& pile)
{
    if (pile.gathered && !pile.measuredPerBatch())
        return "Evaluation gathers every batch's outputs into one GPU tensor; it held "
            + formatBytes(pile.buffer.heldBytes) + " and grows by " + formatBytes(pile.buffer.perBatchBytes)
            + " per batch until the evaluation set ends.";
    return pile.retains
        ? "Evaluation keeps each batch's outputs on the GPU; " + formatBytes(pile.kept.bytes)
            + " piled up before the failure."
        : "The failure is in evaluation; outputs kept per batch or an oversized evaluation batch are the usual "
          "causes.";
}

} // namespace

// Evaluation outputs kept on the GPU: each batch adds about the same bytes, so the pile grows
// until the evaluation ends or the card is full. The batches are counted as the repeats of the
// most repeated allocation site among what evaluation left live.
void evalAccumulation(const SnapshotEvidence& e, std::vector<Diagnosis>& out)
{
    const KeptOutputs kept = keptOutsideGraphs(e);
    if (e.oom.phase != Phase::Eval && kept.count == 0)
        return;
    EvalPile pile = measureKeptOutputs(e, kept);
    if (e.oom.phase != Phase::Eval && !pile.retains)
        return;
    measureHowItPiles(e, pile);
    Diagnosis d = makeDiagnosis(DiagnosisId::EvalAccumulation, evalConfidence(e, pile), {});
    e.evidence(d, "the OOM is in evaluation (" + e.where() + ")", e.oom.eventIndex);
    keptOutputsEvidence(e, pile, d);
    growthPerBatch(e, pile, d);
    d.summary = evalSummary(pile);
    FixContext fixes = e.fixes;
    if (pile.retains)
        fixes.caseSavingBytes = kept.bytes;
    else if (pile.gathered)
        fixes.caseSavingBytes = pile.buffer.heldBytes;
    appendFixes(d.fixes, { FixKind::EvalAccumulation, FixKind::EvalBatchSize }, fixes);
    out.push_back(std::move(d));
}

} // namespace oomlens::snapshotrules
