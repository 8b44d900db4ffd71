#include "app/mcp/jsonrpc.h"

namespace oomlens::mcp {

ClassifiedMessage classifyMessage(const Json& message)
{
    ClassifiedMessage classified;
    // The id to answer with when the message is invalid: its own when it has a usable one.
    Json replyId = nullptr;
    if (message.is_object() && message.contains("id")
        && (message["id"].is_string() || message["id"].is_number_integer()))
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
    return Json { { "jsonrpc", "2.0" }, { "id", id }, { "error", { { "code", code }, { "message", message } } } };
}

std::string serialize(const Json& message)
{
    return message.dump(-1, ' ', false, Json::error_handler_t::replace);
}

} // namespace oomlens::mcp
