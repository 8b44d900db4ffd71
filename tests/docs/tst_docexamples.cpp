#include "common/clirun.h"
#include "common/testutil.h"
#include "docs/docexamples.h"
#include "docs/docworkspace.h"
#include "docs/shownoutput.h"

#include <QDir>
#include <QStandardPaths>
#include <QTest>

#include <cstdio>
#include <initializer_list>
#include <map>
#include <memory>

// Every command README.md and docs/*.md show, run against the built binary on the project's own
// files, must still print what the page shows (docs/architecture.md, "Examples in the docs").
// A page's terminal block is a fenced block whose first line is a "$ " command that runs oomlens
// (docexamples.h); the lines under a command are its output, shortened only by the "..." lines
// shownoutput.h defines. Commands of one page run in order in one scratch clone, so a page may
// write a file and read it back.
class TestDocExamples : public QObject
{
    Q_OBJECT

    static QString sourceDir() { return QStringLiteral(OOMLENS_SOURCE_DIR); }

    // The pages, relative to the source tree: README.md and every docs/*.md.
    static QStringList pages()
    {
        QStringList pages { QStringLiteral("README.md") };
        const QStringList docs = QDir(sourceDir() + QStringLiteral("/docs"))
                                     .entryList({ QStringLiteral("*.md") }, QDir::Files, QDir::Name);
        for (const QString& page : docs)
            pages.append(QStringLiteral("docs/") + page);
        return pages;
    }

    static QList<oomlens::test::DocExample> examplesOf(const QString& page, QStringList* problems)
    {
        const QString markdown = QString::fromUtf8(oomlens::test::readFile(sourceDir() + QLatin1Char('/') + page));
        return oomlens::test::docExamples(page, markdown, problems);
    }

    // One scratch clone per page, made when its first command runs.
    const oomlens::test::DocWorkspace& workspaceFor(const QString& page)
    {
        std::unique_ptr<oomlens::test::DocWorkspace>& workspace = m_workspaces[page];
        if (!workspace)
            workspace = std::make_unique<oomlens::test::DocWorkspace>(
                sourceDir(), oomlens::test::oomlensBinary(), oomlens::test::sharedDir());
        return *workspace;
    }

    static QString failureReport(const oomlens::test::DocExample& example, const oomlens::test::ShellRun& run)
    {
        // One multi-argument arg(): a '%' in the command or the output is not taken for a marker.
        return QStringLiteral("%1:%2: `%3` no longer prints what the page shows (exit status %4%5).\n"
                              "--- shown\n%6\n--- printed\n%7--- end")
            .arg(example.file, QString::number(example.line), example.command, QString::number(run.exitCode),
                run.finished ? QString() : QStringLiteral(", stopped after the time limit"),
                example.shownOutput.join(QLatin1Char('\n')), QString::fromUtf8(run.printed));
    }

    // Lines written as literals (the project builds with QT_NO_CAST_FROM_ASCII).
    static QStringList lines(std::initializer_list<const char*> literals)
    {
        QStringList result;
        for (const char* literal : literals)
            result.append(QString::fromUtf8(literal));
        return result;
    }

    std::map<QString, std::unique_ptr<oomlens::test::DocWorkspace>> m_workspaces;

private Q_SLOTS:
    // The convention the pages are written in, on made-up output.
    void shortenedOutputMatches()
    {
        using oomlens::test::matchesShownOutput;
        const QStringList printed
            = lines({ "Verdict: fragmentation", "Evidence:", "  - a", "  - b", "Fix: grow segments", "" });
        QVERIFY(matchesShownOutput(printed, printed));
        QVERIFY(matchesShownOutput(lines({ "Verdict: fragmentation", "..." }), printed));
        QVERIFY(
            matchesShownOutput(lines({ "Verdict: fragmentation", "Evidence:", "...", "Fix: grow segments" }), printed));
        QVERIFY(matchesShownOutput(
            lines({ "Verdict: frag...", "Evidence:", "  - a", "  - b", "Fix: grow segments" }), printed));
        QVERIFY(matchesShownOutput(lines({ "...", "Fix: grow segments" }), printed));
        QVERIFY(matchesShownOutput(lines({ "Verdict: fragmentation   ", "..." }), printed)); // blanks at line ends
        QVERIFY(!matchesShownOutput(lines({ "Verdict: fragmentation" }), printed)); // the rest not shown
        QVERIFY(!matchesShownOutput(lines({ "Verdict: fragmentation", "...", "Fix: shrink the batch" }), printed));
        QVERIFY(!matchesShownOutput(lines({ "Verdict: leak...", "..." }), printed));
        QVERIFY(
            !matchesShownOutput(lines({ "...", "Evidence:" }), printed)); // "..." does not stand for the lines after
        QVERIFY(!matchesShownOutput(
            lines({ "Verdict: fragmentation", "...", "  - a", "  - b", "Evidence:", "..." }), printed));
        QVERIFY(matchesShownOutput({}, lines({ "" })));
        QVERIFY(!matchesShownOutput({}, lines({ "Wrote report.html" })));
    }

    // How a page's blocks are read: which are sessions, continuations, and what is refused.
    void pageBlocksAreReadAsSessions()
    {
        const QString page
            = QStringLiteral("```console\n$ oomlens diagnose a.txt \\\n    b.txt\nVerdict: x\n\n"
                             "$ tail -5 log.txt | oomlens diagnose -\nRead - (Log)\n```\n\n"
                             "```sh\noomlens diagnose - < log.txt   # not a session: no prompt\n```\n"
                             "- a list item:\n\n  ```console\n  $ oomlens --version\n  oomlens 0.1.0\n  ```\n");
        QStringList problems;
        const QList<oomlens::test::DocExample> examples
            = oomlens::test::docExamples(QStringLiteral("page.md"), page, &problems);
        QVERIFY2(problems.isEmpty(), qPrintable(problems.join(QLatin1Char('\n'))));
        QCOMPARE(examples.size(), 3);
        QCOMPARE(examples.at(0).command, QStringLiteral("oomlens diagnose a.txt  b.txt"));
        QCOMPARE(examples.at(0).line, 2);
        QCOMPARE(examples.at(0).shownOutput, lines({ "Verdict: x", "" }));
        QCOMPARE(examples.at(1).line, 6);
        QCOMPARE(examples.at(1).command, QStringLiteral("tail -5 log.txt | oomlens diagnose -"));
        QCOMPARE(examples.at(1).shownOutput, lines({ "Read - (Log)" }));
        QCOMPARE(examples.at(2).command, QStringLiteral("oomlens --version"));
        QCOMPARE(examples.at(2).shownOutput, lines({ "oomlens 0.1.0" }));

        oomlens::test::docExamples(QStringLiteral("bad.md"),
            QStringLiteral(
                "```\nVerdict: x\n$ oomlens diagnose a\n```\n```console\n$ python train.py\n```\n```\n$ oomlens"),
            &problems);
        QCOMPARE(problems,
            lines({ "bad.md:8: a fence that is never closed", "bad.md:2: output before the block's first command",
                "bad.md:6: a shown command that does not run oomlens: python train.py" }));
    }

    void pipelinesSplitOutsideQuotes()
    {
        QCOMPARE(oomlens::test::pipelineSteps(QStringLiteral("oomlens diagnose --json x | jq '.a | .b' | head -3")),
            lines({ "oomlens diagnose --json x ", " jq '.a | .b' ", " head -3" }));
        QCOMPARE(oomlens::test::missingProgram(QStringLiteral("oomlens diagnose x | jq '.a | .b'")).isEmpty(),
            !QStandardPaths::findExecutable(QStringLiteral("jq")).isEmpty());
        QCOMPARE(oomlens::test::missingProgram(QStringLiteral("oomlens plan | no-such-program-here")),
            QStringLiteral("no-such-program-here"));
    }

    // Every page reads cleanly, and the README shows its commands with their output.
    void pagesAreWellFormed()
    {
        QStringList problems;
        int readmeExamples = 0;
        for (const QString& page : pages()) {
            const QList<oomlens::test::DocExample> examples = examplesOf(page, &problems);
            if (page == QLatin1String("README.md"))
                readmeExamples = int(examples.size());
        }
        QVERIFY2(problems.isEmpty(), qPrintable(problems.join(QLatin1Char('\n'))));
        QVERIFY2(readmeExamples >= 3, "README.md shows diagnose, its JSON and report with what they print");
    }

    void shownCommandsPrintWhatThePageShows_data()
    {
        QTest::addColumn<int>("index");
        QTest::addColumn<QString>("page");
        QStringList problems;
        for (const QString& page : pages()) {
            const QList<oomlens::test::DocExample> examples = examplesOf(page, &problems);
            for (int i = 0; i < examples.size(); ++i)
                QTest::addRow("%s:%d", qPrintable(page), examples.at(i).line) << i << page;
        }
    }

    void shownCommandsPrintWhatThePageShows()
    {
        OOMLENS_REQUIRE_BINARY();
        QFETCH(int, index);
        QFETCH(QString, page);
        QStringList problems;
        const oomlens::test::DocExample example = examplesOf(page, &problems).at(index);
        if (example.command.contains(QLatin1String("../shared")) && !oomlens::test::hasShared())
            QSKIP("the command reads ../shared (the real corpus), which is not beside this checkout");
        if (const QString program = oomlens::test::missingProgram(example.command); !program.isEmpty())
            QSKIP(qPrintable(QStringLiteral("the command pipes into %1, which is not installed").arg(program)));
        const oomlens::test::DocWorkspace& workspace = workspaceFor(page);
        QVERIFY2(workspace.error().isEmpty(), qPrintable(workspace.error()));
        const oomlens::test::ShellRun run = workspace.run(example.command, 60000);
        if (!oomlens::test::oomlensBinaryHasGui() && run.printed.startsWith("oomlens: this build has no GUI;"))
            QSKIP("the page shows what the window's build answers; this oomlens has no GUI (OOMLENS_BUILD_GUI=OFF)");
        const bool matches = run.finished
            && oomlens::test::matchesShownOutput(example.shownOutput, oomlens::test::outputLines(run.printed));
        if (!matches) {
            // QtTest cuts long messages: the whole of both sides goes to stderr.
            std::fprintf(stderr, "%s\n", qPrintable(failureReport(example, run)));
            QFAIL(qPrintable(QStringLiteral("%1:%2: what it prints differs from the page (both above)")
                                 .arg(page)
                                 .arg(example.line)));
        }
    }
};

QTEST_GUILESS_MAIN(TestDocExamples)
#include "tst_docexamples.moc"
