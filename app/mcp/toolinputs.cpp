#include "app/mcp/toolinputs.h"

#include "app/mcp/tool.h"
#include "opening/inputfailure.h"
#include "opening/opening.h"

namespace oomlens::mcp {

namespace {

constexpr const char* caseInputProperties = R"json(
    "inputs": {"type": "array", "items": {"type": "string"},
        "description": "Files read together as one case: snapshots (.pickle), OOM messages, tracebacks, logs, memory_summary() or nvidia-smi output, capture sidecars; a folder stands for its snapshot files; several snapshot files are the ranks of one job."},
    "text": {"type": "string", "description": "Pasted text read with the files: a traceback, a log tail, memory_summary() output."},
    "device": {"type": "integer", "minimum": 0, "description": "The snapshot device to describe (default: the device of the OOM event, else the one with the most events)."})json";

std::string joinedLines(const std::vector<std::string>& lines)
{
    std::string text;
    for (const std::string& line : lines)
        text += (text.empty() ? "" : "\n") + line;
    return text.empty() ? std::string("oomlens: an input could not be read") : text;
}

} // namespace

Json caseInputSchema(const std::string& extraProperties, const std::string& extraRequired)
{
    return schema(("{\"type\": \"object\", \"properties\": {" + std::string(caseInputProperties) + extraProperties
        + "}, \"required\": [" + extraRequired + "], \"additionalProperties\": false}")
                      .c_str());
}

std::optional<int32_t> readDevice(const Arguments& arguments)
{
    if (const auto device = arguments.optionalInteger("device", 0, 1 << 20))
        return static_cast<int32_t>(*device);
    return std::nullopt;
}

CaseRequest readCaseRequest(const Arguments& arguments)
{
    CaseRequest request;
    request.paths = arguments.paths("inputs");
    request.text = arguments.optionalString("text").value_or(std::string());
    request.device = readDevice(arguments);
    if (request.paths.empty() && request.text.empty())
        arguments.fail("give \"inputs\" (file paths) or \"text\" (a pasted traceback or log)");
    return request;
}

std::shared_ptr<const CachedCase> loadCase(CaseCache& cache, const CaseRequest& request, const CallControl& control)
{
    std::shared_ptr<const CachedCase> loaded = cache.load(request, control);
    if (loaded->failures > 0)
        throw ToolError(joinedLines(loaded->errorLines));
    return loaded;
}

const SnapshotAnalysis& loadSnapshot(CaseCache& cache, const std::string& path, std::optional<int32_t> device,
    CaseCache::SnapshotRef& ref, const CallControl& control)
{
    ref = cache.snapshot(path, device, control);
    if (ref.owner->failures > 0)
        throw ToolError(joinedLines(ref.owner->errorLines));
    if (ref.index < 0)
        throw ToolError(failureLine(notASnapshot(path), FailureReader::CommandLine));
    const SnapshotAnalysis& analysis = ref.owner->analysis.snapshots[static_cast<size_t>(ref.index)];
    if (!analysis.primary()) { // a snapshot without any device: one asked for is refused while read
        const std::string reason = analysis.snapshot ? noSuchDeviceReason(*analysis.snapshot, device.value_or(0))
                                                     : std::string("the snapshot has no such device");
        const InputFailure noDevice { path, reason, false, {} };
        throw ToolError(failureLine(noDevice, FailureReader::CommandLine));
    }
    return analysis;
}

} // namespace oomlens::mcp
