#include "parsers/text/allocconfparser.h"

#include "core/strings.h"
#include "parsers/text/textlines.h"

#include <string>

namespace oomlens::text {

namespace {

constexpr std::string_view variableNames[]
    = { "PYTORCH_CUDA_ALLOC_CONF", "PYTORCH_HIP_ALLOC_CONF", "PYTORCH_ALLOC_CONF" };

// The quoted or bare value starting at `pos`.
std::string_view valueAt(std::string_view text, size_t pos)
{
    while (pos < text.size() && text[pos] == ' ')
        ++pos;
    if (pos >= text.size())
        return {};
    const char quote = text[pos];
    if (quote == '"' || quote == '\'') {
        const size_t close = text.find(quote, pos + 1);
        return close == std::string_view::npos ? std::string_view {} : text.substr(pos + 1, close - pos - 1);
    }
    size_t end = pos;
    while (end < text.size() && text[end] != ' ' && text[end] != ';' && text[end] != '\t')
        ++end;
    return text.substr(pos, end - pos);
}

std::string withoutSpaces(std::string_view text)
{
    std::string out;
    for (char c : text) {
        if (c != ' ' && c != '\t')
            out.push_back(c);
    }
    return out;
}

bool settingLooksValid(const AllocConfSetting& setting)
{
    return !setting.options.empty();
}

} // namespace

void parseAllocConfOptions(std::string_view raw, AllocConfSetting& setting)
{
    const std::string compact = withoutSpaces(raw);
    setting.raw = std::string(trimmed(raw));
    size_t begin = 0;
    int depth = 0;
    for (size_t i = 0; i <= compact.size(); ++i) {
        const char c = i < compact.size() ? compact[i] : ',';
        if (c == '[')
            ++depth;
        else if (c == ']')
            --depth;
        if (c != ',' || depth > 0)
            continue;
        const std::string_view item = std::string_view(compact).substr(begin, i - begin);
        begin = i + 1;
        const size_t colon = item.find(':');
        if (colon == std::string_view::npos || colon == 0)
            continue;
        setting.options[std::string(item.substr(0, colon))] = std::string(item.substr(colon + 1));
    }
}

std::vector<AllocConfSetting> findAllocConfs(const TextLines& lines)
{
    std::vector<AllocConfSetting> settings;
    for (size_t i = 0; i < lines.size(); ++i) {
        const std::string_view line = lines[i];
        if (!contains(line, "ALLOC_CONF") && !contains(line, "_set_allocator_settings"))
            continue;
        const std::string_view text = trimmed(line);
        AllocConfSetting setting;
        setting.sourceLine = lines.lineNumber(i);
        std::string_view value;
        if (const size_t call = text.find("_set_allocator_settings("); call != std::string_view::npos) {
            setting.source = "set_allocator_settings";
            value = valueAt(text, call + 24);
        } else if (const size_t env = text.find("os.environ"); env != std::string_view::npos) {
            // os.environ["PYTORCH_CUDA_ALLOC_CONF"] = "...", os.environ.setdefault("...", "...")
            setting.source = "os.environ";
            for (std::string_view name : variableNames) {
                const size_t at = text.find(name, env);
                if (at == std::string_view::npos)
                    continue;
                size_t next = text.find_first_of("=,", at + name.size());
                if (next != std::string_view::npos)
                    value = valueAt(text, next + 1);
                break;
            }
        } else {
            // export X=..., set X=..., $env:X="...", or "X=... python train.py"
            for (std::string_view name : variableNames) {
                const size_t at = text.find(std::string(name) + '=');
                if (at == std::string_view::npos)
                    continue;
                const std::string_view before = trimmed(text.substr(0, at));
                if (contains(before, "try setting") || contains(before, "setting"))
                    break;
                bool statementStart = before.empty();
                for (std::string_view lead : { "export", "set", "env", "$env:", "$", ";", "&&", "ENV" })
                    statementStart = statementStart || before.ends_with(lead);
                if (statementStart) {
                    setting.source = before.ends_with("export") ? "export" : "env";
                    value = valueAt(text, at + name.size() + 1);
                }
                break;
            }
        }
        if (value.empty())
            continue;
        parseAllocConfOptions(value, setting);
        if (settingLooksValid(setting))
            settings.push_back(std::move(setting));
    }
    return settings;
}

} // namespace oomlens::text
