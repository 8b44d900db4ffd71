#pragma once

// JSON-RPC 2.0 as MCP's stdio transport uses it: one message per line, no batches since MCP
// 2025-06-18 (earlier versions' batches are still answered, element by element).

#include <nlohmann/json.hpp>

#include <cstddef>
#include <optional>
#include <string>
#include <string_view>

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

// How deep a message may nest. Copying, comparing, dumping and destroying a JSON value recurse
// once per level, so a line of 50,000 '[' (100 KB) would exhaust the stack; no MCP message
// nests beyond a dozen levels, and 512 levels of recursion stay far inside any thread's stack.
inline constexpr size_t maxNestingDepth = 512;

// Whether `text` opens more than `limit` arrays and objects inside each other, counted outside
// strings as the parser will read them: a scan of the bytes, before anything is built.
bool nestsDeeperThan(std::string_view text, size_t limit = maxNestingDepth);

// How long an error's text may be, where it quotes the client's own text (a method's name, a bad
// token, a path): enough to recognise it. A 10 MB bad token must not come back as a 10 MB answer.
inline constexpr size_t maxQuotedBytes = 300;

// Every answer repeats its request's id: a string id longer than this is refused, not echoed.
inline constexpr size_t maxIdBytes = 256;

// `text` cut to at most `limit` bytes at a UTF-8 character boundary, with "…" when cut.
std::string clipped(std::string_view text, size_t limit = maxQuotedBytes);

// Each line of `text` clipped to `limit` bytes (an error of several lines keeps every line).
std::string clippedLines(std::string_view text, size_t limit);

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
// The message is clipped: it may quote the client's input (a method's name, a bad token).
Json errorResponse(const Json& id, int code, const std::string& message);
// A notification from the server (notifications/progress).
Json notification(const std::string& method, Json params);

// One line on the wire: compact, UTF-8 (a string that is not UTF-8 becomes U+FFFD rather than
// failing the whole answer), never a raw newline.
std::string serialize(const Json& message);

} // namespace oomlens::mcp
