#pragma once

#include <QList>
#include <QString>
#include <QStringList>

namespace oomlens::test {

// One command a page shows and what it shows the command printing.
struct DocExample
{
    QString file; // as given: README.md, docs/cli.md
    int line = 0; // 1-based line of the command
    QString command; // the text after "$ ", continuation lines joined
    QStringList shownOutput; // the lines under the command, up to the next command or the fence
};

// The examples of a Markdown page: every fenced block whose first line starts with "$ " is a
// terminal session, each "$ " line a command (a line ending in '\' continues on the next) and the
// lines after it what it printed. A command runs `oomlens` (alone or as a step of a pipeline): the
// test runs the built binary, and a page that shows another program's session would be checked
// against nothing. Well-formedness problems (output before the first command, a command without
// oomlens, a fence never closed) are appended to `problems` as "file:line: what".
// The steps of a shell pipeline, split at each '|' outside quotes ("oomlens x | jq '.a | .b'" has
// two), or where '||' joins commands.
QStringList pipelineSteps(const QString& command);

QList<DocExample> docExamples(const QString& file, const QString& markdown, QStringList* problems);

} // namespace oomlens::test
