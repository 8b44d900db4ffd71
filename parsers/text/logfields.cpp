#include "parsers/text/logfields.h"

#include "core/strings.h"
#include "parsers/text/sizeparse.h"

#include <cctype>
#include <charconv>
#include <system_error>

namespace oomlens::text {

namespace {

constexpr size_t maxFieldsPerLine = 64;

bool isAlpha(char c)
{
    return std::isalpha(static_cast<unsigned char>(c)) != 0;
}

bool isWordChar(char c)
{
    return isDigit(c) || isAlpha(c) || c == '_';
}

// Characters of a printed name: "torch.cuda.memory_allocated()", "Max_MA", "(MiB)".
bool isKeyChar(char c)
{
    return isWordChar(c) || c == '.' || c == '(' || c == ')';
}

// Between a name and its value: "seq_len  412", "loss=1.9", "'loss': 1.9", "Step [120", "mem: 12 GB".
bool isSeparator(char c)
{
    return c == ' ' || c == '\t' || c == ':' || c == '=' || c == '#' || c == '\'' || c == '"' || c == '[' || c == '(';
}

// "torch.cuda.memory_allocated()" -> "memory_allocated"; "(MiB)" -> "mib".
std::string cleanedName(std::string_view raw)
{
    std::string name;
    for (char c : raw) {
        if (c != '(' && c != ')')
            name.push_back(c);
    }
    while (!name.empty() && name.back() == '.')
        name.pop_back();
    const size_t dot = name.rfind('.');
    if (dot != std::string::npos)
        name = name.substr(dot + 1);
    return lowercase(name);
}

// A size unit written as part of a name: "mem_gb", "memory (MiB)", "allocated_bytes".
uint64_t unitOfName(std::string_view name)
{
    for (std::string_view unit : { "bytes", "kb", "kib", "mb", "mib", "gb", "gib", "tb", "tib" }) {
        if (name == unit
            || (name.size() > unit.size() && name.substr(name.size() - unit.size()) == unit
                && name[name.size() - unit.size() - 1] == '_')) {
            std::string spelled(unit);
            if (spelled != "bytes") {
                for (char& c : spelled)
                    c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
                if (spelled.size() == 3)
                    spelled[1] = 'i'; // "GIB" -> "GiB"
            }
            return unitMultiplier(spelled);
        }
    }
    return 0;
}

struct Name
{
    std::string key;
    uint64_t unit = 0; // bytes per unit when the name carries one
};

// The name printed before the value that starts at `valueBegin`, with the word before it when the
// two read as one name ("memory allocated", "padded to", "longest sample").
Name nameBefore(std::string_view line, size_t valueBegin)
{
    size_t end = valueBegin;
    size_t skipped = 0;
    while (end > 0 && isSeparator(line[end - 1]) && skipped < 6) {
        --end;
        ++skipped;
    }
    size_t begin = end;
    while (begin > 0 && isKeyChar(line[begin - 1]))
        --begin;
    Name name;
    name.key = cleanedName(line.substr(begin, end - begin));
    // "Memory (MiB): 6120": the word in parentheses is the unit, the one before it the name.
    const auto previousWord = [&](size_t at) -> std::string {
        if (at < 2 || line[at - 1] != ' ' || !isAlpha(line[at - 2]))
            return {};
        size_t start = at - 1;
        while (start > 0 && (isAlpha(line[start - 1]) || line[start - 1] == '_'))
            --start;
        if (start > 0 && isKeyChar(line[start - 1]))
            return {}; // "v2 loss": not a word of its own
        return lowercase(line.substr(start, at - 1 - start));
    };
    if (const uint64_t unit = unitOfName(name.key); unit != 0 && name.key.find('_') == std::string::npos) {
        name.unit = unit;
        name.key = previousWord(begin);
        return name;
    }
    name.unit = unitOfName(name.key);
    const std::string before = previousWord(begin);
    if (!before.empty() && unitOfName(before) == 0 && !name.key.empty())
        name.key = before + '_' + name.key;
    return name;
}

} // namespace

bool keyHasPart(std::string_view key, std::string_view word)
{
    size_t start = 0;
    while (start <= key.size()) {
        const size_t end = std::min(key.find('_', start), key.size());
        if (key.substr(start, end - start) == word)
            return true;
        start = end + 1;
    }
    return false;
}

namespace {

// A number as printed in a log line: its digits (with thousands separators) and fraction.
struct PrintedNumber
{
    size_t begin = 0;
    size_t end = 0; // past the digits and the fraction
    uint64_t integer = 0;
    bool whole = true; // no fraction and no overflow: `integer` is the value
    bool grouped = false; // thousands separators: "2,779,683,840"
};

PrintedNumber readNumber(std::string_view line, size_t at)
{
    PrintedNumber number;
    number.begin = at;
    bool overflow = false;
    while (at < line.size()) {
        if (isDigit(line[at])) {
            const auto digit = static_cast<uint64_t>(line[at] - '0');
            overflow = overflow || number.integer > (UINT64_MAX - digit) / 10;
            number.integer = number.integer * 10 + digit;
            ++at;
            continue;
        }
        // Thousands separators: "2,779,683,840" but not "[8,4096]" or "{'a': 1,'b': 2}".
        const bool group = line[at] == ',' && at + 3 < line.size() && isDigit(line[at + 1]) && isDigit(line[at + 2])
            && isDigit(line[at + 3]) && (at + 4 >= line.size() || !isDigit(line[at + 4]));
        if (!group)
            break;
        number.grouped = true;
        ++at;
    }
    number.whole = !overflow;
    if (at + 1 < line.size() && line[at] == '.' && isDigit(line[at + 1])) {
        number.whole = false;
        ++at;
        while (at < line.size() && isDigit(line[at]))
            ++at;
    }
    number.end = at;
    return number;
}

// Where a number that is not a field ends, when it is one: 4.9e-05 (a learning rate, not a size
// or a count) or a percentage. npos for a field's value.
size_t notAFieldEnd(std::string_view line, size_t at)
{
    if (at + 1 < line.size() && (line[at] == 'e' || line[at] == 'E')
        && (isDigit(line[at + 1]) || line[at + 1] == '-' || line[at + 1] == '+')) {
        ++at;
        while (at < line.size() && (isDigit(line[at]) || line[at] == '-' || line[at] == '+'))
            ++at;
        return at;
    }
    if (at < line.size() && line[at] == '%')
        return at + 1;
    return std::string_view::npos;
}

// The bytes a number stands for, with a size unit after it ("12 GiB") or in its name ("mem_gb=6.02");
// returns where the field ends, past a unit after the number.
size_t readBytes(std::string_view line, const PrintedNumber& number, const Name& name, LogField& field)
{
    size_t end = number.end;
    if (!number.grouped) {
        if (auto size = parseSizeAt(line, number.begin); size && size->bytes && size->end > number.end) {
            field.bytes = size->bytes;
            end = size->end;
        }
    }
    if (!field.bytes && name.unit != 0) {
        // "mem_gb=6.02": the number with the name's unit (from_chars: never the user's locale).
        double value = 0;
        const char* first = line.data() + number.begin;
        if (const auto [ptr, ec] = std::from_chars(first, line.data() + number.end, value); ec == std::errc()) {
            const double scaled = value * static_cast<double>(name.unit);
            if (scaled >= 0 && scaled < 9.0e18)
                field.bytes = static_cast<uint64_t>(scaled + 0.5);
        }
    }
    return end;
}

// The word printed after the value ("12 tokens", "3 it/s"), lowercase, with its '/' when one follows.
std::string wordAfter(std::string_view line, size_t end)
{
    size_t word = end;
    if (word < line.size() && line[word] == ' ')
        ++word;
    size_t wordEnd = word;
    while (wordEnd < line.size() && isAlpha(line[wordEnd]))
        ++wordEnd;
    std::string after = lowercase(line.substr(word, wordEnd - word));
    if (!after.empty() && wordEnd < line.size() && line[wordEnd] == '/')
        after += '/';
    return after;
}

} // namespace

std::vector<LogField> logFields(std::string_view line)
{
    std::vector<LogField> fields;
    size_t at = 0;
    while (at < line.size() && fields.size() < maxFieldsPerLine) {
        if (!isDigit(line[at])) {
            ++at;
            continue;
        }
        const char before = at == 0 ? ' ' : line[at - 1];
        if (isWordChar(before) || before == '.' || before == '/' || before == '-') {
            // Inside a word ("fp16"), a fraction's tail, a denominator ("120/1000") or a negative
            // exponent: not a value of its own.
            while (at < line.size() && (isWordChar(line[at]) || line[at] == '.'))
                ++at;
            continue;
        }
        const PrintedNumber number = readNumber(line, at);
        if (const size_t skipped = notAFieldEnd(line, number.end); skipped != std::string_view::npos) {
            at = skipped;
            continue;
        }
        LogField field;
        field.begin = number.begin;
        if (number.whole)
            field.integer = number.integer;
        const Name name = nameBefore(line, number.begin);
        field.key = name.key;
        const size_t end = readBytes(line, number, name, field);
        field.after = wordAfter(line, end);
        at = end;
        fields.push_back(std::move(field));
    }
    return fields;
}

} // namespace oomlens::text
