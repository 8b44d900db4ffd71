#include "docs/shownoutput.h"

#include <vector>

namespace oomlens::test {

namespace {

const QString ellipsis = QStringLiteral("...");

QStringList withoutTrailingBlanks(QStringList lines)
{
    for (QString& line : lines) {
        while (!line.isEmpty() && line.back().isSpace())
            line.chop(1);
    }
    while (!lines.isEmpty() && lines.last().isEmpty())
        lines.removeLast();
    return lines;
}

bool lineMatches(const QString& shown, const QString& actual)
{
    if (shown.size() > ellipsis.size() && shown.endsWith(ellipsis))
        return actual.startsWith(shown.chopped(ellipsis.size()));
    return shown == actual;
}

} // namespace

bool matchesShownOutput(const QStringList& shownLines, const QStringList& actualLines)
{
    const QStringList shown = withoutTrailingBlanks(shownLines);
    const QStringList actual = withoutTrailingBlanks(actualLines);
    // fits[i][j]: shown lines from i on match actual lines from j on (a glob match over lines).
    const auto rows = size_t(shown.size()) + 1, columns = size_t(actual.size()) + 1;
    std::vector<std::vector<char>> fits(rows, std::vector<char>(columns, 0));
    fits[rows - 1][columns - 1] = 1;
    for (auto i = qsizetype(shown.size()); i-- > 0;) {
        for (auto j = qsizetype(actual.size()) + 1; j-- > 0;) {
            const bool more = j < actual.size();
            if (shown.at(i) == ellipsis)
                fits[size_t(i)][size_t(j)] = fits[size_t(i) + 1][size_t(j)] || (more && fits[size_t(i)][size_t(j) + 1]);
            else
                fits[size_t(i)][size_t(j)]
                    = more && lineMatches(shown.at(i), actual.at(j)) && fits[size_t(i) + 1][size_t(j) + 1];
        }
    }
    return fits[0][0] != 0;
}

QStringList outputLines(const QByteArray& printed)
{
    return QString::fromUtf8(printed).split(QLatin1Char('\n'));
}

} // namespace oomlens::test
