#pragma once

#include "app/mcp/jsonrpc.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace oomlens::mcp {

// Reads a tool's arguments. A missing required key or a value of the wrong type throws
// ToolError naming the key ("live_at: \"top\" must be a whole number"), which the agent reads as
// the tool's error. Unknown keys are refused too: a misspelt option silently ignored would
// answer another question than the one asked.
class Arguments
{
public:
    Arguments(std::string tool, const Json& arguments, std::vector<std::string> known);

    bool has(const std::string& key) const;
    std::string string(const std::string& key) const; // required
    std::optional<std::string> optionalString(const std::string& key) const;
    std::vector<std::string> strings(const std::string& key) const; // a list of strings; empty when absent
    std::optional<int64_t> optionalInteger(const std::string& key, int64_t minimum, int64_t maximum) const;
    std::optional<bool> optionalBoolean(const std::string& key) const;
    const Json& raw(const std::string& key) const;

    // A path an input may be read from: not '-' (standard input carries the protocol).
    std::string path(const std::string& key) const;
    std::vector<std::string> paths(const std::string& key) const;

    [[noreturn]] void fail(const std::string& message) const;

private:
    std::string m_tool;
    Json m_arguments;
};

} // namespace oomlens::mcp
