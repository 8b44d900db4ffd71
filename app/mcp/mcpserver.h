#pragma once

#include "app/mcp/casecache.h"
#include "app/mcp/jsonrpc.h"

#include <iosfwd>
#include <optional>
#include <string>

namespace oomlens::mcp {

// The protocol versions this server speaks, newest first. `initialize` answers the client's
// version when it is one of these, else the newest (the client then decides whether to go on).
// A tools-only stdio server is the same in all four (2025-06-18 added structuredContent and
// outputSchema, which older clients ignore; 2025-11-25 changed nothing a tool server must do).
inline constexpr const char* protocolVersions[] = { "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05" };

// The Model Context Protocol server of `oomlens mcp`: lifecycle (initialize, ping), tools/list
// and tools/call over the tools of tool.h. Transport-free: handleLine takes one line read from the
// client and returns the line to write back, if any; serve() runs that over two streams.
class McpServer
{
public:
    explicit McpServer(size_t cachedCases = 3);

    // One message (or an old-style batch) in, the answer out; nothing for notifications and
    // responses. Never throws: a tool that fails answers isError, anything else an RPC error.
    std::optional<std::string> handleLine(const std::string& line);

    // Reads messages line by line until `in` ends, writing each answer as one line to `out`.
    void serve(std::istream& in, std::ostream& out);

    const CaseCache& cache() const { return m_cache; }

private:
    std::optional<Json> handleMessage(const Json& message);
    Json dispatch(const std::string& method, const Json& params); // throws RpcFailure
    Json initialize(const Json& params);
    Json listTools() const;
    Json callTool(const Json& params);

    CaseCache m_cache;
    std::string m_protocolVersion; // negotiated; empty before initialize
};

} // namespace oomlens::mcp
