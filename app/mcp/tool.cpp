#include "app/mcp/tool.h"

namespace oomlens::mcp {

namespace {

// Keywords that describe a field whatever its type; the others constrain one type's values.
bool describesAnyType(const std::string& keyword)
{
    return keyword == "description" || keyword == "title";
}

// `"type": ["integer", "null"]` as `"anyOf": [{"type": "integer"}, {"type": "null"}]`: the same
// values, one type per schema. Clients that take one type per field (several model APIs' tool
// schemas, and the validators built for them) reject a list of types. The keywords of the
// non-null type (properties, items, minimum) go with it.
void oneTypePerSchema(Json& node)
{
    if (node.is_array()) {
        for (Json& item : node)
            oneTypePerSchema(item);
        return;
    }
    if (!node.is_object())
        return;
    for (auto& [key, value] : node.items()) {
        if (key != "type" && key != "enum" && key != "required")
            oneTypePerSchema(value);
    }
    if (!node.contains("type") || !node["type"].is_array())
        return;
    Json kept = Json::object();
    Json typed = Json::object();
    for (auto& [key, value] : node.items()) {
        if (describesAnyType(key))
            kept[key] = value;
        else if (key != "type")
            typed[key] = value;
    }
    Json branches = Json::array();
    for (const Json& type : node["type"]) {
        Json branch { { "type", type } };
        if (type != "null")
            branch.update(typed);
        branches.push_back(std::move(branch));
    }
    kept["anyOf"] = std::move(branches);
    node = std::move(kept);
}

} // namespace

const std::vector<Tool>& tools()
{
    static const std::vector<Tool> all = [] {
        std::vector<Tool> joined = caseTools();
        for (Tool& tool : momentTools())
            joined.push_back(std::move(tool));
        return joined;
    }();
    return all;
}

const Tool* findTool(const std::string& name)
{
    for (const Tool& tool : tools()) {
        if (tool.name == name)
            return &tool;
    }
    return nullptr;
}

Json schema(const char* text)
{
    Json parsed = Json::parse(text);
    oneTypePerSchema(parsed);
    return parsed;
}

} // namespace oomlens::mcp
