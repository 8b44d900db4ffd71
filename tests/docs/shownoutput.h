#pragma once

#include <QString>
#include <QStringList>

namespace oomlens::test {

// Whether a command's `actual` output is what a page shows as `shown`, line for line, with the
// two ways a page shortens an answer:
//   a line "..."               stands for any number of lines (none too), so a trailing "..."
//                              ends the comparison and one in the middle skips a stretch;
//   a line ending in "..."     stands for one line that starts with the text before the dots
//                              (a long line cut, or a figure that depends on the machine).
// Blanks at the end of a line and blank lines at the end of either side are not compared: a
// Markdown editor strips the first, a fence cannot show the second.
bool matchesShownOutput(const QStringList& shown, const QStringList& actual);

// The printed bytes as lines, for matchesShownOutput.
QStringList outputLines(const QByteArray& printed);

} // namespace oomlens::test
