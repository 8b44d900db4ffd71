#include "core/jsonexport.h"

#include "core/presentation/allocationannotationsjson.h"
#include "core/presentation/cardreconciliationjson.h"
#include "core/presentation/compiledregionsjson.h"
#include "core/presentation/pendingfreesjson.h"
#include "core/presentation/pinnedhostjson.h"
#include "core/presentation/privatepoolsjson.h"
#include "core/profilertimelinejson.h"
#include "core/serving/servingjson.h"
#include "core/snapshotbackend.h"

#include <algorithm>

namespace oomlens {

namespace {

using json = nlohmann::ordered_json;

template <typename T> json optionalToJson(const std::optional<T>& value)
{
    return value ? json(*value) : json(nullptr);
}

json summaryRowToJson(const SummaryRow& row)
{
    return json { { "current", optionalToJson(row.current) }, { "peak", optionalToJson(row.peak) },
        { "allocated", optionalToJson(row.allocated) }, { "freed", optionalToJson(row.freed) } };
}

json summaryRowsToJson(const std::map<std::string, SummaryRow>& rows)
{
    json result = json::object();
    for (const auto& [key, row] : rows)
        result[key] = summaryRowToJson(row);
    return result;
}

json tracebackToJson(const TracebackInfo& traceback)
{
    json frames = json::array();
    for (const auto& frame : traceback.frames)
        frames.push_back({ { "filename", frame.filename }, { "line", frame.line }, { "function", frame.function } });
    return json { { "phase", phaseName(traceback.phase) }, { "phase_evidence", traceback.phaseEvidence },
        { "exception", traceback.exceptionLine }, { "chained", traceback.chained },
        { "truncated", traceback.truncated }, { "frames", std::move(frames) } };
}

// What a capture sidecar adds to its input entry; its texts already appear as messages.
json sidecarToJson(const CaptureSidecar& sidecar)
{
    return json { { "snapshot_index", sidecar.snapshotIndex >= 0 ? json(sidecar.snapshotIndex) : json(nullptr) },
        { "device_name", optionalToJson(sidecar.deviceName) },
        { "total_memory_bytes", optionalToJson(sidecar.totalMemoryBytes) },
        { "torch_version", optionalToJson(sidecar.torchVersion) },
        { "cuda_version", optionalToJson(sidecar.cudaVersion) }, { "alloc_conf", optionalToJson(sidecar.allocConf) },
        { "rank", optionalToJson(sidecar.rank) }, { "world_size", optionalToJson(sidecar.worldSize) } };
}

} // namespace

// XLA's BufferAssignment stats: the compiled program's own accounting of the failed allocation.
json xlaBuffersToJson(const XlaBufferStats& stats)
{
    return { { "parameter_bytes", optionalToJson(stats.parameterBytes) },
        { "constant_bytes", optionalToJson(stats.constantBytes) },
        { "live_out_bytes", optionalToJson(stats.liveOutBytes) }, { "temp_bytes", optionalToJson(stats.tempBytes) },
        { "total_bytes", optionalToJson(stats.totalBytes) } };
}

// A kill of the host process for lack of RAM (the kernel's or a cgroup's OOM killer, exit 137).
json hostKillToJson(const HostMemoryKill& kill)
{
    return { { "kind", hostKillKindName(kill.kind) }, { "line", kill.line }, { "pid", optionalToJson(kill.pid) },
        { "process", kill.process }, { "resident_bytes", optionalToJson(kill.residentBytes) },
        { "limit_bytes", optionalToJson(kill.limitBytes) }, { "source_line", kill.sourceLine } };
}

namespace {

json stringOrNull(const std::string& text)
{
    return text.empty() ? json(nullptr) : json(text);
}

// What the log said of precision and optimizer before the failure; null where it said nothing.
json trainingRecipeToJson(const TrainingRecipe& recipe)
{
    if (recipe.empty() && recipe.optimizerVariant.empty())
        return nullptr;
    return { { "weight_precision", stringOrNull(recipe.weightPrecision) }, { "autocast", recipe.autocast },
        { "master_weights", recipe.masterWeights }, { "optimizer", stringOrNull(recipe.optimizer) },
        { "optimizer_variant", stringOrNull(recipe.optimizerVariant) }, { "sharding", stringOrNull(recipe.sharding) },
        { "activation_checkpointing", optionalToJson(recipe.activationCheckpointing) },
        { "evidence", recipe.evidence } };
}

} // namespace

json oomMessageToJson(const OomMessage& message, const MemoryLog& listedBefore)
{
    json processes = json::array();
    for (const auto& process : message.processes) {
        processes.push_back({ { "pid", optionalToJson(process.pid) }, { "bytes", optionalToJson(process.bytes) },
            { "self", process.self } });
    }
    json result { { "backend", backendName(message.backend) }, { "template", oomTemplateName(message.templateId) },
        { "exception", message.exception }, { "device", optionalToJson(message.device) },
        { "requested_bytes", optionalToJson(message.requestedBytes) },
        { "total_bytes", optionalToJson(message.totalBytes) }, { "free_bytes", optionalToJson(message.freeBytes) },
        { "allocated_bytes", optionalToJson(message.allocatedBytes) },
        { "reserved_bytes", optionalToJson(message.reservedBytes) },
        { "reserved_unallocated_bytes", optionalToJson(message.reservedUnallocatedBytes) },
        { "allowed_bytes", optionalToJson(message.allowedBytes) },
        { "private_pools_bytes", optionalToJson(message.privatePoolsBytes) }, { "processes", std::move(processes) },
        { "torch_version_hint", message.torchVersionHint }, { "phase", phaseName(message.phase) },
        { "truncated", message.truncated }, { "probable", message.probable }, { "source_line", message.sourceLine },
        { "notes", message.notes } };
    if (message.otherAllocationsBytes)
        result["other_allocations_bytes"] = *message.otherAllocationsBytes;
    // The rank whose "[rankN]:" lines printed it; null without a launcher prefix.
    result["rank"] = optionalToJson(message.rank);
    // Added after the first contract (keys are only ever added): what newer templates and logs carry.
    result["platform_limit_bytes"] = optionalToJson(message.platformLimitBytes);
    result["xla_buffers"] = message.xlaBuffers ? xlaBuffersToJson(*message.xlaBuffers) : json(nullptr);
    result["trainable_parameters"] = optionalToJson(message.trainableParameters);
    result["total_parameters"] = optionalToJson(message.totalParameters);
    result["training_recipe"] = trainingRecipeToJson(message.recipe);
    json memoryLog = json::array();
    for (const auto& point : message.memoryLog.pointsAfter(listedBefore))
        memoryLog.push_back({ { "step", point.step }, { "bytes", optionalToJson(point.bytes) },
            { "sequence_length", optionalToJson(point.sequenceLength) }, { "batch", point.batch },
            { "source_line", point.sourceLine }, { "bytes_metric", stringOrNull(point.bytesMetric) },
            { "tokens", optionalToJson(point.tokens) } });
    result["memory_log"] = std::move(memoryLog);
    if (message.traceback)
        result["traceback"] = tracebackToJson(*message.traceback);
    return result;
}

json memorySummaryToJson(const MemorySummary& summary)
{
    return json { { "device", summary.device }, { "ooms", optionalToJson(summary.ooms) },
        { "alloc_retries", optionalToJson(summary.allocRetries) }, { "rows", summaryRowsToJson(summary.rows) },
        { "large_pool_rows", summaryRowsToJson(summary.largePool) },
        { "small_pool_rows", summaryRowsToJson(summary.smallPool) }, { "unit_era", summary.unitEra },
        { "abbreviated", summary.abbreviated }, { "truncated", summary.truncated } };
}

json snapshotToJson(const SnapshotAnalysis& analysis, const SnapshotHeadroom* headroom, SnapshotBackend backend)
{
    const Snapshot& snapshot = *analysis.snapshot;
    const int32_t device = analysis.primaryDevice;

    uint64_t segments = 0, blocks = 0, reserved = 0, allocated = 0;
    for (const auto& segment : snapshot.segments) {
        if (segment.device != device)
            continue;
        ++segments;
        blocks += segment.blockCount;
        reserved += segment.totalSize;
        allocated += segment.allocatedSize;
    }
    const DeviceTrace* trace = snapshot.trace(device);
    const size_t traceEvents = trace ? trace->events.size() : 0;
    const size_t oomEvents = trace ? std::count_if(trace->events.begin(), trace->events.end(),
                                 [](const TraceEvent& e) { return e.action == TraceAction::Oom; })
                                   : 0;

    json categories = json::object();
    const DeviceAnalysis* deviceAnalysis = analysis.primary();
    for (int i = 0; i < categoryCount; ++i) {
        const auto category = static_cast<Category>(i);
        categories[std::string(categoryName(category))] = deviceAnalysis ? deviceAnalysis->categoriesAtPeak[i] : 0;
    }
    return json { { "devices", snapshot.devices() }, { "device", device }, { "segments", segments },
        { "blocks", blocks }, { "trace_events", traceEvents }, { "reserved_bytes", reserved },
        { "allocated_bytes", allocated },
        { "peak_allocated_bytes", deviceAnalysis ? deviceAnalysis->peakAllocatedBytes : 0 },
        { "peak_time_us", deviceAnalysis ? json(deviceAnalysis->peakTimeUs) : json(nullptr) },
        { "oom_events", oomEvents }, { "categories_at_peak", std::move(categories) },
        { "container", snapshot.container },
        { "trace_truncated", deviceAnalysis ? deviceAnalysis->traceTruncated : false },
        { "peak_reserved_bytes", deviceAnalysis ? json(deviceAnalysis->peakReservedBytes) : json(nullptr) },
        { "capacity_bytes", headroom ? optionalToJson(headroom->capacityBytes) : json(nullptr) },
        { "headroom_bytes", headroom ? optionalToJson(headroom->headroomBytes) : json(nullptr) },
        { "rules_error", analysis.rulesError.empty() ? json(nullptr) : json(analysis.rulesError) },
        { "warnings", snapshot.warnings }, { "backend", snapshotBackendName(backend) } };
}

json diagnosisToJson(const Diagnosis& diagnosis)
{
    json evidence = json::array();
    json links = json::array();
    for (const auto& item : diagnosis.evidence) {
        evidence.push_back(item.text);
        if (item.link) {
            links.push_back({ { "evidence", evidence.size() - 1 }, { "snapshot", item.link->snapshotIndex },
                { "device", item.link->device }, { "event_index", item.link->eventIndex },
                { "time_us", item.link->timeUs } });
        }
    }
    json fixes = json::array();
    for (const auto& fix : diagnosis.fixes) {
        fixes.push_back({ { "id", fixId(fix.kind) }, { "title", fix.title }, { "detail", fix.detail },
            { "snippet", fix.snippet }, { "projected_saving_bytes", optionalToJson(fix.projectedSavingBytes) },
            { "fits_after", optionalToJson(fix.fitsAfter) }, { "changes_experiment", fix.changesExperiment } });
    }
    return json { { "id", diagnosisIdName(diagnosis.id) }, { "title", diagnosis.title },
        { "confidence", diagnosis.confidence }, { "summary", diagnosis.summary }, { "evidence", std::move(evidence) },
        { "evidence_links", std::move(links) }, { "fixes", std::move(fixes) } };
}

json caseToJson(const Case& input, const CaseAnalysis& analysis)
{
    json inputs = json::array();
    for (const auto& item : input.inputs) {
        json entry { { "path", item.path }, { "kind", inputKindName(item.kind) },
            { "error", item.error ? json(*item.error) : json(nullptr) } };
        if (item.kind == InputKind::Sidecar && !item.error) {
            const auto sidecar = std::find_if(input.sidecars.begin(), input.sidecars.end(),
                [&](const CaptureSidecar& candidate) { return candidate.sourcePath == item.path; });
            if (sidecar != input.sidecars.end())
                entry["sidecar"] = sidecarToJson(*sidecar);
        }
        inputs.push_back(std::move(entry));
    }
    // Each message lists the progress lines printed since the one before it, so a log with hundreds
    // of failures prints every line once (the diagnosis still reads the whole log before each).
    json messages = json::array();
    const MemoryLog* previousLog = nullptr;
    for (const auto& message : input.text.oomMessages) {
        messages.push_back(oomMessageToJson(message, previousLog ? *previousLog : MemoryLog {}));
        previousLog = &message.memoryLog;
    }
    json summaries = json::array();
    for (const auto& summary : input.text.summaries)
        summaries.push_back(memorySummaryToJson(summary));
    json hostKills = json::array();
    for (const auto& kill : input.text.hostKills)
        hostKills.push_back(hostKillToJson(kill));
    json snapshots = json::array();
    for (size_t i = 0; i < analysis.snapshots.size(); ++i) {
        const SnapshotHeadroom* headroom = nullptr;
        for (const auto& candidate : analysis.headroom) {
            if (candidate.snapshotIndex == static_cast<int>(i))
                headroom = &candidate;
        }
        const SnapshotBackend backend = analysis.snapshots[i].snapshot
            ? snapshotBackend(*analysis.snapshots[i].snapshot, input.text.oomMessages)
            : SnapshotBackend::Cuda;
        snapshots.push_back(snapshotToJson(analysis.snapshots[i], headroom, backend));
    }
    json diagnoses = json::array();
    for (const auto& diagnosis : analysis.diagnoses)
        diagnoses.push_back(diagnosisToJson(diagnosis));

    json document = withPresentationKeys(
        json { { "tool", "oomlens" }, { "version", OOMLENS_VERSION }, { "inputs", std::move(inputs) },
            { "oom_messages", std::move(messages) }, { "memory_summaries", std::move(summaries) },
            { "host_kills", std::move(hostKills) }, { "snapshots", std::move(snapshots) },
            { "diagnoses", std::move(diagnoses) }, { "links", analysis.links } },
        analysis);
    document["private_pools"] = privatePoolsToJson(input, analysis);
    document["compiled_regions"] = compiledRegionsToJson(analysis);
    document["pinned_host_memory"] = pinnedHostMemoryToJson(input, analysis);
    document["pending_frees"] = pendingFreesToJson(analysis);
    document["profiler_timelines"] = profilerTimelinesToJson(input, analysis);
    document["allocation_annotations"] = allocationAnnotationsToJson(analysis);
    // Ranks whose own "[rankN]:" lines hold an OOM message, the failing rank first.
    document["failed_ranks"] = input.text.failedRanks;
    document["serving"] = servingToJson(analysis);
    // The phase the failure happened in, as the text says it (TextFindings::failingPhase): the
    // messages' when they carry one, else a bare traceback's, which has no other place here.
    document["failing_phase"] = phaseName(input.text.failingPhase());
    return document;
}

} // namespace oomlens
