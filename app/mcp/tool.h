#pragma once

#include "app/mcp/callcontrol.h"
#include "app/mcp/jsonrpc.h"

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace oomlens::mcp {

class CaseCache;

// What a tool call answers: on success the structured result (validated by clients against the
// tool's outputSchema) and a few lines for a reader; on failure the one clear line the CLI
// prints for the same input ("oomlens: PATH: reason").
struct ToolResult
{
    Json structured; // an object; unused when isError
    std::string summary; // a short text: what the result says
    bool isError = false;

    static ToolResult failure(std::string line)
    {
        ToolResult result;
        result.summary = std::move(line);
        result.isError = true;
        return result;
    }
};

// Thrown by a tool (and the argument readers) for a call it cannot answer: bad arguments, an
// input that cannot be read. Becomes a ToolResult with isError, so the agent reads why.
struct ToolError : std::runtime_error
{
    using std::runtime_error::runtime_error;
};

struct Tool
{
    std::string name;
    std::string title;
    std::string description;
    Json inputSchema;
    Json outputSchema;
    // `control` says whether the client cancelled the call and takes its progress; a tool passes it
    // to what reads inputs (toolinputs.h) and checks it before other long work.
    std::function<ToolResult(const Json& arguments, CaseCache& cache, const CallControl& control)> call;
    // Only `report` writes (a file the agent names, replaced if it exists); every other tool only
    // reads. Told to clients as the tool's annotations, so they can allow the readers freely.
    bool writesFiles = false;
};

// Every tool `oomlens mcp` offers, in the order tools/list gives them.
const std::vector<Tool>& tools();
const Tool* findTool(const std::string& name);

// The tools by subject; tools() joins them.
std::vector<Tool> caseTools(); // diagnose, report, compare, plan (casetools.cpp)
std::vector<Tool> momentTools(); // live_at, step_peaks, evidence, stack_history (momenttools.cpp)

// Parses a schema written as JSON text (the tools' schemas are literals; a typo fails the tests).
// A list of types ("type": ["integer", "null"], convenient to write) is published as anyOf of
// single types, which clients that take one type per field accept.
Json schema(const char* text);

} // namespace oomlens::mcp
