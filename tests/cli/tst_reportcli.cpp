#include "common/clirun.h"
#include "common/testutil.h"

#include "core/caseanalysis.h"
#include "core/report/htmlreport.h"
#include "parsers/inputloader.h"

#include <QFile>
#include <QFileInfo>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

// `oomlens report` as a user or CI runs it: exit codes, error lines, the written file, hostile
// file names, and the promise that the CLI writes the very document the GUI export builds.
class TestReportCli : public QObject
{
    Q_OBJECT

    using Run = oomlens::test::CliRun;

    QTemporaryDir m_dir;

    static Run oomlens(const QStringList& arguments, const QByteArray& stdinBytes = {})
    {
        return oomlens::test::runOomlens(QStringList { QStringLiteral("report") } + arguments, stdinBytes);
    }

    static QString example() { return QStringLiteral(OOMLENS_SOURCE_DIR "/resources/examples/oom_case.txt"); }

    QString output(const QString& name) const { return m_dir.filePath(name); }

    static QByteArray read(const QString& path)
    {
        QFile file(path);
        return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
    }

    static void verifyLockedDocument(const QByteArray& html)
    {
        QVERIFY(html.startsWith("<!DOCTYPE html>"));
        QVERIFY(html.contains("content=\"default-src 'none'; style-src 'unsafe-inline'; img-src data:\""));
        QVERIFY(!html.contains("<script"));
        QVERIFY(!html.contains("<img"));
        QVERIFY(html.trimmed().endsWith("</html>"));
    }

private Q_SLOTS:
    void initTestCase()
    {
        OOMLENS_REQUIRE_BINARY();
        QVERIFY(m_dir.isValid());
    }

    void usageErrorsExitTwo_data()
    {
        QTest::addColumn<QStringList>("arguments");
        QTest::addColumn<QByteArray>("complaint");
        QTest::newRow("no output") << QStringList { example() } << QByteArray("-o");
        QTest::newRow("no input") << QStringList { QStringLiteral("-o"), QStringLiteral("r.html") }
                                  << QByteArray("no input");
        QTest::newRow("-o without a name") << QStringList { example(), QStringLiteral("-o") } << QByteArray("-o");
        QTest::newRow("unknown option") << QStringList { QStringLiteral("--bogus"), example(), QStringLiteral("-o"),
            QStringLiteral("r.html") } << QByteArray("--bogus");
        QTest::newRow("empty output name")
            << QStringList { example(), QStringLiteral("--output=") } << QByteArray("no output file");
        QTest::newRow("bad device") << QStringList { QStringLiteral("--device"), QStringLiteral("x"), example(),
            QStringLiteral("-o"), QStringLiteral("r.html") }
                                    << QByteArray("--device");
    }

    void usageErrorsExitTwo()
    {
        QFETCH(QStringList, arguments);
        QFETCH(QByteArray, complaint);
        const Run run = oomlens(arguments);
        QCOMPARE(run.exitCode, 2);
        QVERIFY2(run.err.contains(complaint), run.err.constData());
        QVERIFY(run.err.contains("usage: oomlens report"));
    }

    void helpIsNotAUsageError()
    {
        const Run run = oomlens({ QStringLiteral("--help") });
        QCOMPARE(run.exitCode, 0);
        QVERIFY(run.out.startsWith("Usage: oomlens report "));
        QVERIFY(run.out.contains("-o, --output <FILE>"));
        QVERIFY(run.err.isEmpty());
    }

    // The spellings every Qt tool accepts for an option with a value.
    void outputSpellings_data()
    {
        QTest::addColumn<QStringList>("arguments");
        QTest::newRow("-o FILE") << QStringList { QStringLiteral("-o"), QStringLiteral("FILE") };
        QTest::newRow("-oFILE") << QStringList { QStringLiteral("-oFILE") };
        QTest::newRow("--output FILE") << QStringList { QStringLiteral("--output"), QStringLiteral("FILE") };
        QTest::newRow("--output=FILE") << QStringList { QStringLiteral("--output=FILE") };
    }

    void outputSpellings()
    {
        QFETCH(QStringList, arguments);
        const QString path = output(QStringLiteral("spelled.html"));
        QFile::remove(path);
        arguments.replaceInStrings(QStringLiteral("FILE"), path);
        const Run run = oomlens(QStringList { example() } + arguments);
        QCOMPARE(run.exitCode, 0);
        verifyLockedDocument(read(path));
    }

    void writesTheReport()
    {
        const QString path = output(QStringLiteral("example.html"));
        const Run run = oomlens({ example(), QStringLiteral("-o"), path });
        QCOMPARE(run.exitCode, 0);
        QVERIFY2(run.err.isEmpty(), run.err.constData());
        const QByteArray html = read(path);
        verifyLockedDocument(html);
        QVERIFY(html.contains("<article class=\"card\""));
        QVERIFY(html.contains("The OOM message, explained"));
        // The label the app shows too (core/presentation).
        QVERIFY(html.contains("<td>Requested</td><td class=\"num\">1.50 GiB</td>"));
        // No snapshot among the inputs: the report says how to record one.
        QVERIFY(html.contains("torch.cuda.memory._record_memory_history(max_entries=100000)"));
    }

    void sameDocumentAsTheInProcessBuilder()
    {
        const QString path = output(QStringLiteral("same.html"));
        QCOMPARE(oomlens({ example(), QStringLiteral("-o"), path }).exitCode, 0);
        oomlens::Case input;
        oomlens::addFile(input, example().toStdString());
        const std::string expected = oomlens::report::buildHtmlReport(input, oomlens::analyzeCase(input));
        // Only the footer's timestamp differs.
        QString written = QString::fromUtf8(read(path));
        written.remove(QRegularExpression(QStringLiteral(" on \\d{4}-\\d\\d-\\d\\dT[0-9:]+Z")));
        QCOMPARE(written, QString::fromStdString(expected));
    }

    void stdoutAndStdin()
    {
        const Run run = oomlens({ QStringLiteral("-"), QStringLiteral("-o"), QStringLiteral("-") }, read(example()));
        QCOMPARE(run.exitCode, 0);
        verifyLockedDocument(run.out);
        QVERIFY(run.out.contains("<code>-</code>"));
    }

    void hostileFileNameIsEscaped()
    {
        const QString hostile
            = m_dir.filePath(QStringLiteral("\"><img src=x onerror=alert(1)><script>alert(1)<\\script>.txt"));
        QVERIFY(QFile::copy(example(), hostile));
        const QString path = output(QStringLiteral("hostile.html"));
        const Run run = oomlens({ hostile, QStringLiteral("-o"), path });
        QCOMPARE(run.exitCode, 0);
        const QByteArray html = read(path);
        verifyLockedDocument(html);
        QVERIFY(
            html.contains("&quot;&gt;&lt;img src=x onerror=alert(1)&gt;&lt;script&gt;alert(1)&lt;\\script&gt;.txt"));
    }

    void badInputAmongGoodOnes()
    {
        const QString garbage = m_dir.filePath(QStringLiteral("random.bin"));
        QFile file(garbage);
        QVERIFY(file.open(QIODevice::WriteOnly));
        QByteArray bytes(4096, '\0');
        for (int i = 0; i < bytes.size(); ++i)
            bytes[i] = static_cast<char>((i * 7919 + 13) % 251);
        file.write(bytes);
        file.close();
        const QString path = output(QStringLiteral("mixed.html"));
        const Run run = oomlens({ garbage, example(), QStringLiteral("-o"), path });
        QCOMPARE(run.exitCode, 1);
        QCOMPARE(run.err.count('\n'), 1);
        const QByteArray expectedPrefix = QByteArray("oomlens: ") + garbage.toUtf8() + QByteArray(": ");
        QVERIFY(run.err.startsWith(expectedPrefix));
        const QByteArray html = read(path);
        verifyLockedDocument(html);
        QVERIFY(html.contains("<span class=\"badge error\">not read</span>"));
        QVERIFY(html.contains("<article class=\"card\""));
    }

    void nothingReadableWritesNothing()
    {
        const QString path = output(QStringLiteral("none.html"));
        const Run run = oomlens({ m_dir.filePath(QStringLiteral("missing.pickle")), QStringLiteral("-o"), path });
        QCOMPARE(run.exitCode, 1);
        QVERIFY(run.err.contains("missing.pickle"));
        QVERIFY(!QFileInfo::exists(path));
    }

    void unwritableOutput()
    {
        const Run run
            = oomlens({ example(), QStringLiteral("-o"), m_dir.filePath(QStringLiteral("no/such/dir/r.html")) });
        QCOMPARE(run.exitCode, 1);
        QVERIFY2(run.err.contains("cannot write"), run.err.constData());
    }

    void snapshotReport_data()
    {
        QTest::addColumn<QStringList>("files");
        const QString scenarios = oomlens::test::testDataDir() + QStringLiteral("/scenarios/");
        for (const char* name : { "first_backward", "optimizer_step2", "fragmentation", "leak" }) {
            const QString base = scenarios + QLatin1String(name);
            QTest::newRow(name) << QStringList { base + QStringLiteral(".pickle"), base + QStringLiteral(".oom.txt"),
                base + QStringLiteral(".summary.txt") };
        }
    }

    void snapshotReport()
    {
        QFETCH(QStringList, files);
        const QString path = output(QString::fromUtf8(QTest::currentDataTag()) + QStringLiteral(".html"));
        const Run run = oomlens(files + QStringList { QStringLiteral("-o"), path });
        QCOMPARE(run.exitCode, 0);
        const QByteArray html = read(path);
        verifyLockedDocument(html);
        QVERIFY(html.size() < 5 * 1024 * 1024);
        QCOMPARE(html.count("<svg "), 3); // timeline, categories, allocator map
        QVERIFY(html.contains("class=\"marker oom-marker\""));
        QVERIFY(html.contains("Largest allocations live at the peak"));
        QVERIFY(html.contains("<details><summary>1. "));
        QVERIFY(html.contains("torch.cuda.memory_summary()"));
    }
};

QTEST_GUILESS_MAIN(TestReportCli)
#include "tst_reportcli.moc"
