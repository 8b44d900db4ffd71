#pragma once

// The fuzz target of `oomlens mcp` (fuzz/fuzz_mcp.cpp, and tests/cli/tst_mcpfuzzregression.cpp in
// any build): the bytes are what a client writes, one JSON-RPC message a line, answered in order by
// one server, as handleLine answers them. Beyond "no crash, no sanitizer report, no escaping
// exception": every answer is one line of JSON with the protocol's shape, and every error's text
// is bounded whatever the input quoted. The tools read no files here (arguments.h): a fuzzer must
// not decode /dev/zero or write a report over a file; pasted "text" still reaches the parsers.
// Kept apart from fuzztargets.h, whose targets link no Qt and no CLI.

#include "app/mcp/arguments.h"
#include "app/mcp/jsonrpc.h"
#include "app/mcp/mcpserver.h"

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>

namespace oomlens::fuzz {

// What one message's answer must be; an empty string when it is.
inline std::string checkMcpAnswer(const mcp::Json& answer)
{
    if (!answer.is_object() || answer.value("jsonrpc", std::string()) != "2.0")
        return "an answer without \"jsonrpc\": \"2.0\"";
    if (answer.contains("error") == answer.contains("result"))
        return "an answer with both or neither of \"result\" and \"error\"";
    // An error quotes at most maxQuotedBytes of the input, and "…".
    if (answer.contains("error") && answer["error"].value("message", std::string()).size() > mcp::maxQuotedBytes + 3)
        return "an error message longer than the bound: "
            + answer["error"].value("message", std::string()).substr(0, 200);
    const mcp::Json* result = answer.contains("result") ? &answer["result"] : nullptr;
    if (result && result->value("isError", false)) {
        const std::string text = (*result)["content"][0].value("text", std::string());
        size_t lineStart = 0;
        for (size_t at = 0; at <= text.size(); ++at) {
            if (at == text.size() || text[at] == '\n') {
                if (at - lineStart > 1000)
                    return "a tool error line longer than the bound";
                lineStart = at + 1;
            }
        }
    }
    return {};
}

inline std::string mcpTarget(const uint8_t* data, size_t size)
{
    mcp::setFileArgumentsAllowed(false);
    mcp::McpServer server(1);
    size_t notifications = 0;
    server.setSender([&notifications](const std::string&) { ++notifications; });
    std::string_view rest(reinterpret_cast<const char*>(data), size);
    while (!rest.empty()) {
        const size_t newline = rest.find('\n');
        const std::string line(rest.substr(0, newline));
        rest = newline == std::string_view::npos ? std::string_view() : rest.substr(newline + 1);
        const std::optional<std::string> answer = server.handleLine(line);
        if (!answer)
            continue;
        if (answer->find('\n') != std::string::npos)
            return "an answer spans several lines";
        const mcp::Json parsed = mcp::Json::parse(*answer, nullptr, false);
        if (parsed.is_discarded())
            return "an answer is not JSON: " + answer->substr(0, 200);
        if (parsed.is_array()) {
            for (const mcp::Json& element : parsed) {
                if (std::string problem = checkMcpAnswer(element); !problem.empty())
                    return problem;
            }
        } else if (std::string problem = checkMcpAnswer(parsed); !problem.empty()) {
            return problem;
        }
    }
    return {};
}

} // namespace oomlens::fuzz
