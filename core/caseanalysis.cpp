#include "core/caseanalysis.h"

#include "core/diagnosis/caselinks.h"
#include "core/diagnosis/catalogue.h"
#include "core/diagnosis/distributedevidence.h"
#include "core/diagnosis/oomfacts.h"
#include "core/diagnosis/ranking.h"
#include "core/diagnosis/snapshotdiagnosis.h"
#include "core/diagnosis/textdiagnosis.h"
#include "core/planner/servingplan.h"
#include "core/serving/servingdiagnosis.h"

#include <algorithm>

namespace oomlens {

namespace {

std::optional<uint64_t> nvidiaSmiTotal(const TextFindings& text, int32_t device)
{
    for (const auto& table : text.nvidiaSmi) {
        for (const auto& gpu : table.gpus) {
            if (gpu.index == device && gpu.totalBytes)
                return gpu.totalBytes;
        }
    }
    return std::nullopt;
}

// torch.cuda.get_device_properties().total_memory as the capture helper recorded it.
std::optional<uint64_t> sidecarTotal(const Case& input, int snapshotIndex)
{
    for (const CaptureSidecar& sidecar : input.sidecars) {
        if (sidecar.snapshotIndex == snapshotIndex && sidecar.totalMemoryBytes)
            return sidecar.totalMemoryBytes;
    }
    return std::nullopt;
}

} // namespace

// After the diagnoses: restExplainsVerdict reads them.
void reconcileCase(const Case& input, CaseAnalysis& result)
{
    result.card = reconcileCard(input, result);
    const std::optional<CardTimelineBand> band = cardTimelineBand(result.card);
    result.cardBands.assign(result.snapshots.size(), std::nullopt);
    if (!band)
        return;
    for (size_t i = 0; i < result.snapshots.size(); ++i) {
        const DeviceAnalysis* device = result.snapshots[i].device(band->device);
        result.cardBands[i] = device ? followOomFigures(*band, *device) : *band;
    }
}

const CardTimelineBand* CaseAnalysis::cardBandOn(size_t snapshot, int32_t device) const
{
    if (snapshot >= cardBands.size() || !cardBands[snapshot] || cardBands[snapshot]->device != device)
        return nullptr;
    return &*cardBands[snapshot];
}

CaseAnalysis analyzeCase(const Case& input, const AnalysisOptions& options)
{
    CaseAnalysis result;
    result.snapshots = analyzeSnapshots(input, options);
    diagnoseCase(input, result);
    return result;
}

std::vector<SnapshotAnalysis> analyzeSnapshots(const Case& input, const AnalysisOptions& options)
{
    std::vector<SnapshotAnalysis> snapshots;
    snapshots.reserve(input.snapshots.size());
    for (const auto& snapshot : input.snapshots) {
        if (options.cancelled())
            break;
        snapshots.push_back(analyzeSnapshot(snapshot, options));
    }
    return snapshots;
}

namespace {

// What the text says about the whole case, the same for every snapshot's rules.
SnapshotDiagnosisContext textContext(const Case& input)
{
    const TextFindings& text = input.text;
    SnapshotDiagnosisContext context;
    for (const planner::ModelSpec& model : input.models) {
        if (!model.hasDimensions())
            continue;
        // A 16-bit cache on one GPU: the serving planner's shape with its default settings.
        context.kvShape = planner::servingKvShape(model, planner::TrainingSetup {});
        context.kvShapeSource = (model.name.empty() ? std::string("the model") : model.name) + "'s config.json";
        break;
    }
    context.expandableSegmentsOn = !expandableSegmentsSource(text).empty();
    context.asyncAllocator
        = !text.allocConfs.empty() && text.allocConfs.back().backend() == AllocatorBackend::CudaMallocAsync;
    const GpuCount gpus = textGpuCount(text);
    context.gpuCount = gpus.count;
    context.gpuCountEvidence = gpus.evidence;
    return context;
}

// The snapshot records no card size: take it from what came with it.
void setCardTotal(const Case& input, const DeviceAnalysis& device, SnapshotDiagnosisContext& context)
{
    if (context.message && context.message->total) {
        context.cardTotalBytes = context.message->total;
        context.cardTotalSource = "the OOM message";
    } else if (const auto sidecar = sidecarTotal(input, context.snapshotIndex)) {
        context.cardTotalBytes = sidecar;
        context.cardTotalSource = "the capture sidecar";
    } else if (const auto smi = nvidiaSmiTotal(input.text, device.device)) {
        context.cardTotalBytes = smi;
        context.cardTotalSource = "nvidia-smi";
    }
}

SnapshotHeadroom headroomOf(int index, const DeviceAnalysis& device, std::optional<uint64_t> capacityBytes)
{
    SnapshotHeadroom headroom;
    headroom.snapshotIndex = index;
    headroom.device = device.device;
    headroom.peakAllocatedBytes = device.peakAllocatedBytes;
    headroom.peakReservedBytes = device.peakReservedBytes;
    headroom.peakEvent = device.peakEvent;
    headroom.peakTimeUs = device.peakTimeUs;
    headroom.failed = !device.ooms.empty();
    headroom.capacityBytes = capacityBytes;
    if (headroom.capacityBytes)
        headroom.headroomBytes
            = static_cast<int64_t>(*headroom.capacityBytes) - static_cast<int64_t>(device.peakReservedBytes);
    return headroom;
}

struct Measured
{
    std::vector<Diagnosis> diagnoses;
    bool messageMatchesSnapshot = false; // a message is some snapshot's own oom event
};

// Each snapshot's rules over its primary device, with the links, notes and headroom they find.
Measured diagnoseSnapshots(const Case& input, CaseAnalysis& result)
{
    const TextFindings& text = input.text;
    const SnapshotDiagnosisContext shared = textContext(input);
    Measured measured;
    for (size_t i = 0; i < input.snapshots.size() && i < result.snapshots.size(); ++i) {
        const DeviceAnalysis* device = result.snapshots[i].primary();
        if (!device)
            continue;
        SnapshotDiagnosisContext context = shared;
        context.snapshotIndex = static_cast<int>(i);
        const MessageLink link = linkMessage(text, *device, context.snapshotIndex);
        result.links.insert(result.links.end(), link.notes.begin(), link.notes.end());
        if (link.messageIndex) {
            measured.messageMatchesSnapshot = true;
            context.message = oomFacts(text.oomMessages[*link.messageIndex]);
            addNvidiaSmi(*context.message, text.nvidiaSmi);
        }
        setCardTotal(input, *device, context);
        for (const auto& summary : text.summaries) {
            const auto notes = compareSummary(summary, *device, context.snapshotIndex);
            result.links.insert(result.links.end(), notes.begin(), notes.end());
        }
        result.headroom.push_back(headroomOf(context.snapshotIndex, *device, context.cardTotalBytes));
        mergeDiagnoses(measured.diagnoses, diagnoseSnapshot(result.snapshots[i], context));
    }
    return measured;
}

// The run's recipe is one: checkpointing the snapshot's stacks show on is on for the text's
// ladder too, which would otherwise recommend turning it on.
std::vector<Diagnosis> textDiagnoses(const TextFindings& text, const std::vector<SnapshotAnalysis>& snapshots)
{
    const std::string checkpointingSeen = checkpointingInSnapshots(snapshots);
    if (checkpointingSeen.empty() || text.oomMessages.empty())
        return diagnoseTextRules(text);
    TextFindings withSnapshotRecipe = text;
    for (OomMessage& message : withSnapshotRecipe.oomMessages) {
        if (message.recipe.activationCheckpointing.value_or(false))
            continue;
        message.recipe.activationCheckpointing = true;
        message.recipe.checkpointingEvidence = checkpointingSeen;
    }
    return diagnoseTextRules(withSnapshotRecipe);
}

// Measured diagnoses lead; the text confirms them or adds what only it can see (other processes,
// an allowed clause, a traceback phase). When the message is the snapshot's own oom event, the
// bands at that very moment were measured: a text-only guess they did not confirm is dropped
// rather than shown beside the measurement.
void addTextDiagnoses(
    std::vector<Diagnosis> fromText, bool haveMeasured, bool messageMatchesSnapshot, std::vector<Diagnosis>& diagnoses)
{
    std::vector<Diagnosis> textOnly;
    for (auto& diagnosis : fromText) {
        // A snapshot records the GPU's allocator only: other processes, a per-process cap and the
        // host's RAM are seen in text alone.
        const bool onlyTextSees = isOutsideTheWorkload(diagnosis.id);
        const bool alsoMeasured
            = std::any_of(diagnoses.begin(), diagnoses.end(), [&](const Diagnosis& d) { return d.id == diagnosis.id; });
        if (!haveMeasured || onlyTextSees || alsoMeasured)
            mergeDiagnoses(diagnoses, { std::move(diagnosis) });
        else if (!messageMatchesSnapshot)
            textOnly.push_back(std::move(diagnosis)); // another run's message: keep it, weakened
    }
    mergeDiagnoses(diagnoses, std::move(textOnly), 0.6);
}

} // namespace

void diagnoseCase(const Case& input, CaseAnalysis& result)
{
    result.diagnoses.clear();
    result.headroom.clear();
    result.links.clear();
    result.serving.reset();
    result.card = {};
    result.cardBands.clear();
    Measured measured = diagnoseSnapshots(input, result);
    const bool haveMeasured = !measured.diagnoses.empty();
    result.diagnoses = std::move(measured.diagnoses);
    addTextDiagnoses(
        textDiagnoses(input.text, result.snapshots), haveMeasured, measured.messageMatchesSnapshot, result.diagnoses);
    diagnoseServing(input, result, haveMeasured);
    rankDiagnoses(result.diagnoses);
    reconcileCase(input, result);
}

} // namespace oomlens
