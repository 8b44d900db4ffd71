#pragma once

// The inputs the tools share: a case (files and pasted text, as `diagnose` reads them) and one
// snapshot file (as `compare` reads it), read through the cache and checked the way the CLI
// checks them, failing with the CLI's own lines.

#include "app/mcp/arguments.h"
#include "app/mcp/casecache.h"

#include <memory>
#include <optional>
#include <string>

namespace oomlens::mcp {

// The input schema of a tool that reads a case: "inputs", "text", "device", then
// `extraProperties` (",\n \"key\": {...}" JSON text) and the `extraRequired` keys ("\"key\"").
Json caseInputSchema(const std::string& extraProperties = {}, const std::string& extraRequired = {});

CaseRequest readCaseRequest(const Arguments& arguments);
std::optional<int32_t> readDevice(const Arguments& arguments);

// The case, or ToolError with the CLI's line for each input that could not be read.
// Throws CallCancelled when `control` is cancelled meanwhile.
std::shared_ptr<const CachedCase> loadCase(CaseCache& cache, const CaseRequest& request, const CallControl& control);

// One snapshot file and its analysis for `device`; ToolError when it cannot be read, is not a
// snapshot or has no such device. `ref` keeps the case that holds it alive.
const SnapshotAnalysis& loadSnapshot(CaseCache& cache, const std::string& path, std::optional<int32_t> device,
    CaseCache::SnapshotRef& ref, const CallControl& control);

} // namespace oomlens::mcp
