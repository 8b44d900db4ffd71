#include "app/mcp/mcpserver.h"

#include "app/mcp/tool.h"

#include <algorithm>
#include <cstdio>
#include <exception>
#include <istream>
#include <ostream>
#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace oomlens::mcp {

namespace {

// A JSON-RPC error to answer instead of a result.
struct RpcFailure
{
    int code;
    std::string message;
};

// A tool's error lines quote the agent's arguments (a path, a value it did not take); each is
// kept to what identifies it.
constexpr size_t maxToolErrorLineBytes = 600;

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

enum class LineRead {
    Line,
    TooLong,
    End,
};

// One line without its newline, at most `limit` bytes kept: the rest of a longer line is read
// and dropped, so that the next line is read whole.
LineRead readLine(std::istream& in, std::string& line, size_t limit)
{
    line.clear();
    std::streambuf* buffer = in.rdbuf();
    bool any = false;
    bool tooLong = false;
    for (;;) {
        const int c = buffer->sbumpc();
        if (c == std::char_traits<char>::eof())
            return !any ? LineRead::End : tooLong ? LineRead::TooLong : LineRead::Line;
        any = true;
        if (c == '\n')
            return tooLong ? LineRead::TooLong : LineRead::Line;
        if (line.size() < limit) {
            line.push_back(static_cast<char>(c));
        } else if (!tooLong) {
            tooLong = true;
            line = std::string(); // the memory back now, not at the newline
        }
    }
}

// The id's JSON text: how a cancellation names the call it stops.
std::string idKey(const Json& id)
{
    return serialize(id);
}

} // namespace

McpServer::McpServer(size_t cachedCases)
    : m_cache(cachedCases)
{ }

McpServer::~McpServer()
{
    finishWorkers();
}

void McpServer::setSender(std::function<void(const std::string& line)> send)
{
    const std::lock_guard lock(m_sendMutex);
    m_send = std::move(send);
}

void McpServer::send(const std::string& line)
{
    const std::lock_guard lock(m_sendMutex); // one line at a time, whichever thread sends it
    if (m_send)
        m_send(line);
}

std::optional<std::string> McpServer::handleLine(const std::string& line)
{
    return handleLine(line, Mode::Inline);
}

std::optional<std::string> McpServer::handleLine(const std::string& line, Mode mode)
{
    if (line.find_first_not_of(" \t\r") == std::string::npos)
        return std::nullopt; // a blank line between messages
    if (nestsDeeperThan(line))
        return serialize(errorResponse(nullptr, rpc::invalidRequest,
            "Invalid Request: the message nests arrays and objects deeper than " + std::to_string(maxNestingDepth)
                + " levels"));
    Json message;
    try {
        message = Json::parse(line);
    } catch (const Json::parse_error& error) {
        // nlohmann quotes the token it stopped at, all of it: errorResponse clips the message.
        return serialize(errorResponse(nullptr, rpc::parseError, std::string("Parse error: ") + error.what()));
    }
    if (message.is_array()) {
        // A batch (protocol 2025-03-26 and older): each element on its own, run here, answers together.
        if (message.empty())
            return serialize(errorResponse(nullptr, rpc::invalidRequest, "Invalid Request: an empty batch"));
        Json answers = Json::array();
        for (const Json& element : message) {
            if (std::optional<Json> answer = handleMessage(element, Mode::Inline, true))
                answers.push_back(std::move(*answer));
        }
        if (answers.empty())
            return std::nullopt;
        return serialize(answers);
    }
    if (std::optional<Json> answer = handleMessage(message, mode, false))
        return serialize(*answer);
    return std::nullopt;
}

std::optional<Json> McpServer::handleMessage(const Json& message, Mode mode, bool inBatch)
{
    ClassifiedMessage classified = classifyMessage(message);
    if (classified.error)
        return *classified.error;
    if (!classified.call)
        return std::nullopt; // a response to nothing we asked
    RpcCall& call = *classified.call;
    if (!call.id) {
        // notifications/initialized and any other: no answer. A cancellation stops its call.
        if (call.method == "notifications/cancelled")
            cancel(call.params);
        return std::nullopt;
    }
    // The lifecycle: initialize first (never in a batch), ping at any time, the rest after.
    if (call.method == "initialize" && inBatch)
        return errorResponse(*call.id, rpc::invalidRequest, "Invalid Request: initialize cannot be part of a batch");
    if (!m_initialized && call.method != "initialize" && call.method != "ping")
        return errorResponse(*call.id, rpc::invalidRequest,
            "Invalid Request: \"" + call.method + "\" before initialize; the client sends initialize first");
    if (mode == Mode::Workers && call.method == "tools/call")
        return queue(std::move(call));
    return answer(call, nullptr);
}

std::optional<Json> McpServer::answer(const RpcCall& call, const std::atomic_bool* cancel)
{
    try {
        return resultResponse(*call.id, dispatch(call, cancel));
    } catch (const RpcFailure& failure) {
        return errorResponse(*call.id, failure.code, failure.message);
    } catch (const CallCancelled&) {
        return std::nullopt; // the client said it no longer waits
    } catch (const std::exception& error) {
        std::fprintf(stderr, "oomlens mcp: %s failed: %s\n", clipped(call.method).c_str(), error.what());
        return errorResponse(*call.id, rpc::internalError, std::string("Internal error: ") + error.what());
    }
}

Json McpServer::dispatch(const RpcCall& call, const std::atomic_bool* cancel)
{
    if (call.method == "initialize")
        return initialize(call.params);
    if (call.method == "ping")
        return Json::object();
    if (call.method == "tools/list")
        return listTools(call.params);
    if (call.method == "tools/call")
        return callTool(call.params, controlFor(call.params, cancel));
    throw RpcFailure { rpc::methodNotFound, "Method not found: " + call.method };
}

Json McpServer::initialize(const Json& params)
{
    std::string requested;
    if (params.is_object() && params.contains("protocolVersion") && params["protocolVersion"].is_string())
        requested = params["protocolVersion"].get<std::string>();
    std::string version = protocolVersions[0];
    for (const char* known : protocolVersions) {
        if (requested == known)
            version = known;
    }
    if (params.is_object() && params.contains("clientInfo") && params["clientInfo"].is_object()
        && params["clientInfo"].contains("name") && params["clientInfo"]["name"].is_string())
        std::fprintf(stderr, "oomlens mcp: client %s, protocol %s\n",
            clipped(params["clientInfo"]["name"].get_ref<const std::string&>()).c_str(), version.c_str());
    m_initialized = true;
    return Json {
        { "protocolVersion", version },
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

Json McpServer::listTools(const Json& params) const
{
    // One page holds every tool, so no cursor is ever issued: any cursor is one we do not know.
    if (params.is_object() && params.contains("cursor") && !params["cursor"].is_null())
        throw RpcFailure { rpc::invalidParams, "Invalid params: unknown cursor (tools/list gives every tool at once)" };
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

CallControl McpServer::controlFor(const Json& params, const std::atomic_bool* cancel)
{
    // The client asks for progress by a token in the request's _meta; each notification repeats it.
    Json token = nullptr;
    if (params.is_object() && params.contains("_meta") && params["_meta"].is_object()
        && params["_meta"].contains("progressToken")) {
        const Json& given = params["_meta"]["progressToken"];
        if (given.is_number_integer()
            || (given.is_string() && given.get_ref<const std::string&>().size() <= maxIdBytes))
            token = given;
    }
    if (token.is_null())
        return CallControl(cancel, {});
    return CallControl(cancel, [this, token](int progress, int total, const std::string& message) {
        send(serialize(notification("notifications/progress",
            { { "progressToken", token }, { "progress", progress }, { "total", total }, { "message", message } })));
    });
}

Json McpServer::callTool(const Json& params, const CallControl& control)
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
        result = tool->call(arguments, m_cache, control);
    } catch (const ToolError& error) {
        result = ToolResult::failure(error.what());
    } catch (const std::bad_alloc&) {
        result = ToolResult::failure(name + ": out of memory");
    }
    control.stopIfCancelled();
    if (result.isError)
        result.summary = clippedLines(result.summary, maxToolErrorLineBytes);
    Json answer { { "content", contentFor(result) } };
    if (!result.isError)
        answer["structuredContent"] = std::move(result.structured);
    answer["isError"] = result.isError;
    return answer;
}

std::optional<Json> McpServer::queue(RpcCall call)
{
    const std::string key = idKey(*call.id);
    {
        const std::lock_guard lock(m_callsMutex);
        // JSON-RPC: an id names one request; a second one with it while the first runs is an error.
        if (m_active.contains(key))
            return errorResponse(*call.id, rpc::invalidRequest, "Invalid Request: id " + key + " is already in use");
        auto pending = std::make_shared<PendingCall>();
        pending->call = std::move(call);
        m_active.emplace(key, pending);
        m_queue.push_back(std::move(pending));
    }
    m_callsChanged.notify_one();
    return std::nullopt;
}

void McpServer::cancel(const Json& params)
{
    // MCP: "requestId" names an earlier request; an unknown or finished one is ignored.
    if (!params.is_object() || !params.contains("requestId"))
        return;
    const std::string key = idKey(params["requestId"]);
    const std::lock_guard lock(m_callsMutex);
    const auto found = m_active.find(key);
    if (found == m_active.end())
        return;
    std::shared_ptr<PendingCall> pending = found->second;
    pending->cancelled = true; // a running call stops at its next check and is not answered
    const auto queued = std::find(m_queue.begin(), m_queue.end(), pending);
    if (queued != m_queue.end()) {
        m_queue.erase(queued);
        m_active.erase(found);
    }
}

namespace {

// The server lives for hours and each call may decode a snapshot of hundreds of MB on one of the
// workers. glibc keeps what a call freed in that thread's arena, so the resident size would follow
// the largest call each worker ever ran rather than what is live (the cache): hand the free pages
// back to the system once a call is done.
void returnFreedMemory()
{
#if defined(__GLIBC__)
    malloc_trim(0);
#endif
}

} // namespace

void McpServer::work()
{
    for (;;) {
        std::shared_ptr<PendingCall> pending;
        {
            std::unique_lock lock(m_callsMutex);
            m_callsChanged.wait(lock, [this] { return m_stopping || !m_queue.empty(); });
            if (m_queue.empty())
                return; // stopping, and nothing left to run
            pending = std::move(m_queue.front());
            m_queue.pop_front();
        }
        std::optional<Json> answered = answer(pending->call, &pending->cancelled);
        {
            const std::lock_guard lock(m_callsMutex);
            m_active.erase(idKey(*pending->call.id));
        }
        if (answered && !pending->cancelled)
            send(serialize(*answered));
        returnFreedMemory();
    }
}

void McpServer::startWorkers()
{
    const std::lock_guard lock(m_callsMutex);
    m_stopping = false;
    for (size_t i = m_workers.size(); i < callWorkers; ++i)
        m_workers.emplace_back([this] { work(); });
}

void McpServer::finishWorkers()
{
    {
        const std::lock_guard lock(m_callsMutex);
        m_stopping = true;
    }
    m_callsChanged.notify_all();
    for (std::thread& worker : m_workers)
        worker.join();
    m_workers.clear();
}

void McpServer::serve(std::istream& in, std::ostream& out)
{
    setSender([&out](const std::string& line) {
        out << line << '\n';
        out.flush();
    });
    startWorkers();
    std::string line;
    for (;;) {
        const LineRead read = readLine(in, line, maxLineBytes);
        if (read == LineRead::End)
            break;
        if (read == LineRead::TooLong) {
            send(serialize(errorResponse(nullptr, rpc::invalidRequest,
                "Invalid Request: a message longer than " + std::to_string(maxLineBytes >> 20) + " MiB")));
            continue;
        }
        try {
            if (const std::optional<std::string> answer = handleLine(line, Mode::Workers))
                send(*answer);
        } catch (const std::exception& error) {
            // Memory for a huge message, say: that line fails, the next is read.
            send(serialize(errorResponse(nullptr, rpc::internalError, std::string("Internal error: ") + error.what())));
        }
    }
    finishWorkers();
    setSender({});
}

} // namespace oomlens::mcp
