#include "core/diagnosis/textdiagnosis.h"

#include "core/diagnosis/catalogue.h"
#include "core/units.h"

#include <algorithm>
#include <cmath>

namespace oomlens {

namespace {

constexpr uint64_t cudaContextAllowance = 1 * GiB; // context + cuBLAS/cuDNN workspaces: 0.3-1 GiB

void addEvidence(Diagnosis& diagnosis, std::string text)
{
    diagnosis.evidence.push_back({ std::move(text), std::nullopt });
}

bool mentions(const OomFacts& facts, std::initializer_list<const char*> needles)
{
    for (const auto& function : facts.tracebackFunctions) {
        for (const char* needle : needles) {
            if (function.find(needle) != std::string::npos)
                return true;
        }
    }
    return false;
}

const SummaryRow* summaryRow(const MemorySummary& summary, const char* key)
{
    const auto it = summary.rows.find(key);
    return it == summary.rows.end() ? nullptr : &it->second;
}

const MemorySummary* summaryFor(const TextFindings& findings, int device)
{
    const MemorySummary* found = nullptr;
    for (const auto& summary : findings.summaries) {
        if (summary.device == device)
            found = &summary; // the last table printed is the one nearest the failure
    }
    return found;
}

struct Candidates
{
    std::vector<Diagnosis> list;
    double strongestFullExplanation = 0.0; // a cause that alone explains why the request failed
    double capacityDamping = 1.0; // a phase case (eval, backward) explains a full card more specifically
    void add(Diagnosis diagnosis) { list.push_back(std::move(diagnosis)); }
};

void diagnoseFragmentation(const OomFacts& f, const TextFindings& context, const FixContext& fixes, Candidates& out)
{
    if (f.asyncAllocator || fixes.asyncAllocator)
        return; // cudaMallocAsync has no split blocks of its own to fragment
    double confidence = 0.0;
    Diagnosis d = makeDiagnosis("fragmentation", 0.0, {});
    // A few percent of the cache unused is normal slack (rounding, the small pool, the last freed
    // batch); it may cover a small request, but recovering it would not keep the run alive.
    const bool significantWaste = f.reservedUnallocated && f.reserved
        && (safeRatio(*f.reservedUnallocated, *f.reserved) >= 0.025 || *f.reservedUnallocated >= 512 * MiB);
    if (f.request && f.reservedUnallocated && f.reserved && significantWaste) {
        const uint64_t request = *f.request;
        const uint64_t unallocated = *f.reservedUnallocated;
        const double share = safeRatio(unallocated, *f.reserved);
        if (unallocated >= request && request > 0) {
            confidence = 0.5 + 0.35 * clamp01(share / 0.2);
            addEvidence(d,
                "PyTorch holds " + formatBytes(unallocated) + " reserved but unallocated ("
                    + percentText(unallocated, *f.reserved) + " of its " + formatBytes(*f.reserved)
                    + " cache), more than the " + formatBytes(request) + " request, yet no cached block could take it");
            // A few hundred MiB of split blocks on a full card explain this request, not the full card.
            const double weight = f.limit && *f.limit > 0 ? clamp01(safeRatio(unallocated, *f.limit) / 0.05) : 1.0;
            out.strongestFullExplanation = std::max(out.strongestFullExplanation, confidence * weight);
            d.summary = "The cache had " + formatBytes(unallocated) + " unused, more than the " + formatBytes(request)
                + " asked for, but split into pieces too small for it.";
        } else if (f.free && unallocated + *f.free >= request && unallocated * 4 >= request) {
            confidence = 0.4;
            addEvidence(d,
                "the " + formatBytes(request) + " request is more than the " + formatBytes(*f.free)
                    + " free on the card, but less than that plus the " + formatBytes(unallocated)
                    + " PyTorch holds unused: it would fit if the cache were one piece");
            d.summary = "Free and cached-but-unused memory together would cover the " + formatBytes(request)
                + " request, but the cached part is split into smaller blocks.";
        } else if (unallocated >= GiB && share >= 0.2) {
            confidence = 0.3;
            addEvidence(d,
                formatBytes(unallocated) + " of PyTorch's " + formatBytes(*f.reserved) + " cache ("
                    + percentText(unallocated, *f.reserved)
                    + ") is reserved but unallocated: split blocks waste memory, though not enough to explain this "
                      "failure alone");
            d.summary = "A large share of the cache sits unused in split blocks; it makes the card fuller than it "
                        "needs to be.";
        }
    }
    if (const MemorySummary* summary = summaryFor(context, f.device); summary && !summary->allZero) {
        const SummaryRow* nonReleasable = summaryRow(*summary, "non_releasable_memory");
        const SummaryRow* reserved = summaryRow(*summary, "gpu_reserved_memory");
        if (nonReleasable && nonReleasable->current && reserved && reserved->current && *reserved->current > 0) {
            const uint64_t stuck = *nonReleasable->current;
            if (stuck >= 256 * MiB && safeRatio(stuck, *reserved->current) >= 0.25) {
                confidence
                    = std::max(confidence, 0.35 + 0.4 * clamp01((safeRatio(stuck, *reserved->current) - 0.25) / 0.5));
                addEvidence(d,
                    "memory_summary: " + formatBytes(stuck) + " non-releasable of " + formatBytes(*reserved->current)
                        + " reserved (" + percentText(stuck, *reserved->current)
                        + "): free space trapped inside partly used blocks");
                if (d.summary.empty())
                    d.summary = "memory_summary shows a large share of the cache trapped in partly used blocks.";
            }
        }
        if (summary->allocRetries && *summary->allocRetries > 0 && confidence > 0)
            addEvidence(d,
                "memory_summary: " + std::to_string(*summary->allocRetries)
                    + " cudaMalloc retries (the allocator flushed its cache and tried again)");
    }
    if (confidence <= 0)
        return;
    if (fixes.expandableSegmentsOn) {
        confidence *= 0.6;
        addEvidence(d,
            "expandable segments are already on (" + expandableSegmentsSource(context)
                + "), which limits this kind of waste");
    }
    d.confidence = std::min(confidence, 0.97);
    if (fixes.preExpandableTorch)
        appendFixes(d.fixes, { FixKind::MaxSplitSize, FixKind::ExpandableSegments }, fixes);
    else
        appendFixes(d.fixes, { FixKind::ExpandableSegments, FixKind::MaxSplitSize }, fixes);
    appendFixes(d.fixes, { FixKind::MicroBatch, FixKind::Bf16, FixKind::Checkpointing }, fixes);
    out.add(std::move(d));
}

void diagnoseLargeAllocation(const OomFacts& f, const FixContext& fixes, Candidates& out)
{
    if (!f.request || !f.limit || *f.limit == 0)
        return;
    const uint64_t request = *f.request;
    const double share = safeRatio(request, *f.limit);
    if (share < 0.25)
        return;
    Diagnosis d = makeDiagnosis("large_allocation", 0.35 + 0.5 * clamp01((share - 0.25) / 0.5), {});
    if (request > *f.limit) {
        d.confidence = 0.9;
        addEvidence(d,
            "the single " + formatBytes(request) + " request is larger than the whole " + formatBytes(*f.limit)
                + (f.allowed ? " allowed to this process" : " card"));
        d.summary
            = "One tensor of " + formatBytes(request) + " cannot fit on a " + formatBytes(*f.limit) + " card at all.";
        out.strongestFullExplanation = std::max(out.strongestFullExplanation, d.confidence);
    } else {
        addEvidence(d,
            "one request of " + formatBytes(request) + " is " + percentText(request, *f.limit) + " of the "
                + formatBytes(*f.limit) + (f.allowed ? " this process may use" : " card"));
        d.summary = "A single tensor of " + formatBytes(request) + " takes " + percentText(request, *f.limit)
            + " of the card: typically an attention score matrix or a whole batch processed at once.";
    }
    if (f.phase == Phase::Eval)
        appendFixes(d.fixes, { FixKind::EvalBatchSize }, fixes);
    appendFixes(d.fixes, { FixKind::MicroBatch, FixKind::Bf16, FixKind::Sdpa, FixKind::ShorterSequences }, fixes);
    out.add(std::move(d));
}

void diagnoseMemoryFraction(const OomFacts& f, const FixContext& fixes, Candidates& out)
{
    if (f.allowed && f.total && *f.allowed < *f.total - *f.total / 50) {
        const uint64_t allowed = *f.allowed;
        const uint64_t held = f.reserved.value_or(f.allocated.value_or(0));
        const uint64_t request = f.request.value_or(0);
        const bool cardHadRoom = !f.free || *f.free >= request;
        Diagnosis d = makeDiagnosis("memory_fraction_cap", cardHadRoom ? 0.9 : 0.6, {});
        addEvidence(d,
            "a per-process limit of " + formatBytes(allowed) + " is set (\"" + formatBytes(allowed)
                + " allowed\"): " + percentText(allowed, *f.total) + " of the " + formatBytes(*f.total) + " card");
        if (request > 0)
            addEvidence(d,
                "PyTorch holds " + formatBytes(held) + "; with the " + formatBytes(request)
                    + " request it would pass the limit");
        if (f.free)
            addEvidence(d,
                "the card itself " + std::string(cardHadRoom ? "still had " : "had only ") + formatBytes(*f.free)
                    + " free");
        d.summary = "This process may use only " + formatBytes(allowed) + " of the " + formatBytes(*f.total) + " card"
            + (cardHadRoom ? ", and the card itself had room for the request." : "; the card was nearly full as well.");
        out.strongestFullExplanation = std::max(out.strongestFullExplanation, d.confidence);
        appendFixes(d.fixes, { FixKind::MemoryFraction }, fixes);
        out.add(std::move(d));
        return;
    }
    // 2.1's template omitted the allowed clause: a cap then shows only as a refusal with most of
    // the card free, PyTorch stopping right at a round fraction of it.
    if (!f.preAllowedClause || !f.total || !f.free || !f.request || !f.reserved)
        return;
    const uint64_t total = *f.total;
    if (*f.free < *f.request + 64 * MiB || safeRatio(*f.free, total) < 0.3)
        return;
    const double low = safeRatio(*f.reserved, total);
    const double high = safeRatio(*f.reserved + *f.request, total);
    for (int percentStep = 10; percentStep <= 95; percentStep += 5) {
        const double fraction = percentStep / 100.0;
        if (fraction > low - 0.01 && fraction <= high + 0.01) {
            Diagnosis d = makeDiagnosis("memory_fraction_cap", 0.35, {});
            addEvidence(d,
                formatBytes(*f.free) + " of the " + formatBytes(total) + " card was free, more than the "
                    + formatBytes(*f.request) + " request, yet the allocator refused it");
            addEvidence(d,
                "PyTorch stopped at " + formatBytes(*f.reserved) + " reserved, just under "
                    + std::to_string(percentStep) + "% of the card: the signature of set_per_process_memory_fraction("
                    + std::to_string(fraction).substr(0, 4) + "), which this message format does not print");
            d.summary = "Most of the card was free, yet the request was refused near " + std::to_string(percentStep)
                + "% of capacity: most likely a per-process memory fraction.";
            appendFixes(d.fixes, { FixKind::MemoryFraction }, fixes);
            out.add(std::move(d));
            return;
        }
    }
}

void diagnoseOtherProcess(const OomFacts& f, const FixContext& fixes, Candidates& out)
{
    if (!f.total || f.inconsistent)
        return;
    const uint64_t total = *f.total;
    const uint64_t request = f.request.value_or(0);
    Diagnosis d = makeDiagnosis("other_process", 0.0, {});
    double confidence = 0.0;
    if (f.otherProcessBytes > 0 && (f.otherProcessBytes >= GiB || safeRatio(f.otherProcessBytes, total) >= 0.02)) {
        confidence = 0.3 + 0.6 * clamp01(safeRatio(f.otherProcessBytes, total) / 0.3);
        std::string who = f.otherPids.size() == 1 ? "process " + std::to_string(f.otherPids.front())
                                                  : std::to_string(f.otherPids.size()) + " other processes";
        if (f.otherPids.empty())
            who = "other processes";
        addEvidence(d,
            who + (f.otherPids.size() == 1 ? " holds " : " hold ") + formatBytes(f.otherProcessBytes) + " of the "
                + formatBytes(total) + " card (" + percentText(f.otherProcessBytes, total) + ")");
        if (f.free && *f.free < request && *f.free + f.otherProcessBytes >= request) {
            confidence += 0.05;
            addEvidence(d,
                std::string(f.otherPids.size() == 1 ? "without it" : "without them") + " the " + formatBytes(request)
                    + " request would have fit: " + formatBytes(*f.free) + " free + "
                    + formatBytes(f.otherProcessBytes));
            out.strongestFullExplanation = std::max(out.strongestFullExplanation, confidence);
        }
        d.summary
            = "Another process holds " + formatBytes(f.otherProcessBytes) + " on this GPU, memory this run counted on.";
    }
    if (const auto unattributed = f.unattributedOutsideBytes(); unattributed && *unattributed > cudaContextAllowance) {
        const uint64_t beyondContext = *unattributed - cudaContextAllowance;
        const double share = safeRatio(beyondContext, total);
        if (beyondContext >= GiB / 2 && share >= 0.15) {
            const double implicit = 0.35 + 0.35 * clamp01((share - 0.15) / 0.45);
            confidence = std::max(confidence, implicit);
            addEvidence(d,
                formatBytes(*f.outsideBytes) + " of the " + formatBytes(total) + " card ("
                    + percentText(*f.outsideBytes, total) + ") is in use outside PyTorch's "
                    + formatBytes(f.reserved.value_or(0))
                    + " cache: total − free − reserved, far more than a CUDA context (0.3-1 GiB)");
            if (f.free && *f.free < request && *f.free + beyondContext >= request)
                out.strongestFullExplanation = std::max(out.strongestFullExplanation, implicit);
            if (d.summary.empty())
                d.summary = formatBytes(*f.outsideBytes)
                    + " of the card is used by something other than this run's PyTorch cache: "
                    + "most likely another process, or the job landed on a busy GPU.";
        }
    }
    if (f.selfNonPyTorchBytes && *f.selfNonPyTorchBytes >= 3 * GiB / 2
        && safeRatio(*f.selfNonPyTorchBytes, total) >= 0.1) {
        confidence = std::max(confidence, 0.3);
        addEvidence(d,
            "this process itself holds " + formatBytes(*f.selfNonPyTorchBytes)
                + " outside PyTorch's cache (process usage "
                + formatBytes(f.selfProcessBytes.value_or(*f.selfNonPyTorchBytes)) + " − reserved "
                + formatBytes(f.reserved.value_or(0))
                + "): CUDA context, cuDNN/cuBLAS workspaces, NCCL buffers or another library");
        if (d.summary.empty())
            d.summary = "This process holds " + formatBytes(*f.selfNonPyTorchBytes)
                + " on the GPU outside PyTorch's allocator.";
    }
    if (confidence <= 0)
        return;
    if (f.garbageProcessNumbers)
        addEvidence(d, "the message also lists an impossible process figure (NVML's \"not available\" value), ignored");
    d.confidence = confidence;
    appendFixes(d.fixes, { FixKind::StopOtherProcess, FixKind::ChooseGpu }, fixes);
    out.add(std::move(d));
}

void diagnoseCapacity(const OomFacts& f, const FixContext& fixes, Candidates& out)
{
    if (!f.limit || !f.request || !f.allocated || *f.limit == 0 || f.inconsistent)
        return;
    const uint64_t limit = *f.limit;
    const uint64_t request = *f.request;
    const uint64_t allocated = *f.allocated;
    const uint64_t room = f.free.value_or(0) + f.reservedUnallocated.value_or(0);
    if (f.free && room >= request && safeRatio(room, limit) >= 0.05)
        return; // it would have fit with real headroom: capacity is not the story
    const double filled = safeRatio(allocated, limit);
    double confidence = 0.25 + 0.45 * clamp01((filled - 0.4) / 0.5);
    confidence *= (1.0 - 0.5 * out.strongestFullExplanation) * out.capacityDamping;
    Diagnosis d = makeDiagnosis("capacity", confidence, {});
    d.title = "Live tensors fill the card";
    addEvidence(d,
        "live tensors take " + formatBytes(allocated) + " of the " + formatBytes(limit)
            + (f.allowed ? " allowed" : " card") + " (" + percentText(allocated, limit) + ")");
    if (f.free)
        addEvidence(d,
            "the " + formatBytes(request) + " request is more than the " + formatBytes(*f.free) + " free plus "
                + formatBytes(f.reservedUnallocated.value_or(0)) + " cached but unused");
    addEvidence(d,
        "a message cannot tell parameters, gradients, optimizer state and activations apart: a snapshot would show "
        "which band to cut");
    d.summary = "Live tensors take " + percentText(allocated, limit) + " of the card and the next "
        + formatBytes(request) + " does not fit: the run needs less memory, not a tidier cache.";
    if (f.phase == Phase::Load)
        appendFixes(d.fixes, { FixKind::LoadToCpu }, fixes);
    appendLadder(d.fixes, fixes);
    if (f.backend == "mps")
        appendFixes(d.fixes, { FixKind::MpsWatermark }, fixes);
    out.add(std::move(d));
}

void diagnosePhase(const OomFacts& f, const FixContext& fixes, Candidates& out)
{
    // A full card at the failure supports the phase story: the phase's own allocations tipped it.
    const bool cardFull = f.request && f.free && *f.free + f.reservedUnallocated.value_or(0) < *f.request;
    const double fullBonus = cardFull ? 0.1 : 0.0;
    const std::string where = f.phaseEvidence.empty() ? std::string() : " (" + f.phaseEvidence + ")";
    switch (f.phase) {
    case Phase::Backward: {
        Diagnosis d = makeDiagnosis("first_backward", 0.4 + fullBonus,
            "The failure is in backward, where gradients are allocated while every saved "
            "activation is still alive; the text alone cannot tell whether it is the first step.");
        addEvidence(d, "the traceback shows the failure in backward" + where);
        out.capacityDamping = 0.85;
        appendFixes(d.fixes,
            { FixKind::MicroBatch, FixKind::Bf16, FixKind::Checkpointing, FixKind::ExpandableSegments }, fixes);
        out.add(std::move(d));
        break;
    }
    case Phase::Optimizer: {
        Diagnosis d = makeDiagnosis("optimizer_step2", 0.45 + fullBonus,
            "The failure is in optimizer.step(): Adam allocates its two state buffers "
            "(8 bytes per parameter) at the first step, on top of weights and gradients.");
        addEvidence(d, "the traceback shows the failure in the optimizer step" + where);
        out.capacityDamping = 0.85;
        appendFixes(
            d.fixes, { FixKind::OptimizerForeach, FixKind::Optimizer8bit, FixKind::Zero, FixKind::Offload }, fixes);
        out.add(std::move(d));
        break;
    }
    case Phase::Eval: {
        const bool accumulating = mentions(
            f, { "evaluation_loop", "prediction_loop", "nested_concat", "preds", "predict", "evaluate", "validat" });
        Diagnosis d = makeDiagnosis("eval_accumulation", (accumulating ? 0.5 : 0.35) + fullBonus,
            "The failure is in evaluation: either outputs are collected on the GPU batch after batch, or "
            "the evaluation batch is larger than training's.");
        addEvidence(d, "the traceback shows the failure in evaluation / no-grad code" + where);
        if (accumulating)
            addEvidence(d, "the traceback passes through an evaluation loop that gathers predictions");
        // Training-side fixes (accumulation, checkpointing, sharding) do little for evaluation.
        out.capacityDamping = 0.6;
        appendFixes(d.fixes, { FixKind::EvalAccumulation, FixKind::EvalBatchSize }, fixes);
        out.add(std::move(d));
        break;
    }
    default:
        break;
    }
}

} // namespace

GpuCount textGpuCount(const TextFindings& findings)
{
    std::vector<int> ranks = findings.launcherRanks;
    std::sort(ranks.begin(), ranks.end());
    ranks.erase(std::unique(ranks.begin(), ranks.end()), ranks.end());
    if (ranks.size() >= 2) {
        // Ranks 0-7 in the prefixes: at least 8 ranks, even if some never printed anything.
        const int count = std::max(static_cast<int>(ranks.size()), ranks.back() + 1);
        return { count,
            "the log's line prefixes name ranks " + std::to_string(ranks.front()) + " to "
                + std::to_string(ranks.back()) };
    }
    size_t gpus = 0;
    for (const auto& table : findings.nvidiaSmi)
        gpus = std::max(gpus, table.gpus.size());
    if (gpus >= 2)
        return { static_cast<int>(gpus), "nvidia-smi lists " + std::to_string(gpus) + " GPUs" };
    return {};
}

std::string expandableSegmentsSource(const TextFindings& findings)
{
    for (auto it = findings.allocConfs.rbegin(); it != findings.allocConfs.rend(); ++it) {
        if (it->expandableSegments())
            return it->source + " \"" + it->raw + "\""
                + (it->sourceLine > 0 ? " at line " + std::to_string(it->sourceLine) : "");
    }
    return {};
}

FixContext textFixContext(const OomFacts& facts, const TextFindings& context)
{
    FixContext fixes;
    fixes.backend = facts.backend.empty() ? "cuda" : facts.backend;
    if (!context.allocConfs.empty()) {
        const AllocConfSetting& last = context.allocConfs.back();
        fixes.expandableSegmentsOn = last.expandableSegments();
        fixes.maxSplitSizeSet = last.maxSplitSizeMb().has_value();
        fixes.asyncAllocator = last.backend() == "cudaMallocAsync";
    }
    fixes.asyncAllocator = fixes.asyncAllocator || facts.asyncAllocator;
    fixes.preExpandableTorch = facts.preExpandableTorch;
    fixes.otherProcessBytes = facts.otherProcessBytes;
    fixes.allowedBytes = facts.allowed;

    MemoryBudget& budget = fixes.budget;
    const GpuCount gpus = textGpuCount(context);
    budget.gpuCount = gpus.count;
    budget.gpuCountEvidence = gpus.evidence;
    budget.liveBytes = facts.allocated.value_or(0);
    budget.request = facts.request.value_or(0);
    budget.fragmentedBytes = facts.reservedUnallocated.value_or(0);
    if (facts.reserved && facts.free)
        budget.usableBytes = *facts.reserved + *facts.free;
    return fixes;
}

std::vector<Diagnosis> diagnoseOomMessage(const OomMessage& message, const TextFindings& context)
{
    OomFacts facts = oomFacts(message);
    addNvidiaSmi(facts, context.nvidiaSmi);
    FixContext fixes = textFixContext(facts, context);

    Candidates out;
    diagnoseMemoryFraction(facts, fixes, out);
    diagnoseFragmentation(facts, context, fixes, out);
    diagnoseLargeAllocation(facts, fixes, out);
    diagnoseOtherProcess(facts, fixes, out);
    diagnosePhase(facts, fixes, out);
    diagnoseCapacity(facts, fixes, out);

    if (out.list.empty() && message.backend != "cpu") {
        // Nothing measurable: still say what is known and point at the inputs that would tell more.
        Diagnosis d = makeDiagnosis("capacity", 0.25,
            "The message carries no allocator numbers to judge by; the usual remedies "
            "apply, and a memory snapshot would show which band to cut.");
        d.title = "Live tensors fill the card";
        addEvidence(d,
            facts.request
                ? "the failing request was " + formatBytes(*facts.request) + "; the card's size is not in the message"
                : "the message gives no sizes (" + (message.templateId.empty() ? message.backend : message.templateId)
                    + ")");
        if (facts.phase == Phase::Load)
            appendFixes(d.fixes, { FixKind::LoadToCpu }, fixes);
        appendLadder(d.fixes, fixes);
        out.add(std::move(d));
    }
    if (facts.probable) {
        for (auto& d : out.list) {
            d.confidence *= 0.6;
            addEvidence(d,
                "a near-OOM error (" + (message.templateId.empty() ? message.backend : message.templateId)
                    + "), not the allocator's own message: memory was probably exhausted, but it is not certain");
        }
    }
    if (facts.inconsistent)
        for (auto& d : out.list)
            addEvidence(d,
                "the message's numbers do not add up (more in use than the card holds): unified memory or WSL reports "
                "them loosely");
    sortDiagnoses(out.list);
    return out.list;
}

std::vector<Diagnosis> diagnoseText(const TextFindings& findings)
{
    std::vector<Diagnosis> result;
    const auto& messages = findings.oomMessages;
    if (!messages.empty()) {
        result = diagnoseOomMessage(messages.back(), findings);
        for (size_t i = messages.size() - 1; i-- > 0;) {
            auto earlier = diagnoseOomMessage(messages[i], findings);
            const std::string where
                = messages[i].sourceLine > 0 ? " at line " + std::to_string(messages[i].sourceLine) : "";
            for (auto& d : earlier) {
                for (auto& e : d.evidence)
                    e.text = "earlier OOM" + where + ": " + e.text;
            }
            mergeDiagnoses(result, std::move(earlier), 0.7);
        }
        if (messages.size() > 1 && !result.empty())
            addEvidence(result.front(),
                std::to_string(messages.size()) + " OOM messages in the input; the last one is diagnosed first");
    } else {
        // Summaries or tracebacks without a message: judge what they show.
        OomFacts facts;
        if (!findings.summaries.empty())
            facts.device = findings.summaries.back().device;
        for (const auto& traceback : findings.tracebacks) {
            if (traceback.phase != Phase::Unknown) {
                facts.phase = traceback.phase;
                facts.phaseEvidence = traceback.phaseEvidence;
                for (const auto& frame : traceback.frames)
                    facts.tracebackFunctions.push_back(frame.function);
            }
        }
        const FixContext fixes = textFixContext(facts, findings);
        Candidates out;
        diagnoseFragmentation(facts, findings, fixes, out);
        diagnosePhase(facts, fixes, out);
        for (auto& d : out.list)
            d.confidence *= 0.8; // no OOM message: the failure itself is not in view
        result = std::move(out.list);
    }
    sortDiagnoses(result);
    return result;
}

} // namespace oomlens
