#include "core/caseanalysis.h"

#include "core/diagnosis/caselinks.h"
#include "core/diagnosis/catalogue.h"
#include "core/diagnosis/distributedevidence.h"
#include "core/diagnosis/oomfacts.h"
#include "core/diagnosis/ranking.h"
#include "core/diagnosis/snapshotdiagnosis.h"
#include "core/diagnosis/textdiagnosis.h"
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

void diagnoseCase(const Case& input, CaseAnalysis& result)
{
    result.diagnoses.clear();
    result.headroom.clear();
    result.links.clear();
    result.serving.reset();
    const TextFindings& text = input.text;
    const bool expandableInText = !expandableSegmentsSource(text).empty();
    const bool asyncInText
        = !text.allocConfs.empty() && text.allocConfs.back().backend() == AllocatorBackend::CudaMallocAsync;
    const GpuCount gpusInText = textGpuCount(text);

    std::vector<Diagnosis> measured;
    bool messageMatchesSnapshot = false;
    for (size_t i = 0; i < input.snapshots.size() && i < result.snapshots.size(); ++i) {
        const SnapshotAnalysis& analysis = result.snapshots[i];
        const DeviceAnalysis* device = analysis.primary();
        if (!device)
            continue;
        const int index = static_cast<int>(i);

        SnapshotDiagnosisContext context;
        context.snapshotIndex = index;
        for (const planner::ModelSpec& model : input.models) {
            if (!model.hasDimensions() || context.kvShape)
                continue;
            planner::KvCacheShape shape;
            shape.layers = model.layers;
            shape.kvHeads = model.kvHeadsOrHeads();
            shape.headDim = model.headDim();
            shape.elementBytes = planner::kvDtypeBytes(planner::KvDtype::Bf16);
            if (model.latentAttention())
                shape.latentDim = model.kvLoraRank + model.qkRopeHeadDim;
            context.kvShape = shape;
            context.kvShapeSource = (model.name.empty() ? std::string("the model") : model.name) + "'s config.json";
        }
        context.expandableSegmentsOn = expandableInText;
        context.asyncAllocator = asyncInText;
        context.gpuCount = gpusInText.count;
        context.gpuCountEvidence = gpusInText.evidence;
        const MessageLink link = linkMessage(text, *device, index);
        result.links.insert(result.links.end(), link.notes.begin(), link.notes.end());
        if (link.messageIndex) {
            messageMatchesSnapshot = true;
            context.message = oomFacts(text.oomMessages[*link.messageIndex]);
            addNvidiaSmi(*context.message, text.nvidiaSmi);
        }
        // The snapshot records no card size: take it from what came with it.
        if (context.message && context.message->total) {
            context.cardTotalBytes = context.message->total;
            context.cardTotalSource = "the OOM message";
        } else if (const auto sidecar = sidecarTotal(input, index)) {
            context.cardTotalBytes = sidecar;
            context.cardTotalSource = "the capture sidecar";
        } else if (const auto smi = nvidiaSmiTotal(text, device->device)) {
            context.cardTotalBytes = smi;
            context.cardTotalSource = "nvidia-smi";
        }
        for (const auto& summary : text.summaries) {
            const auto notes = compareSummary(summary, *device, index);
            result.links.insert(result.links.end(), notes.begin(), notes.end());
        }

        SnapshotHeadroom headroom;
        headroom.snapshotIndex = index;
        headroom.device = device->device;
        headroom.peakAllocatedBytes = device->peakAllocatedBytes;
        headroom.peakReservedBytes = device->peakReservedBytes;
        headroom.peakEvent = device->peakEvent;
        headroom.peakTimeUs = device->peakTimeUs;
        headroom.failed = !device->ooms.empty();
        headroom.capacityBytes = context.cardTotalBytes;
        if (headroom.capacityBytes)
            headroom.headroomBytes
                = static_cast<int64_t>(*headroom.capacityBytes) - static_cast<int64_t>(device->peakReservedBytes);
        result.headroom.push_back(headroom);

        mergeDiagnoses(measured, diagnoseSnapshot(analysis, context));
    }

    // Measured diagnoses lead; the text confirms them or adds what only it can see (other
    // processes, an allowed clause, a traceback phase). When the message is the snapshot's own
    // oom event, the bands at that very moment were measured: a text-only guess they did not
    // confirm is dropped rather than shown beside the measurement.
    const bool haveMeasured = !measured.empty();
    result.diagnoses = std::move(measured);
    // The run's recipe is one: checkpointing the snapshot's stacks show on is on for the text's
    // ladder too, which would otherwise recommend turning it on.
    std::vector<Diagnosis> fromText;
    const std::string checkpointingSeen = checkpointingInSnapshots(result.snapshots);
    if (!checkpointingSeen.empty() && !text.oomMessages.empty()) {
        TextFindings withSnapshotRecipe = text;
        for (OomMessage& message : withSnapshotRecipe.oomMessages) {
            if (message.recipe.activationCheckpointing.value_or(false))
                continue;
            message.recipe.activationCheckpointing = true;
            message.recipe.checkpointingEvidence = checkpointingSeen;
        }
        fromText = diagnoseTextRules(withSnapshotRecipe);
    } else {
        fromText = diagnoseTextRules(text);
    }
    std::vector<Diagnosis> textOnly;
    for (auto& diagnosis : fromText) {
        // A snapshot records the GPU's allocator only: other processes, a per-process cap and the
        // host's RAM are seen in text alone.
        const bool onlyTextSees = isOutsideTheWorkload(diagnosis.id);
        const bool alsoMeasured = std::any_of(
            result.diagnoses.begin(), result.diagnoses.end(), [&](const Diagnosis& d) { return d.id == diagnosis.id; });
        if (!haveMeasured || onlyTextSees || alsoMeasured)
            mergeDiagnoses(result.diagnoses, { std::move(diagnosis) });
        else if (!messageMatchesSnapshot)
            textOnly.push_back(std::move(diagnosis)); // another run's message: keep it, weakened
    }
    mergeDiagnoses(result.diagnoses, std::move(textOnly), 0.6);
    diagnoseServing(input, result, haveMeasured);
    rankDiagnoses(result.diagnoses);
}

} // namespace oomlens
