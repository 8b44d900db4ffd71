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

    // A path an input may be read from: not '-' (standard input carries the protocol), and none at
    // all while file arguments are off.
    std::string path(const std::string& key) const;
    std::vector<std::string> paths(const std::string& key) const;

    [[noreturn]] void fail(const std::string& message) const;

private:
    std::string m_tool;
    Json m_arguments;
};

// Off only in the MCP fuzz target (fuzz/mcptarget.h): a fuzzer must not have the tools read
// /dev/zero or write a report over a file; every path argument is then refused as a tool error.
void setFileArgumentsAllowed(bool allowed);
bool fileArgumentsAllowed();

} // namespace oomlens::mcp
