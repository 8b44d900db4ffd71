#include "app/mcp/arguments.h"

#include "app/mcp/tool.h"

#include <algorithm>
#include <atomic>

namespace oomlens::mcp {

namespace {

std::atomic_bool filesAllowed { true };

} // namespace

void setFileArgumentsAllowed(bool allowed)
{
    filesAllowed = allowed;
}

bool fileArgumentsAllowed()
{
    return filesAllowed;
}

Arguments::Arguments(std::string tool, const Json& arguments, std::vector<std::string> known)
    : m_tool(std::move(tool))
    , m_arguments(arguments.is_null() ? Json::object() : arguments)
{
    if (!m_arguments.is_object())
        fail("the arguments must be an object");
    for (const auto& item : m_arguments.items()) {
        if (std::find(known.begin(), known.end(), item.key()) == known.end()) {
            std::string list;
            for (const std::string& name : known)
                list += (list.empty() ? "" : ", ") + name;
            fail("unknown argument \"" + item.key() + "\" (it takes " + list + ")");
        }
    }
}

void Arguments::fail(const std::string& message) const
{
    throw ToolError(m_tool + ": " + message);
}

bool Arguments::has(const std::string& key) const
{
    return m_arguments.contains(key) && !m_arguments[key].is_null();
}

const Json& Arguments::raw(const std::string& key) const
{
    return m_arguments[key];
}

std::string Arguments::string(const std::string& key) const
{
    if (!has(key))
        fail("\"" + key + "\" is required");
    if (!m_arguments[key].is_string())
        fail("\"" + key + "\" must be a string");
    return m_arguments[key].get<std::string>();
}

std::optional<std::string> Arguments::optionalString(const std::string& key) const
{
    if (!has(key))
        return std::nullopt;
    return string(key);
}

std::vector<std::string> Arguments::strings(const std::string& key) const
{
    if (!has(key))
        return {};
    const Json& value = m_arguments[key];
    if (value.is_string())
        return { value.get<std::string>() }; // one path given without the list around it
    if (!value.is_array())
        fail("\"" + key + "\" must be a list of strings");
    std::vector<std::string> list;
    for (const Json& item : value) {
        if (!item.is_string())
            fail("\"" + key + "\" must be a list of strings");
        list.push_back(item.get<std::string>());
    }
    return list;
}

std::optional<int64_t> Arguments::optionalInteger(const std::string& key, int64_t minimum, int64_t maximum) const
{
    if (!has(key))
        return std::nullopt;
    const Json& value = m_arguments[key];
    if (!value.is_number_integer())
        fail("\"" + key + "\" must be a whole number");
    // A huge unsigned value does not fit int64_t: it is out of range either way.
    if (value.is_number_unsigned() && value.get<uint64_t>() > static_cast<uint64_t>(maximum))
        fail("\"" + key + "\" must be at most " + std::to_string(maximum));
    const int64_t number = value.get<int64_t>();
    if (number < minimum || number > maximum)
        fail("\"" + key + "\" must be between " + std::to_string(minimum) + " and " + std::to_string(maximum));
    return number;
}

std::optional<bool> Arguments::optionalBoolean(const std::string& key) const
{
    if (!has(key))
        return std::nullopt;
    if (!m_arguments[key].is_boolean())
        fail("\"" + key + "\" must be true or false");
    return m_arguments[key].get<bool>();
}

std::string Arguments::path(const std::string& key) const
{
    std::string value = string(key);
    if (value.empty())
        fail("\"" + key + "\" is an empty path");
    if (value == "-")
        fail("\"" + key + "\": '-' (standard input) carries the protocol here; give a file");
    if (!fileArgumentsAllowed())
        fail("\"" + key + "\": this server reads no files");
    return value;
}

std::vector<std::string> Arguments::paths(const std::string& key) const
{
    std::vector<std::string> list = strings(key);
    for (const std::string& value : list) {
        if (value.empty())
            fail("\"" + key + "\" holds an empty path");
        if (value == "-")
            fail("\"" + key + "\": '-' (standard input) carries the protocol here; give a file or \"text\"");
        if (!fileArgumentsAllowed())
            fail("\"" + key + "\": this server reads no files; give \"text\"");
    }
    return list;
}

} // namespace oomlens::mcp
