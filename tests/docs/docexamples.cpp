#include "docs/docexamples.h"

namespace oomlens::test {

namespace {

const QString commandPrompt = QStringLiteral("$ ");

bool isFence(const QString& line)
{
    return line.trimmed().startsWith(QLatin1String("```"));
}

// A fence inside a list item is indented; its block's lines carry the same indentation.
QString unindented(const QString& line, qsizetype indent)
{
    qsizetype drop = 0;
    while (drop < indent && drop < line.size() && line.at(drop) == QLatin1Char(' '))
        ++drop;
    return line.mid(drop);
}

struct Block
{
    int firstLine = 0; // 1-based line of the block's first line inside the fence
    QStringList lines;
};

QList<Block> fencedBlocks(const QString& file, const QStringList& lines, QStringList* problems)
{
    QList<Block> blocks;
    for (qsizetype i = 0; i < lines.size(); ++i) {
        if (!isFence(lines.at(i)))
            continue;
        const qsizetype indent = lines.at(i).indexOf(QLatin1String("```"));
        Block block { int(i) + 2, {} };
        qsizetype end = i + 1;
        while (end < lines.size() && !isFence(lines.at(end)))
            block.lines.append(unindented(lines.at(end++), indent));
        if (end == lines.size())
            problems->append(QStringLiteral("%1:%2: a fence that is never closed").arg(file).arg(i + 1));
        blocks.append(block);
        i = end;
    }
    return blocks;
}

// Whether a step of the command's pipeline is oomlens (`tail -50 log | oomlens diagnose -`).
bool runsOomlens(const QString& command)
{
    for (const QString& step : pipelineSteps(command)) {
        const QString words = step.trimmed();
        if (words == QLatin1String("oomlens") || words.startsWith(QLatin1String("oomlens ")))
            return true;
    }
    return false;
}

// The commands of one terminal block and the lines each printed, in order.
void readSession(const QString& file, const Block& block, QList<DocExample>* examples, QStringList* problems)
{
    for (qsizetype i = 0; i < block.lines.size(); ++i) {
        const QString& line = block.lines.at(i);
        if (!line.startsWith(commandPrompt)) {
            examples->last().shownOutput.append(line);
            continue;
        }
        DocExample example { file, block.firstLine + int(i), line.mid(commandPrompt.size()).trimmed(), {} };
        while (example.command.endsWith(QLatin1Char('\\')) && i + 1 < block.lines.size()) {
            example.command.chop(1);
            example.command += QLatin1Char(' ') + block.lines.at(++i).trimmed();
        }
        if (!runsOomlens(example.command))
            problems->append(QStringLiteral("%1:%2: a shown command that does not run oomlens: %3")
                                 .arg(file)
                                 .arg(example.line)
                                 .arg(example.command));
        examples->append(example);
    }
}

bool isSession(const Block& block)
{
    for (const QString& line : block.lines) {
        if (line.startsWith(commandPrompt))
            return true;
    }
    return false;
}

} // namespace

QStringList pipelineSteps(const QString& command)
{
    QStringList steps { QString() };
    QChar quote;
    for (const QChar character : command) {
        if (!quote.isNull() && character == quote)
            quote = QChar();
        else if (quote.isNull() && (character == QLatin1Char('\'') || character == QLatin1Char('"')))
            quote = character;
        else if (quote.isNull() && character == QLatin1Char('|')) {
            steps.append(QString());
            continue;
        }
        steps.last() += character;
    }
    return steps;
}

QList<DocExample> docExamples(const QString& file, const QString& markdown, QStringList* problems)
{
    QList<DocExample> examples;
    for (const Block& block : fencedBlocks(file, markdown.split(QLatin1Char('\n')), problems)) {
        if (!isSession(block))
            continue;
        if (!block.lines.first().startsWith(commandPrompt)) {
            problems->append(
                QStringLiteral("%1:%2: output before the block's first command").arg(file).arg(block.firstLine));
            continue;
        }
        readSession(file, block, &examples, problems);
    }
    return examples;
}

} // namespace oomlens::test
