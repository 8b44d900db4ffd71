#include "parsers/text/launcherranks.h"

#include <algorithm>
#include <set>

namespace oomlens::text {

namespace {

constexpr int maxRank = 65535;

// Digits right at `pos` as a rank, or -1; at most five digits so a hostile line cannot overflow.
int rankAt(std::string_view line, size_t pos)
{
    int value = 0;
    size_t digits = 0;
    while (pos + digits < line.size() && digits < 5 && line[pos + digits] >= '0' && line[pos + digits] <= '9') {
        value = value * 10 + (line[pos + digits] - '0');
        ++digits;
    }
    return digits == 0 || value > maxRank ? -1 : value;
}

} // namespace

int prefixRank(std::string_view line)
{
    const size_t start = line.find_first_not_of(" \t");
    if (start == std::string_view::npos)
        return -1;
    line.remove_prefix(start);
    for (const std::string_view tag : { std::string_view("[rank"), std::string_view("[default") }) {
        if (line.substr(0, tag.size()) == tag) {
            const int rank = rankAt(line, tag.size());
            const size_t close = line.find("]:");
            return close != std::string_view::npos && close < 16 ? rank : -1;
        }
    }
    if (!line.empty() && line.front() == '(') {
        const size_t close = line.find(')');
        const size_t at = line.find("rank=");
        if (close != std::string_view::npos && close < 80 && at != std::string_view::npos && at < close)
            return rankAt(line, at + 5);
    }
    return -1;
}

std::vector<int> findLauncherRanks(std::string_view input)
{
    std::set<int> ranks;
    size_t begin = 0;
    while (begin < input.size()) {
        size_t end = input.find('\n', begin);
        if (end == std::string_view::npos)
            end = input.size();
        if (const int rank = prefixRank(input.substr(begin, std::min<size_t>(end - begin, 128))); rank >= 0)
            ranks.insert(rank);
        begin = end + 1;
    }
    return { ranks.begin(), ranks.end() };
}

} // namespace oomlens::text
