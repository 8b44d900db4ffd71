#include "core/job/rankname.h"
#include "core/strings.h"

#include <array>
#include <regex>
#include <string>

namespace oomlens {

namespace {

// A rank has at most this many digits: 64k ranks is beyond today's largest jobs, while a
// timestamp (1757253255) or a date (20261124) is longer.
constexpr size_t maxRankDigits = 5;

// The file name without its snapshot extensions: "rank3.pickle.gz" → "rank3".
std::string stem(std::string name)
{
    static const std::array<std::string_view, 11> extensions { ".gz", ".pickle", ".pkl", ".pck", ".p", ".json", ".html",
        ".pt", ".pth", ".zip", ".bin" };
    for (bool stripped = true; stripped;) {
        stripped = false;
        for (std::string_view extension : extensions) {
            if (name.size() > extension.size() && name.ends_with(extension)) {
                name.resize(name.size() - extension.size());
                stripped = true;
            }
        }
    }
    return name;
}

std::optional<int> number(const std::string& digits)
{
    if (digits.empty() || digits.size() > maxRankDigits)
        return std::nullopt;
    return std::stoi(digits);
}

// "rank3", "rank_3", "rank-03", "rank.3", "[rank3]" anywhere in the text.
std::optional<int> rankWord(const std::string& text)
{
    static const std::regex pattern(R"((?:^|[^a-z])rank[_\-.]?([0-9]+)(?![0-9]))");
    std::smatch match;
    if (std::regex_search(text, match, pattern))
        return number(match[1].str());
    return std::nullopt;
}

} // namespace

std::optional<int> rankFromFileName(std::string_view path)
{
    const std::string lower = lowercase(path);
    const size_t slash = lower.find_last_of("/\\");
    const std::string name = slash == std::string::npos ? lower : lower.substr(slash + 1);
    const std::string base = stem(name);

    if (const auto rank = rankWord(base))
        return rank;
    // "r3", "snap_r3", "mem.r03": an r standing alone before the digits.
    static const std::regex shortForm(R"((?:^|[^a-z0-9])r([0-9]+)$|(?:^|[^a-z0-9])r([0-9]+)[^a-z0-9])");
    std::smatch match;
    if (std::regex_search(base, match, shortForm))
        return number(match[1].matched ? match[1].str() : match[2].str());
    // "mem_3", "snapshot-03", "3": a number ending the name.
    static const std::regex trailing(R"((?:^|[_\-.])([0-9]+)$)");
    if (std::regex_search(base, match, trailing))
        return number(match[1].str());
    // The folder: "logs/rank_3/snapshot.pickle".
    if (slash != std::string::npos) {
        const std::string folder = lower.substr(0, slash);
        const size_t parentSlash = folder.find_last_of("/\\");
        return rankWord(parentSlash == std::string::npos ? folder : folder.substr(parentSlash + 1));
    }
    return std::nullopt;
}

} // namespace oomlens
