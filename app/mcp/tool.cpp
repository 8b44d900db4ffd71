#include "app/mcp/tool.h"

namespace oomlens::mcp {

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
    return Json::parse(text);
}

} // namespace oomlens::mcp
