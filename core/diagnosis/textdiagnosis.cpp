#include "core/diagnosis/textdiagnosis.h"

#include "core/analysis/framewords.h"
#include "core/caseanalysis.h"
#include "core/diagnosis/catalogue.h"
#include "core/diagnosis/hostmemorydiagnosis.h"
#include "core/diagnosis/textrules.h"
#include "core/units.h"

#include <algorithm>

namespace oomlens {

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

namespace {

// Activation checkpointing in a traceback: the failure happened under its frames (the recompute
// inside backward, or the checkpointed forward), so it is on.
std::string checkpointingInTracebacks(const TextFindings& context)
{
    auto scan = [](const TracebackInfo& traceback) -> std::string {
        for (const TracebackFrame& frame : traceback.frames) {
            if (frameWords(frame.filename, frame.function) & WordCheckpointing)
                return "the traceback passes through " + frame.filename + " (" + frame.function + ")";
        }
        return {};
    };
    for (const OomMessage& message : context.oomMessages) {
        if (message.traceback) {
            if (auto text = scan(*message.traceback); !text.empty())
                return text;
        }
    }
    for (const TracebackInfo& traceback : context.tracebacks) {
        if (auto text = scan(traceback); !text.empty())
            return text;
    }
    return {};
}

// The figures the message does give, when it gives too few to judge by: the request, and the card
// and its free memory when printed (a paste cut before PyTorch's own figures still has those), and
// what this run holds besides the processes it names.
std::string knownFiguresEvidence(const OomFacts& facts, const OomMessage& message)
{
    if (!facts.request)
        return "the message gives no sizes (" + message.wordingName() + ")";
    std::string text = "the failing request was " + formatBytes(*facts.request);
    if (!facts.total)
        return text + "; the card's size is not in the message";
    text += " on a " + formatBytes(*facts.total) + " card";
    if (facts.free)
        text += " with " + formatBytes(*facts.free) + " free";
    if (facts.free && *facts.total >= *facts.free + facts.otherProcessBytes && facts.otherProcessBytes > 0)
        text += "; this run holds about " + formatBytes(*facts.total - *facts.free - facts.otherProcessBytes)
            + " of it besides the " + formatBytes(facts.otherProcessBytes) + " other processes hold";
    if (!facts.allocated)
        text += "; the message is cut before PyTorch's own figures";
    return text;
}

} // namespace

FixContext textFixContext(const OomFacts& facts, const TextFindings& context, const TracebackInfo* ownTraceback)
{
    FixContext fixes;
    std::vector<const TracebackInfo*> tracebacks;
    if (ownTraceback)
        tracebacks.push_back(ownTraceback);
    for (const TracebackInfo& traceback : context.tracebacks)
        tracebacks.push_back(&traceback);
    fixes.lora = loraTargetOf(tracebacks);
    fixes.backend = facts.backend == Backend::None ? Backend::Cuda : facts.backend;
    if (!context.allocConfs.empty()) {
        const AllocConfSetting& last = context.allocConfs.back();
        fixes.expandableSegmentsOn = last.expandableSegments();
        fixes.maxSplitSizeSet = last.maxSplitSizeMb().has_value();
        fixes.asyncAllocator = last.backend() == AllocatorBackend::CudaMallocAsync;
    }
    fixes.asyncAllocator = fixes.asyncAllocator || facts.asyncAllocator;
    fixes.preExpandableTorch = facts.preExpandableTorch;
    fixes.otherProcessBytes = facts.otherProcessBytes;
    fixes.allowedBytes = facts.allowed;
    fixes.checkpointingEvidence = checkpointingInTracebacks(context);
    // Or the recipe says so: a gradient_checkpointing=True line before the failure (or the
    // snapshot opened beside the text showed its frames).
    if (fixes.checkpointingEvidence.empty() && facts.recipe.activationCheckpointing.value_or(false))
        fixes.checkpointingEvidence = facts.recipe.checkpointingEvidence;
    fixes.checkpointingOn = !fixes.checkpointingEvidence.empty();

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
    FixContext fixes = textFixContext(facts, context, message.traceback ? &*message.traceback : nullptr);

    if (facts.platformLimit && facts.request && *facts.request > *facts.platformLimit)
        return { textrules::diagnosePlatformLimit(facts, fixes) };

    textrules::Candidates out;
    textrules::diagnoseMemoryFraction(facts, fixes, out);
    textrules::diagnoseProjectedState(facts, fixes, out);
    textrules::diagnoseXlaProgram(facts, fixes, out);
    textrules::diagnoseFragmentation(facts, context, fixes, out);
    textrules::diagnoseLargeAllocation(facts, fixes, out);
    textrules::diagnoseOtherProcess(facts, fixes, out);
    // An inference run the text shows (context.serving) has no training phase: its no-grad forward
    // is not an evaluation loop gathering outputs, and the serving step gives the engine's causes.
    if (!context.serving)
        textrules::diagnosePhase(facts, fixes, out);
    textrules::diagnoseMemoryLog(facts, fixes, out);
    textrules::diagnoseCapacity(facts, fixes, out);
    textrules::rankCauseOverSymptom(facts, out.list);

    const bool onlyShortOtherProcess = out.otherProcessFallsShort
        && std::all_of(
            out.list.begin(), out.list.end(), [](const Diagnosis& d) { return d.id == DiagnosisId::OtherProcess; });
    if ((out.list.empty() || onlyShortOtherProcess) && message.backend != Backend::Cpu) {
        // Nothing measurable: still say what is known and point at the inputs that would tell more.
        Diagnosis d = makeDiagnosis(DiagnosisId::Capacity, 0.25,
            "The message carries no allocator numbers to judge by; the usual remedies "
            "apply, and a memory snapshot would show which band to cut.");
        d.title = "Live tensors fill the card";
        textrules::addEvidence(d, knownFiguresEvidence(facts, message));
        // Beside another process that could not have made room, what this run holds is the better
        // answer: it ranks just above that finding.
        if (onlyShortOtherProcess)
            for (const Diagnosis& other : out.list)
                d.confidence = std::max(d.confidence, other.confidence + 0.05);
        if (facts.phase == Phase::Load)
            appendFixes(d.fixes, { FixKind::LoadToCpu }, fixes);
        appendLadder(d.fixes, fixes);
        out.add(std::move(d));
    }
    if (facts.probable) {
        for (auto& d : out.list) {
            d.confidence *= 0.6;
            textrules::addEvidence(d,
                "a near-OOM error (" + message.wordingName()
                    + "), not the allocator's own message: memory was probably exhausted, but it is not certain");
        }
    }
    if (facts.inconsistent)
        for (auto& d : out.list)
            textrules::addEvidence(d,
                "the message's numbers do not add up (more in use than the card holds): unified memory or WSL reports "
                "them loosely");
    sortDiagnoses(out.list);
    if (facts.inferredSelfPid && !out.list.empty())
        textrules::explainContainerSelf(facts, out.list.front());
    return out.list;
}

std::vector<Diagnosis> diagnoseText(const TextFindings& findings)
{
    Case input;
    input.text = findings;
    CaseAnalysis analysis;
    diagnoseCase(input, analysis);
    return std::move(analysis.diagnoses);
}

std::vector<Diagnosis> diagnoseTextRules(const TextFindings& findings)
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
            textrules::addEvidence(result.front(),
                std::to_string(messages.size()) + " OOM messages in the input; the last one is diagnosed first");
        sortDiagnoses(result);
        if (auto host = diagnoseHostMemory(findings)) {
            // A GPU out-of-memory message in the same input is the failure to fix first; a kill of the
            // host process may be its aftermath or a second problem, ranked after it.
            const double ceiling = result.empty() ? host->confidence : result.front().confidence - 0.05;
            host->confidence = std::clamp(std::min(host->confidence, ceiling), 0.05, 0.97);
            textrules::addEvidence(*host,
                "the input also holds a GPU out-of-memory message (line " + std::to_string(messages.back().sourceLine)
                    + "): that failure is diagnosed first");
            result.push_back(std::move(*host));
        }
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
        textrules::Candidates out;
        textrules::diagnoseFragmentation(facts, findings, fixes, out);
        textrules::diagnosePhase(facts, fixes, out);
        for (auto& d : out.list)
            d.confidence *= 0.8; // no OOM message: the failure itself is not in view
        result = std::move(out.list);
        if (auto host = diagnoseHostMemory(findings))
            result.push_back(std::move(*host));
    }
    sortDiagnoses(result);
    return result;
}

} // namespace oomlens
