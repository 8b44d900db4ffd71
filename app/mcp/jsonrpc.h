#pragma once

// JSON-RPC 2.0 as MCP's stdio transport uses it: one message per line, no batches since MCP
// 2025-06-18 (earlier versions' batches are still answered, element by element).

#include <nlohmann/json.hpp>

#include <optional>
#include <string>

namespace oomlens::mcp {

using Json = nlohmann::ordered_json;

namespace rpc {
// The error codes JSON-RPC 2.0 defines.
inline constexpr int parseError = -32700;
inline constexpr int invalidRequest = -32600;
inline constexpr int methodNotFound = -32601;
inline constexpr int invalidParams = -32602;
inline constexpr int internalError = -32603;
} // namespace rpc

// A request or notification that passed JSON-RPC's shape checks.
struct RpcCall
{
    std::string method;
    Json params; // an object (or array); null when absent
    std::optional<Json> id; // absent: a notification, which gets no answer
};

// What one parsed message is: a call, a response to something we never ask (ignored), or an
// invalid request (answered with `error`).
struct ClassifiedMessage
{
    std::optional<RpcCall> call;
    std::optional<Json> error; // the complete error response
};
ClassifiedMessage classifyMessage(const Json& message);

Json resultResponse(const Json& id, Json result);
Json errorResponse(const Json& id, int code, const std::string& message);

// One line on the wire: compact, UTF-8 (a string that is not UTF-8 becomes U+FFFD rather than
// failing the whole answer), never a raw newline.
std::string serialize(const Json& message);

} // namespace oomlens::mcp
