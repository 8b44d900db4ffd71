#include "parsers/text/parametercount.h"

#include "core/strings.h"
#include "parsers/text/textlines.h"

#include <cctype>
#include <string>
#include <string_view>

namespace oomlens::text {

namespace {

constexpr size_t longestLine = 1000;
constexpr uint64_t mostParameters = uint64_t(1) << 50; // far beyond any model: a misread number

bool isAlpha(char c)
{
    return c >= 'a' && c <= 'z';
}

// "2,779,683,840", "124 m", "6.7b", "123.69m", "1.2 billion" in lower case, starting at `pos`.
std::optional<uint64_t> countAt(std::string_view text, size_t pos)
{
    if (pos >= text.size() || !isDigit(text[pos]))
        return std::nullopt;
    uint64_t integer = 0;
    size_t digits = 0;
    while (pos < text.size() && digits < 16) {
        if (isDigit(text[pos])) {
            integer = integer * 10 + static_cast<uint64_t>(text[pos] - '0');
            ++digits;
        } else if (!((text[pos] == ',' || text[pos] == '_') && pos + 1 < text.size() && isDigit(text[pos + 1]))) {
            break;
        }
        ++pos;
    }
    double fraction = 0.0;
    if (pos + 1 < text.size() && text[pos] == '.' && isDigit(text[pos + 1])) {
        double scale = 0.1;
        for (++pos; pos < text.size() && isDigit(text[pos]); ++pos, scale /= 10)
            fraction += scale * (text[pos] - '0');
    }
    size_t word = pos;
    if (word < text.size() && text[word] == ' ')
        ++word;
    size_t wordEnd = word;
    while (wordEnd < text.size() && isAlpha(text[wordEnd]))
        ++wordEnd;
    const std::string_view suffix = text.substr(word, wordEnd - word);
    double multiplier = 1.0;
    if (suffix == "k" || suffix == "thousand")
        multiplier = 1e3;
    else if (suffix == "m" || suffix == "million")
        multiplier = 1e6;
    else if (suffix == "b" || suffix == "billion")
        multiplier = 1e9;
    else if (suffix == "t" || suffix == "trillion")
        multiplier = 1e12;
    const double value = (static_cast<double>(integer) + fraction) * multiplier;
    if (value < 1.0 || value >= static_cast<double>(mostParameters))
        return std::nullopt;
    return static_cast<uint64_t>(value + 0.5);
}

// The count printed just before `phraseStart`: "124 M     Trainable params", "has 6.7B trainable".
std::optional<uint64_t> countBefore(std::string_view text, size_t phraseStart)
{
    size_t pos = phraseStart;
    while (pos > 0 && text[pos - 1] == ' ')
        --pos;
    size_t suffixStart = pos;
    while (suffixStart > 0 && isAlpha(text[suffixStart - 1]))
        --suffixStart;
    if (pos - suffixStart <= 8)
        pos = suffixStart; // a suffix ("m", "billion"); a longer word is not one
    while (pos > 0 && text[pos - 1] == ' ')
        --pos;
    size_t start = pos;
    while (start > 0 && (isDigit(text[start - 1]) || text[start - 1] == ',' || text[start - 1] == '.'))
        --start;
    if (start == pos || (start > 0 && (isAlpha(text[start - 1]) || text[start - 1] == '_')))
        return std::nullopt;
    return countAt(text, start);
}

enum class CountKind { None, Trainable, Total };

// What the words before "param" say the count is, and where that phrase starts.
CountKind kindBefore(std::string_view before, size_t* phraseStart)
{
    for (std::string_view negation :
        { "non-trainable ", "non_trainable_", "non trainable ", "untrainable ", "frozen " }) {
        if (before.ends_with(negation))
            return CountKind::None;
    }
    for (std::string_view words : { "trainable ", "trainable_" }) {
        if (before.ends_with(words)) {
            *phraseStart = before.size() - words.size();
            return CountKind::Trainable;
        }
    }
    for (std::string_view words : { "all ", "total ", "total_", "number of ", "num ", "num_", "n_", "# ", "#" }) {
        if (before.ends_with(words)) {
            *phraseStart = before.size() - words.size();
            return CountKind::Total;
        }
    }
    return CountKind::None;
}

ParameterCount countsInLine(std::string_view text)
{
    ParameterCount found;
    for (size_t at = text.find("param"); at != std::string_view::npos; at = text.find("param", at + 1)) {
        size_t phraseStart = at;
        const CountKind kind = kindBefore(text.substr(0, at), &phraseStart);
        if (kind == CountKind::None)
            continue;
        size_t pos = at;
        while (pos < text.size() && isAlpha(text[pos]))
            ++pos; // "params", "parameters"
        while (pos < text.size() && (text[pos] == ' ' || text[pos] == ':' || text[pos] == '='))
            ++pos;
        std::optional<uint64_t> count = countAt(text, pos);
        if (!count)
            count = countBefore(text, phraseStart);
        if (!count)
            continue;
        std::optional<uint64_t>& slot = kind == CountKind::Trainable ? found.trainable : found.total;
        if (!slot)
            slot = count;
    }
    return found;
}

} // namespace

std::vector<ParameterCount> findParameterCounts(const TextLines& lines)
{
    std::vector<ParameterCount> counts;
    for (size_t i = 0; i < lines.size(); ++i) {
        const std::string_view line = lines[i];
        if (line.size() > longestLine || (!contains(line, "aram") && !contains(line, "ARAM")))
            continue;
        std::string text(line);
        for (char& c : text)
            c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        // "Total estimated model params size (MB)": a size in bytes, not a count.
        if (contains(text, "size") || contains(text, "file \""))
            continue;
        ParameterCount count = countsInLine(text);
        if (!count.trainable && !count.total)
            continue;
        count.lineIndex = i;
        counts.push_back(count);
    }
    return counts;
}

} // namespace oomlens::text
