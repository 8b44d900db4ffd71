#pragma once

#include "app/mcp/callcontrol.h"
#include "app/mcp/casecache.h"
#include "app/mcp/jsonrpc.h"

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <deque>
#include <functional>
#include <iosfwd>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <vector>

namespace oomlens::mcp {

// The protocol versions this server speaks, newest first. `initialize` answers the client's
// version when it is one of these, else the newest (the client then decides whether to go on).
// A tools-only stdio server is the same in all four (2025-06-18 added structuredContent and
// outputSchema, which older clients ignore; 2025-11-25 changed nothing a tool server must do).
inline constexpr const char* protocolVersions[] = { "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05" };

// The Model Context Protocol server of `oomlens mcp`: the lifecycle (initialize first, ping any
// time), tools/list and tools/call over the tools of tool.h, progress and cancellation of long
// calls. handleLine answers one line on the calling thread (tests, the fuzz target); serve()
// reads a stream and runs tool calls on workers, so the reader always answers the next line.
class McpServer
{
public:
    explicit McpServer(size_t cachedCases = 3);
    ~McpServer();
    McpServer(const McpServer&) = delete;
    McpServer& operator=(const McpServer&) = delete;

    // Where the lines go that are not handleLine's answer: notifications/progress, and in serve()
    // the answers of the calls the workers ran. Called from several threads, one line at a time.
    void setSender(std::function<void(const std::string& line)> send);

    // One message (or an old-style batch) in, the answer out, the call run here; nothing for
    // notifications and responses. Never throws: a tool that fails answers isError, anything
    // else an RPC error.
    std::optional<std::string> handleLine(const std::string& line);

    // Reads messages line by line until `in` ends, writing each answer as one line to `out`. Tool
    // calls run on workers (callWorkers at once, the others queued), so that a ping, a cancellation
    // or a question about a cached case is answered while a big snapshot decodes. At the end of
    // the input the calls still queued or running are finished and answered, then it returns.
    void serve(std::istream& in, std::ostream& out);

    const CaseCache& cache() const { return m_cache; }

    // Tool calls run at once by serve(): each may hold a decoded snapshot, so a few.
    static constexpr size_t callWorkers = 4;
    // A longer line is refused unread (its bytes skipped to the newline): a pasted log is far smaller.
    static constexpr size_t maxLineBytes = size_t(64) << 20;

private:
    enum class Mode {
        Inline, // tools/call answered on the calling thread
        Workers, // tools/call queued for the workers, answered through the sender
    };
    // A tools/call queued or running on a worker.
    struct PendingCall
    {
        RpcCall call;
        std::atomic_bool cancelled { false };
    };

    std::optional<std::string> handleLine(const std::string& line, Mode mode);
    std::optional<Json> handleMessage(const Json& message, Mode mode, bool inBatch);
    std::optional<Json> answer(const RpcCall& call, const std::atomic_bool* cancel); // nullopt: cancelled
    Json dispatch(const RpcCall& call, const std::atomic_bool* cancel); // throws RpcFailure, CallCancelled
    Json initialize(const Json& params);
    Json listTools(const Json& params) const;
    Json callTool(const Json& params, const CallControl& control);
    CallControl controlFor(const Json& params, const std::atomic_bool* cancel);

    std::optional<Json> queue(RpcCall call); // Workers mode: an error answer, or nothing (queued)
    void cancel(const Json& params);
    void work(); // a worker's loop
    void startWorkers();
    void finishWorkers(); // runs what is queued, then joins
    void send(const std::string& line);

    CaseCache m_cache;
    std::atomic_bool m_initialized { false }; // initialize was answered

    std::mutex m_sendMutex;
    std::function<void(const std::string&)> m_send;

    std::mutex m_callsMutex;
    std::condition_variable m_callsChanged;
    std::deque<std::shared_ptr<PendingCall>> m_queue;
    std::map<std::string, std::shared_ptr<PendingCall>> m_active; // queued or running, by the id's JSON text
    bool m_stopping = false;
    std::vector<std::thread> m_workers;
};

} // namespace oomlens::mcp
