#pragma once

#include <QByteArray>
#include <QString>
#include <QTemporaryDir>

namespace oomlens::test {

// What a shown command printed: its standard output, then its standard error (a pipe orders the
// two streams differently from a terminal, so a page shows them in this fixed order).
struct ShellRun
{
    bool finished = false; // false: it ran past the time limit and was stopped
    int exitCode = -1;
    QByteArray printed;
};

// A scratch clone where the pages' commands run as a reader runs them from a checkout: every
// top-level entry of the source tree is linked in, so `tests/data/...` and `resources/...`
// resolve, while what a command writes (`-o report.html`) lands in the scratch folder, never in
// the source tree; `oomlens` on PATH is the built binary; `../shared` is the real one when it
// exists. Commands run through /bin/sh without a display, as on an ssh node.
class DocWorkspace
{
public:
    DocWorkspace(const QString& sourceDir, const QString& binary, const QString& sharedDir);

    QString error() const { return m_error; } // empty when the workspace was made
    ShellRun run(const QString& command, int timeoutMs) const;

private:
    QString checkout() const;
    QString binDir() const;
    void link(const QString& target, const QString& linkPath);

    QTemporaryDir m_root;
    QString m_error;
};

// The first program of a pipeline step that is not installed ("jq"), or empty: a page may pipe
// oomlens's JSON into a tool the machine lacks, which is no fault of the page.
QString missingProgram(const QString& command);

} // namespace oomlens::test
