// The tools an agent calls after diagnose, to look inside a snapshot: what is live at a moment
// (live_at), what a diagnosis' evidence points at (evidence), each step's peak (step_peaks) and
// one allocation site over time (stack_history). Every figure comes from the snapshot analysis
// and core/analysis/livequery.h, as in the app's views and the report.

#include "app/mcp/momentjson.h"
#include "app/mcp/tool.h"
#include "app/mcp/toolinputs.h"
#include "core/analysis/livequery.h"
#include "core/analysis/series.h"
#include "core/analysis/userframe.h"
#include "core/diagnosis/stepprofile.h"
#include "core/presentation/stackframes.h"
#include "core/units.h"

#include <algorithm>
#include <charconv>
#include <map>
#include <unordered_map>

namespace oomlens::mcp {

namespace {

constexpr size_t defaultTop = 20;
constexpr int64_t maxTop = 1000;

StackFrames readFrames(const Arguments& arguments)
{
    const std::string frames = arguments.optionalString("frames").value_or("user");
    if (frames == "user")
        return StackFrames::User;
    if (frames == "all")
        return StackFrames::All;
    arguments.fail("\"frames\" is \"user\" or \"all\", got '" + frames + "'");
}

std::optional<int64_t> parseInteger(std::string_view text)
{
    int64_t value = 0;
    const auto [end, error] = std::from_chars(text.data(), text.data() + text.size(), value);
    if (error != std::errc() || end != text.data() + text.size())
        return std::nullopt;
    return value;
}

const char* const momentHelp = "\"peak\", \"oom\", \"event:N\" or \"time_us:T\"";

// The event `at` names on this device: live_at shows the state right after it.
int64_t resolveMoment(const Arguments& arguments, const std::string& at, const Snapshot& snapshot,
    const DeviceAnalysis& device, const std::string& path)
{
    const DeviceTrace* trace = snapshot.trace(device.device);
    const int64_t events = trace ? static_cast<int64_t>(trace->events.size()) : 0;
    if (at == "peak")
        return device.peakEvent;
    if (at == "oom") {
        if (device.ooms.empty())
            arguments.fail(path + " has no OOM event on device " + std::to_string(device.device)
                + " (it did not fail, or the trace ended before); use at=\"peak\"");
        return device.ooms.front().eventIndex;
    }
    if (at.starts_with("event:")) {
        const std::optional<int64_t> event = parseInteger(std::string_view(at).substr(6));
        if (!event || *event < -1 || *event >= events)
            arguments.fail("\"at\": event:N needs N from -1 to " + std::to_string(events - 1) + ", got '" + at + "'");
        return *event;
    }
    if (at.starts_with("time_us:")) {
        const std::optional<int64_t> time = parseInteger(std::string_view(at).substr(8));
        if (!time)
            arguments.fail("\"at\": time_us:T needs a whole number of microseconds, got '" + at + "'");
        if (!trace || events == 0)
            arguments.fail(path + " has no trace on device " + std::to_string(device.device));
        // The state at T: right after the last event whose (running maximum) time is <= T.
        const int64_t after = *time == INT64_MAX ? events : eventAtTime(device, *trace, *time + 1);
        return after - 1;
    }
    arguments.fail("\"at\" is " + std::string(momentHelp) + ", got '" + at + "'");
}

std::string sizeText(uint64_t bytes)
{
    return formatBytes(bytes);
}

Json topLive(const Snapshot& snapshot, const DeviceAnalysis& device, int64_t event, size_t top, StackFrames frames)
{
    Json list = Json::array();
    for (uint32_t index : largestLive(device, event, top))
        list.push_back(allocationToJson(snapshot, device, index, frames));
    return list;
}

// --- live_at ---

ToolResult liveAt(const Json& json, CaseCache& cache, const CallControl& control)
{
    const Arguments arguments("live_at", json, { "input", "at", "top", "device", "frames" });
    const std::string path = arguments.path("input");
    const std::optional<int32_t> deviceOption = readDevice(arguments);
    const size_t top = static_cast<size_t>(arguments.optionalInteger("top", 0, maxTop).value_or(defaultTop));
    const StackFrames frames = readFrames(arguments);
    CaseCache::SnapshotRef ref;
    const SnapshotAnalysis& analysis = loadSnapshot(cache, path, deviceOption, ref, control);
    const DeviceAnalysis& device = *analysis.primary();
    const Snapshot& snapshot = *analysis.snapshot;
    const std::string at = arguments.optionalString("at").value_or(device.ooms.empty() ? "peak" : "oom");
    const int64_t event = resolveMoment(arguments, at, snapshot, device, path);

    const std::vector<uint32_t> live = liveAllocations(device, event);
    uint64_t liveBytes = 0;
    for (uint32_t index : live)
        liveBytes += device.allocations[index].requestedSize;
    const CategoryBytes byCategory = liveByCategory(device, event);

    ToolResult result;
    Json& out = result.structured;
    out["input"] = path;
    out["device"] = device.device;
    out["at"] = at;
    out["moment"] = momentToJson(snapshot, device, event);
    if (at == "oom") {
        const OomAnalysis& oom = device.ooms.front();
        out["oom"] = { { "requested_bytes", oom.requestedBytes }, { "device_free_bytes", oom.deviceFreeBytes },
            { "largest_free_block_bytes", oom.largestFreeBlock }, { "free_in_pool_bytes", oom.freeInPoolBytes },
            { "stream", oom.stream }, { "stack", userFrameTexts(snapshot, oom.stack) } };
    }
    out["live_count"] = live.size();
    out["live_bytes"] = liveBytes;
    out["live_bytes_by_category"] = categoryBytesToJson(byCategory);
    out["allocations"] = topLive(snapshot, device, event, top, frames);

    std::string largestCategory;
    uint64_t largestBytes = 0;
    for (int i = 0; i < categoryCount; ++i) {
        if (byCategory[static_cast<size_t>(i)] > largestBytes) {
            largestBytes = byCategory[static_cast<size_t>(i)];
            largestCategory = std::string(categoryName(static_cast<Category>(i)));
        }
    }
    result.summary = "At " + at + " (event " + std::to_string(event) + ", " + out["moment"]["phase"].get<std::string>()
        + "): " + std::to_string(live.size()) + " live allocations, " + sizeText(liveBytes) + ", "
        + sizeText(out["moment"]["reserved_bytes"].get<uint64_t>()) + " reserved"
        + (largestCategory.empty() ? std::string()
                                   : "; most is " + largestCategory + " (" + sizeText(largestBytes) + ")")
        + ". The " + std::to_string(out["allocations"].size()) + " largest are listed with their stacks.";
    return result;
}

// --- evidence ---

const Diagnosis& pickDiagnosis(const Arguments& arguments, const CaseAnalysis& analysis, size_t& index)
{
    if (analysis.diagnoses.empty())
        arguments.fail("the case has no diagnosis (no out-of-memory failure found)");
    index = 0;
    if (arguments.has("diagnosis")) {
        const Json& value = arguments.raw("diagnosis");
        // The schema says a string (one type per field); an index as a number or as digits both read.
        std::optional<int64_t> asIndex;
        if (value.is_number_integer())
            asIndex = value.is_number_unsigned() && value.get<uint64_t>() > uint64_t(INT64_MAX) ? INT64_MAX
                                                                                                : value.get<int64_t>();
        else if (value.is_string())
            asIndex = parseInteger(value.get_ref<const std::string&>());
        if (asIndex) {
            const int64_t number = *asIndex;
            if (number < 0 || static_cast<size_t>(number) >= analysis.diagnoses.size())
                arguments.fail("\"diagnosis\" is an index from 0 to " + std::to_string(analysis.diagnoses.size() - 1));
            index = static_cast<size_t>(number);
        } else if (value.is_string()) {
            const std::string id = value.get<std::string>();
            bool found = false;
            for (size_t i = 0; i < analysis.diagnoses.size() && !found; ++i) {
                if (diagnosisIdName(analysis.diagnoses[i].id) == id) {
                    index = i;
                    found = true;
                }
            }
            if (!found)
                arguments.fail("the case has no diagnosis \"" + id + "\"");
        } else {
            arguments.fail("\"diagnosis\" is an index (0 = the most likely) or an id");
        }
    }
    return analysis.diagnoses[index];
}

ToolResult evidence(const Json& json, CaseCache& cache, const CallControl& control)
{
    const Arguments arguments("evidence", json, { "inputs", "text", "device", "diagnosis", "top", "frames" });
    const size_t top = static_cast<size_t>(arguments.optionalInteger("top", 0, maxTop).value_or(5));
    const StackFrames frames = readFrames(arguments);
    const std::shared_ptr<const CachedCase> loaded = loadCase(cache, readCaseRequest(arguments), control);
    size_t index = 0;
    const Diagnosis& diagnosis = pickDiagnosis(arguments, loaded->analysis, index);

    ToolResult result;
    Json& out = result.structured;
    out["diagnosis"] = { { "index", index }, { "id", std::string(diagnosisIdName(diagnosis.id)) },
        { "title", diagnosis.title }, { "confidence", diagnosis.confidence } };
    Json items = Json::array();
    int linked = 0;
    for (const Evidence& item : diagnosis.evidence) {
        Json entry { { "text", item.text }, { "link", nullptr }, { "moment", nullptr }, { "allocation", nullptr },
            { "live_top", Json::array() } };
        const std::optional<EvidenceLink>& link = item.link;
        if (link && link->snapshotIndex >= 0
            && static_cast<size_t>(link->snapshotIndex) < loaded->analysis.snapshots.size()) {
            const SnapshotAnalysis& analysis = loaded->analysis.snapshots[static_cast<size_t>(link->snapshotIndex)];
            const DeviceAnalysis* device = analysis.device(link->device);
            const DeviceTrace* trace = analysis.snapshot->trace(link->device);
            if (device && trace && link->eventIndex < static_cast<int64_t>(trace->events.size())) {
                ++linked;
                std::string input;
                for (const CaseInput& in : loaded->input.inputs) {
                    if (in.snapshotIndex == link->snapshotIndex)
                        input = in.path;
                }
                entry["link"] = { { "input", input }, { "device", link->device }, { "event", link->eventIndex } };
                entry["moment"] = momentToJson(*analysis.snapshot, *device, link->eventIndex);
                if (link->eventIndex >= 0 && static_cast<size_t>(link->eventIndex) < device->eventAllocation.size()) {
                    const int32_t allocation = device->eventAllocation[static_cast<size_t>(link->eventIndex)];
                    if (allocation >= 0)
                        entry["allocation"]
                            = allocationToJson(*analysis.snapshot, *device, static_cast<uint32_t>(allocation), frames);
                }
                entry["live_top"] = topLive(*analysis.snapshot, *device, link->eventIndex, top, frames);
            }
        }
        items.push_back(std::move(entry));
    }
    out["evidence"] = std::move(items);
    result.summary = diagnosis.title + ": " + std::to_string(diagnosis.evidence.size()) + " pieces of evidence, "
        + std::to_string(linked) + " pointing at a moment of a snapshot (with the allocation there and the "
        + std::to_string(top) + " largest live then).";
    return result;
}

// --- step_peaks ---

ToolResult stepPeaks(const Json& json, CaseCache& cache, const CallControl& control)
{
    const Arguments arguments("step_peaks", json, { "input", "device" });
    const std::string path = arguments.path("input");
    CaseCache::SnapshotRef ref;
    const SnapshotAnalysis& analysis = loadSnapshot(cache, path, readDevice(arguments), ref, control);
    const DeviceAnalysis& device = *analysis.primary();
    const DeviceProfile profile = profileDevice(device, -1);

    ToolResult result;
    Json& out = result.structured;
    out["input"] = path;
    out["device"] = device.device;
    out["trace_truncated"] = device.traceTruncated;
    Json steps = Json::array();
    const StepProfile* highest = nullptr;
    for (const StepProfile& step : profile.steps) {
        Json peak = momentToJson(*analysis.snapshot, device, step.peakEvent);
        steps.push_back({ { "step", step.step }, { "first_event", step.firstEvent }, { "last_event", step.lastEvent },
            { "start_live_bytes", step.startLive() }, { "peak_live_bytes", step.peakLive },
            { "peak_event", step.peakEvent }, { "peak_time_us", peak["time_us"] }, { "peak_phase", peak["phase"] },
            { "peak_dynamic_bytes", step.peakDynamic }, { "dynamic_growth_bytes", step.dynamicGrowth() },
            { "largest_dynamic_allocation_bytes", step.largestDynamicAlloc }, { "has_backward", step.hasBackward },
            { "has_optimizer", step.hasOptimizer }, { "has_eval", step.hasEval }, { "complete", step.complete } });
        if (!highest || step.peakLive > highest->peakLive)
            highest = &step;
    }
    out["steps"] = std::move(steps);
    out["peak"] = momentToJson(*analysis.snapshot, device, device.peakEvent);
    out["peak"]["allocated_bytes"] = device.peakAllocatedBytes;
    if (!highest) {
        result.summary = "The trace shows no training steps (no step boundaries found); the peak is "
            + sizeText(device.peakAllocatedBytes) + " at event " + std::to_string(device.peakEvent) + ".";
    } else {
        result.summary = std::to_string(profile.steps.size()) + " steps; the highest peak is in step "
            + std::to_string(highest->step) + ": " + sizeText(highest->peakLive) + " live at event "
            + std::to_string(highest->peakEvent) + ".";
    }
    return result;
}

// --- stack_history ---

// Which allocations belong to the site: those of one allocation's stack, or those whose stack has
// a frame ("file:line:function") containing `site`. Each stack is judged once.
class SiteMatcher
{
public:
    SiteMatcher(const Snapshot& snapshot, const DeviceAnalysis& device, std::optional<std::string> site,
        std::optional<int64_t> allocation)
        : m_snapshot(snapshot)
        , m_device(device)
        , m_site(std::move(site))
        , m_allocation(allocation)
    { }

    bool operator()(StackId stack)
    {
        if (m_allocation)
            return stack == m_device.allocations[static_cast<size_t>(*m_allocation)].stack;
        auto found = m_matches.find(stack.value);
        if (found == m_matches.end()) {
            const auto frames = m_snapshot.frames->stack(stack);
            const bool any = std::any_of(frames.begin(), frames.end(),
                [this](FrameId frame) { return frameText(m_snapshot, frame).find(*m_site) != std::string::npos; });
            found = m_matches.emplace(stack.value, any).first;
        }
        return found->second;
    }

private:
    const Snapshot& m_snapshot;
    const DeviceAnalysis& m_device;
    std::optional<std::string> m_site;
    std::optional<int64_t> m_allocation;
    std::unordered_map<uint32_t, bool> m_matches;
};

// What the site's allocations add up to, in all and per step.
struct SiteFigures
{
    struct Step
    {
        uint64_t count = 0;
        uint64_t bytes = 0;
        uint64_t freedCount = 0;
    };
    std::map<int32_t, Step> perStep;
    std::vector<uint32_t> matched; // allocation indices, in time order
    uint64_t totalBytes = 0;
    uint64_t liveAtEndCount = 0;
    uint64_t liveAtEndBytes = 0;
    std::optional<StackId> firstStack;
    size_t distinctStacks = 0;
};

SiteFigures siteFigures(const DeviceAnalysis& device, SiteMatcher& matches)
{
    SiteFigures figures;
    std::unordered_map<uint32_t, bool> seenStacks;
    for (uint32_t i = 0; i < device.allocations.size(); ++i) {
        const Allocation& a = device.allocations[i];
        if (!matches(a.stack))
            continue;
        if (seenStacks.emplace(a.stack.value, true).second)
            ++figures.distinctStacks;
        if (!figures.firstStack)
            figures.firstStack = a.stack;
        figures.matched.push_back(i);
        figures.totalBytes += a.requestedSize;
        SiteFigures::Step& step = figures.perStep[a.step];
        ++step.count;
        step.bytes += a.requestedSize;
        if (a.freeEvent >= 0) {
            ++step.freedCount;
        } else {
            ++figures.liveAtEndCount;
            figures.liveAtEndBytes += a.requestedSize;
        }
    }
    return figures;
}

// The site's allocations still live at the first OOM; null without one.
Json liveAtOom(const DeviceAnalysis& device, const std::vector<uint32_t>& matched)
{
    if (device.ooms.empty())
        return nullptr;
    const int64_t oomEvent = device.ooms.front().eventIndex;
    uint64_t count = 0;
    uint64_t bytes = 0;
    for (uint32_t i : matched) {
        if (device.allocations[i].liveAfter(oomEvent)) {
            ++count;
            bytes += device.allocations[i].requestedSize;
        }
    }
    return { { "event", oomEvent }, { "count", count }, { "bytes", bytes } };
}

Json perStepJson(const SiteFigures& figures)
{
    Json steps = Json::array();
    for (const auto& [step, each] : figures.perStep) {
        steps.push_back({ { "step", step >= 0 ? Json(step) : Json(nullptr) }, { "count", each.count },
            { "bytes", each.bytes }, { "freed_count", each.freedCount } });
    }
    return steps;
}

std::string stackHistorySummary(const SiteFigures& figures)
{
    return std::to_string(figures.matched.size()) + " allocations (" + sizeText(figures.totalBytes) + ") from "
        + std::to_string(figures.distinctStacks) + (figures.distinctStacks == 1 ? " stack" : " stacks") + " over "
        + std::to_string(figures.perStep.size()) + (figures.perStep.size() == 1 ? " step" : " steps") + "; "
        + std::to_string(figures.liveAtEndCount) + " (" + sizeText(figures.liveAtEndBytes) + ") never freed.";
}

ToolResult stackHistory(const Json& json, CaseCache& cache, const CallControl& control)
{
    const Arguments arguments("stack_history", json, { "input", "device", "site", "allocation", "limit", "frames" });
    const std::string path = arguments.path("input");
    const size_t limit = static_cast<size_t>(arguments.optionalInteger("limit", 0, maxTop).value_or(50));
    const StackFrames frames = readFrames(arguments);
    CaseCache::SnapshotRef ref;
    const SnapshotAnalysis& analysis = loadSnapshot(cache, path, readDevice(arguments), ref, control);
    const DeviceAnalysis& device = *analysis.primary();
    const Snapshot& snapshot = *analysis.snapshot;
    const std::optional<std::string> site = arguments.optionalString("site");
    const std::optional<int64_t> allocation
        = arguments.optionalInteger("allocation", 0, static_cast<int64_t>(device.allocations.size()) - 1);
    if (site.has_value() == allocation.has_value())
        arguments.fail("give \"site\" (part of a frame, e.g. \"model.py:44\") or \"allocation\" (an index from "
                       "live_at), one of them");
    if (site && site->empty())
        arguments.fail("\"site\" is empty");
    SiteMatcher matches(snapshot, device, site, allocation);
    const SiteFigures figures = siteFigures(device, matches);
    if (figures.matched.empty() && site)
        arguments.fail("no allocation on device " + std::to_string(device.device) + " of " + path
            + " has a frame containing '" + *site + "'");

    ToolResult result;
    Json& out = result.structured;
    out["input"] = path;
    out["device"] = device.device;
    out["site"] = site ? Json(*site) : Json(nullptr);
    out["stack"] = figures.firstStack ? Json(frames == StackFrames::All ? allFrameTexts(snapshot, *figures.firstStack)
                                                                        : userFrameTexts(snapshot, *figures.firstStack))
                                      : Json::array();
    out["distinct_stacks"] = figures.distinctStacks;
    out["allocation_count"] = figures.matched.size();
    out["allocated_bytes"] = figures.totalBytes;
    out["live_at_end_count"] = figures.liveAtEndCount;
    out["live_at_end_bytes"] = figures.liveAtEndBytes;
    out["live_at_oom"] = liveAtOom(device, figures.matched);
    out["per_step"] = perStepJson(figures);
    // The newest `limit`, in time order: the ones nearest the failure.
    Json list = Json::array();
    const size_t first = figures.matched.size() > limit ? figures.matched.size() - limit : 0;
    for (size_t k = first; k < figures.matched.size(); ++k)
        list.push_back(allocationToJson(snapshot, device, figures.matched[k], frames));
    out["allocations"] = std::move(list);
    out["allocations_omitted"] = first;
    result.summary = stackHistorySummary(figures);
    return result;
}

// --- schemas ---

constexpr const char* allocationSchema = R"json({"type": "object",
    "properties": {"allocation": {"type": "integer"}, "bytes": {"type": "integer"}, "block_bytes": {"type": "integer"},
        "category": {"type": "string"}, "reason": {"type": ["string", "null"]}, "phase": {"type": "string"},
        "step": {"type": ["integer", "null"]}, "allocated_at_event": {"type": ["integer", "null"]},
        "freed_at_event": {"type": ["integer", "null"]}, "stream": {"type": "integer"}, "address": {"type": "integer"},
        "stack": {"type": "array", "items": {"type": "string"}}},
    "required": ["allocation", "bytes", "block_bytes", "category", "reason", "phase", "step", "allocated_at_event",
        "freed_at_event", "stream", "address", "stack"]})json";

constexpr const char* momentSchema = R"json({"type": "object",
    "properties": {"event": {"type": "integer"}, "time_us": {"type": ["integer", "null"]}, "phase": {"type": "string"},
        "step": {"type": ["integer", "null"]}, "allocated_bytes": {"type": "integer"}, "reserved_bytes": {"type": "integer"}},
    "required": ["event", "time_us", "phase", "step", "allocated_bytes", "reserved_bytes"]})json";

// A schema text with "$allocation" and "$moment" standing for the shared parts.
Json expand(const char* text)
{
    std::string expanded = text;
    for (const auto& [name, part] : { std::pair { std::string("\"$allocation\""), allocationSchema },
             std::pair { std::string("\"$moment\""), momentSchema } }) {
        for (size_t at = expanded.find(name); at != std::string::npos; at = expanded.find(name))
            expanded.replace(at, name.size(), part);
    }
    return schema(expanded.c_str());
}

constexpr const char* snapshotInputProperties = R"json(
    "input": {"type": "string", "description": "A snapshot file (.pickle); answered from the case diagnose read when it is the same file."},
    "device": {"type": "integer", "minimum": 0, "description": "The device (default: the device of the OOM event, else the one with the most events)."})json";

constexpr const char* framesProperty = R"json(,
    "frames": {"type": "string", "enum": ["user", "all"], "description": "Stack frames shown: \"user\" (default: Python frames outside PyTorch) or \"all\"."})json";

Json snapshotInputSchema(const std::string& extra, const std::string& required = "\"input\"")
{
    return schema(("{\"type\": \"object\", \"properties\": {" + std::string(snapshotInputProperties) + extra
        + "}, \"required\": [" + required + "], \"additionalProperties\": false}")
                      .c_str());
}

constexpr const char* liveAtOutput = R"json({"type": "object",
    "properties": {"input": {"type": "string"}, "device": {"type": "integer"}, "at": {"type": "string"},
        "moment": "$moment",
        "oom": {"type": "object", "properties": {"requested_bytes": {"type": "integer"},
            "device_free_bytes": {"type": "integer"}, "largest_free_block_bytes": {"type": "integer"},
            "free_in_pool_bytes": {"type": "integer"}, "stream": {"type": "integer"},
            "stack": {"type": "array", "items": {"type": "string"}}}},
        "live_count": {"type": "integer"}, "live_bytes": {"type": "integer"},
        "live_bytes_by_category": {"type": "object", "additionalProperties": {"type": "integer"}},
        "allocations": {"type": "array", "items": "$allocation"}},
    "required": ["input", "device", "at", "moment", "live_count", "live_bytes", "live_bytes_by_category", "allocations"]})json";

constexpr const char* evidenceOutput = R"json({"type": "object",
    "properties": {
        "diagnosis": {"type": "object", "properties": {"index": {"type": "integer"}, "id": {"type": "string"},
            "title": {"type": "string"}, "confidence": {"type": "number"}}, "required": ["index", "id", "title", "confidence"]},
        "evidence": {"type": "array", "items": {"type": "object",
            "properties": {"text": {"type": "string"},
                "link": {"type": ["object", "null"], "properties": {"input": {"type": "string"},
                    "device": {"type": "integer"}, "event": {"type": "integer"}}},
                "moment": {"anyOf": [{"type": "null"}, "$moment"]},
                "allocation": {"anyOf": [{"type": "null"}, "$allocation"]},
                "live_top": {"type": "array", "items": "$allocation"}},
            "required": ["text", "link", "moment", "allocation", "live_top"]}}},
    "required": ["diagnosis", "evidence"]})json";

constexpr const char* stepPeaksOutput = R"json({"type": "object",
    "properties": {"input": {"type": "string"}, "device": {"type": "integer"}, "trace_truncated": {"type": "boolean"},
        "steps": {"type": "array", "items": {"type": "object",
            "properties": {"step": {"type": "integer"}, "first_event": {"type": "integer"}, "last_event": {"type": "integer"},
                "start_live_bytes": {"type": "integer"}, "peak_live_bytes": {"type": "integer"},
                "peak_event": {"type": "integer"}, "peak_time_us": {"type": ["integer", "null"]},
                "peak_phase": {"type": "string"}, "peak_dynamic_bytes": {"type": "integer"},
                "dynamic_growth_bytes": {"type": "integer"}, "largest_dynamic_allocation_bytes": {"type": "integer"},
                "has_backward": {"type": "boolean"}, "has_optimizer": {"type": "boolean"}, "has_eval": {"type": "boolean"},
                "complete": {"type": "boolean"}},
            "required": ["step", "first_event", "last_event", "start_live_bytes", "peak_live_bytes", "peak_event",
                "peak_phase", "peak_dynamic_bytes", "has_backward", "has_optimizer", "has_eval", "complete"]}},
        "peak": "$moment"},
    "required": ["input", "device", "steps", "peak"]})json";

constexpr const char* stackHistoryOutput = R"json({"type": "object",
    "properties": {"input": {"type": "string"}, "device": {"type": "integer"}, "site": {"type": ["string", "null"]},
        "stack": {"type": "array", "items": {"type": "string"}}, "distinct_stacks": {"type": "integer"},
        "allocation_count": {"type": "integer"}, "allocated_bytes": {"type": "integer"},
        "live_at_end_count": {"type": "integer"}, "live_at_end_bytes": {"type": "integer"},
        "live_at_oom": {"type": ["object", "null"], "properties": {"event": {"type": "integer"},
            "count": {"type": "integer"}, "bytes": {"type": "integer"}}},
        "per_step": {"type": "array", "items": {"type": "object", "properties": {"step": {"type": ["integer", "null"]},
            "count": {"type": "integer"}, "bytes": {"type": "integer"}, "freed_count": {"type": "integer"}},
            "required": ["step", "count", "bytes", "freed_count"]}},
        "allocations": {"type": "array", "items": "$allocation"},
        "allocations_omitted": {"type": "integer"}},
    "required": ["input", "device", "site", "stack", "allocation_count", "allocated_bytes", "live_at_end_count",
        "live_at_end_bytes", "live_at_oom", "per_step", "allocations", "allocations_omitted"]})json";

} // namespace

std::vector<Tool> momentTools()
{
    return {
        Tool { "live_at", "What is live at a moment",
            "The allocations live at one moment of a snapshot, largest first, each with bytes, category and its "
            "reason, phase, step and stack (\"file:line:function\"), plus the moment (event, time, phase, step), "
            "live bytes by category and, at the OOM, the failed request. \"at\": \"oom\" (default when the run "
            "failed), \"peak\", \"event:N\" or \"time_us:T\".",
            snapshotInputSchema(std::string(R"json(,
    "at": {"type": "string", "description": "\"peak\", \"oom\", \"event:N\" (right after trace event N) or \"time_us:T\"."},
    "top": {"type": "integer", "minimum": 0, "maximum": 1000, "description": "How many allocations to list (default 20)."})json")
                + framesProperty),
            expand(liveAtOutput), liveAt },
        Tool { "evidence", "What a diagnosis' evidence points at",
            "For one diagnosis of the case (\"diagnosis\": index, 0 = most likely, or its id), each piece of evidence "
            "with the moment it points at, the allocation made or freed there and the largest allocations live "
            "then. Takes the same inputs as diagnose.",
            caseInputSchema(std::string(R"json(,
    "diagnosis": {"type": "string", "description": "The diagnosis id (e.g. \"first_backward\") or its index in diagnose's list (\"0\" = most likely, the default)."},
    "top": {"type": "integer", "minimum": 0, "maximum": 1000, "description": "Live allocations listed per moment (default 5)."})json")
                + framesProperty),
            expand(evidenceOutput), evidence },
        Tool { "step_peaks", "Each training step's peak",
            "Per training step of a snapshot: live bytes at its start, its peak (bytes, event, time, phase), the "
            "dynamic memory (activations, temporaries, inputs) and its growth, and whether it ran backward, the "
            "optimizer or evaluation. Shows which step grew and whether memory creeps up step after step.",
            snapshotInputSchema(""), expand(stepPeaksOutput), stepPeaks },
        Tool { "stack_history", "One allocation site over time",
            "Every allocation of one site over the trace: \"site\" matches any frame containing the text "
            "(\"model.py:44\", \"attention\"), or \"allocation\" takes the stack of an allocation live_at listed. "
            "Answers how many and how many bytes per step, how many were never freed and were live at the OOM, "
            "and the newest \"limit\" allocations (default 50).",
            snapshotInputSchema(std::string(R"json(,
    "site": {"type": "string", "description": "Text a frame \"file:line:function\" of the stack contains."},
    "allocation": {"type": "integer", "minimum": 0, "description": "An allocation index from live_at or evidence: its exact stack."},
    "limit": {"type": "integer", "minimum": 0, "maximum": 1000, "description": "How many allocations to list, newest (default 50)."})json")
                + framesProperty),
            expand(stackHistoryOutput), stackHistory },
    };
}

} // namespace oomlens::mcp
