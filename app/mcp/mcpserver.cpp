#include "app/mcp/mcpserver.h"

#include "app/mcp/tool.h"

#include <cstdio>
#include <exception>
#include <istream>
#include <ostream>

namespace oomlens::mcp {

namespace {

// A JSON-RPC error to answer instead of a result.
struct RpcFailure
{
    int code;
    std::string message;
};

Json contentFor(const ToolResult& result)
{
    // The summary first, for a reader; then the whole result as JSON text, because some clients
    // hand the model only `content` and never `structuredContent` (the spec asks for both).
    Json content = Json::array();
    content.push_back({ { "type", "text" }, { "text", result.summary } });
    if (!result.isError)
        content.push_back({ { "type", "text" }, { "text", serialize(result.structured) } });
    return content;
}

} // namespace

McpServer::McpServer(size_t cachedCases)
    : m_cache(cachedCases)
{ }

std::optional<std::string> McpServer::handleLine(const std::string& line)
{
    if (line.find_first_not_of(" \t\r") == std::string::npos)
        return std::nullopt; // a blank line between messages
    Json message;
    try {
        message = Json::parse(line);
    } catch (const Json::parse_error& error) {
        return serialize(errorResponse(nullptr, rpc::parseError, std::string("Parse error: ") + error.what()));
    }
    if (message.is_array()) {
        // A batch (protocol 2025-03-26 and older): each element on its own, answers together.
        if (message.empty())
            return serialize(errorResponse(nullptr, rpc::invalidRequest, "Invalid Request: an empty batch"));
        Json answers = Json::array();
        for (const Json& element : message) {
            if (std::optional<Json> answer = handleMessage(element))
                answers.push_back(std::move(*answer));
        }
        if (answers.empty())
            return std::nullopt;
        return serialize(answers);
    }
    if (std::optional<Json> answer = handleMessage(message))
        return serialize(*answer);
    return std::nullopt;
}

std::optional<Json> McpServer::handleMessage(const Json& message)
{
    const ClassifiedMessage classified = classifyMessage(message);
    if (classified.error)
        return *classified.error;
    if (!classified.call)
        return std::nullopt; // a response to nothing we asked
    const RpcCall& call = *classified.call;
    if (!call.id) {
        // notifications/initialized, notifications/cancelled (every call is answered before the
        // next is read, so there is nothing left to cancel) and any other: no answer.
        return std::nullopt;
    }
    try {
        return resultResponse(*call.id, dispatch(call.method, call.params));
    } catch (const RpcFailure& failure) {
        return errorResponse(*call.id, failure.code, failure.message);
    } catch (const std::exception& error) {
        std::fprintf(stderr, "oomlens mcp: %s failed: %s\n", call.method.c_str(), error.what());
        return errorResponse(*call.id, rpc::internalError, std::string("Internal error: ") + error.what());
    }
}

Json McpServer::dispatch(const std::string& method, const Json& params)
{
    if (method == "initialize")
        return initialize(params);
    if (method == "ping")
        return Json::object();
    if (method == "tools/list")
        return listTools();
    if (method == "tools/call")
        return callTool(params);
    throw RpcFailure { rpc::methodNotFound, "Method not found: " + method };
}

Json McpServer::initialize(const Json& params)
{
    std::string requested;
    if (params.is_object() && params.contains("protocolVersion") && params["protocolVersion"].is_string())
        requested = params["protocolVersion"].get<std::string>();
    m_protocolVersion = protocolVersions[0];
    for (const char* version : protocolVersions) {
        if (requested == version)
            m_protocolVersion = version;
    }
    if (params.is_object() && params.contains("clientInfo") && params["clientInfo"].is_object())
        std::fprintf(stderr, "oomlens mcp: client %s, protocol %s\n",
            params["clientInfo"].value("name", std::string("?")).c_str(), m_protocolVersion.c_str());
    return Json {
        { "protocolVersion", m_protocolVersion },
        { "capabilities", { { "tools", { { "listChanged", false } } } } },
        { "serverInfo", { { "name", "oomlens" }, { "title", "oomlens" }, { "version", OOMLENS_VERSION } } },
        { "instructions",
            "oomlens explains PyTorch GPU out-of-memory failures from memory snapshots (.pickle), OOM "
            "messages, tracebacks, logs and memory_summary() text. For an OOM: call diagnose with the "
            "snapshot and the traceback, then live_at with at=\"oom\" for the live tensors and their stacks, "
            "evidence for what each finding points at, step_peaks and stack_history to follow a site over "
            "time; plan sizes a run before launching it, compare checks a fix." },
    };
}

Json McpServer::listTools() const
{
    Json list = Json::array();
    for (const Tool& tool : tools()) {
        // The hints of protocol 2025-03-26 on: nothing here reaches outside the machine, a repeated
        // call answers the same, and only the report's file is written.
        const Json annotations { { "title", tool.title }, { "readOnlyHint", !tool.writesFiles },
            { "destructiveHint", tool.writesFiles }, { "idempotentHint", true }, { "openWorldHint", false } };
        list.push_back({ { "name", tool.name }, { "title", tool.title }, { "description", tool.description },
            { "inputSchema", tool.inputSchema }, { "outputSchema", tool.outputSchema },
            { "annotations", annotations } });
    }
    return Json { { "tools", std::move(list) } };
}

Json McpServer::callTool(const Json& params)
{
    if (!params.is_object() || !params.contains("name") || !params["name"].is_string())
        throw RpcFailure { rpc::invalidParams, "Invalid params: tools/call needs a tool \"name\"" };
    const std::string name = params["name"].get<std::string>();
    const Tool* tool = findTool(name);
    if (!tool)
        throw RpcFailure { rpc::invalidParams, "Unknown tool: " + name };
    const Json arguments = params.contains("arguments") ? params["arguments"] : Json::object();

    ToolResult result;
    try {
        result = tool->call(arguments, m_cache);
    } catch (const ToolError& error) {
        result = ToolResult::failure(error.what());
    } catch (const std::bad_alloc&) {
        result = ToolResult::failure(name + ": out of memory");
    }
    Json answer { { "content", contentFor(result) } };
    if (!result.isError)
        answer["structuredContent"] = std::move(result.structured);
    answer["isError"] = result.isError;
    return answer;
}

void McpServer::serve(std::istream& in, std::ostream& out)
{
    std::string line;
    while (std::getline(in, line)) {
        if (const std::optional<std::string> answer = handleLine(line)) {
            out << *answer << '\n';
            out.flush();
        }
    }
}

} // namespace oomlens::mcp
