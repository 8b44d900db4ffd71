#pragma once

// Which inputs a case was read from, as they are on disk: what a front end that keeps cases
// (the MCP server's cache) compares to tell a case still current from one whose files changed.

#include "core/case.h"

#include <cstdint>
#include <string>
#include <vector>

namespace oomlens {

struct InputStamp
{
    std::string path; // absolute
    int64_t size = -1; // -1: nothing there; 0 for a folder
    int64_t modifiedMs = 0;
    friend bool operator==(const InputStamp&, const InputStamp&) = default;
};

std::vector<InputStamp> stampInputs(const std::vector<std::string>& paths);

// Whether every input is as it was when stamped.
bool unchanged(const std::vector<InputStamp>& stamps);

// The snapshot `input` read from `path` (compared as absolute paths), or -1.
int snapshotReadFrom(const Case& input, const std::string& path);

} // namespace oomlens
