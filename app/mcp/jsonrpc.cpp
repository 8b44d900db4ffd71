#include "app/mcp/jsonrpc.h"

namespace oomlens::mcp {

bool nestsDeeperThan(std::string_view text, size_t limit)
{
    size_t depth = 0;
    bool inString = false;
    bool escaped = false;
    for (const char c : text) {
        if (inString) {
            if (escaped)
                escaped = false;
            else if (c == '\\')
                escaped = true;
            else if (c == '"')
                inString = false;
            continue;
        }
        if (c == '"') {
            inString = true;
        } else if (c == '[' || c == '{') {
            if (++depth > limit)
                return true;
        } else if ((c == ']' || c == '}') && depth > 0) {
            --depth;
        }
    }
    return false;
}

std::string clipped(std::string_view text, size_t limit)
{
    if (text.size() <= limit)
        return std::string(text);
    size_t cut = limit;
    // Back to the start of a UTF-8 character: continuation bytes are 10xxxxxx.
    while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80)
        --cut;
    return std::string(text.substr(0, cut)) + "…";
}

std::string clippedLines(std::string_view text, size_t limit)
{
    std::string out;
    while (true) {
        const size_t newline = text.find('\n');
        out += clipped(text.substr(0, newline), limit);
        if (newline == std::string_view::npos)
            return out;
        out += '\n';
        text.remove_prefix(newline + 1);
    }
}

ClassifiedMessage classifyMessage(const Json& message)
{
    ClassifiedMessage classified;
    // The id to answer with when the message is invalid: its own when it has a usable one.
    Json replyId = nullptr;
    const auto usableId = [](const Json& id) {
        return id.is_number_integer() || (id.is_string() && id.get_ref<const std::string&>().size() <= maxIdBytes);
    };
    if (message.is_object() && message.contains("id") && usableId(message["id"]))
        replyId = message["id"];
    const auto invalid = [&](const std::string& why) {
        classified.error = errorResponse(replyId, rpc::invalidRequest, "Invalid Request: " + why);
        return classified;
    };
    if (!message.is_object())
        return invalid("a message is a JSON object");
    if (!message.contains("jsonrpc") || message["jsonrpc"] != "2.0")
        return invalid("\"jsonrpc\" must be \"2.0\"");
    if (!message.contains("method")) {
        if (message.contains("result") || message.contains("error"))
            return classified; // a response: this server sends no requests, so nothing waits for it
        return invalid("no \"method\"");
    }
    if (!message["method"].is_string())
        return invalid("\"method\" must be a string");
    RpcCall call;
    call.method = message["method"].get<std::string>();
    if (message.contains("params")) {
        call.params = message["params"];
        if (!call.params.is_object() && !call.params.is_array())
            return invalid("\"params\" must be an object");
    }
    if (message.contains("id")) {
        const Json& id = message["id"];
        // MCP: "the ID MUST NOT be null"; JSON-RPC: a string or a whole number.
        if (!id.is_string() && !id.is_number_integer())
            return invalid("\"id\" must be a string or an integer");
        if (!usableId(id))
            return invalid("\"id\" is longer than " + std::to_string(maxIdBytes) + " bytes");
        call.id = id;
    }
    classified.call = std::move(call);
    return classified;
}

Json resultResponse(const Json& id, Json result)
{
    return Json { { "jsonrpc", "2.0" }, { "id", id }, { "result", std::move(result) } };
}

Json errorResponse(const Json& id, int code, const std::string& message)
{
    return Json { { "jsonrpc", "2.0" }, { "id", id },
        { "error", { { "code", code }, { "message", clipped(message) } } } };
}

Json notification(const std::string& method, Json params)
{
    return Json { { "jsonrpc", "2.0" }, { "method", method }, { "params", std::move(params) } };
}

std::string serialize(const Json& message)
{
    return message.dump(-1, ' ', false, Json::error_handler_t::replace);
}

} // namespace oomlens::mcp
