#include "common/clirun.h"
#include "common/testutil.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

using namespace oomlens;

// Nothing given is dropped in silence: every input is read or listed with the reason it was not
// (one line on stderr, an `error` in the JSON's `inputs`), the others are still analyzed, and the
// exit status is 1 when any could not be read. Options that name files (--rules) and devices
// (--device) fail the same way instead of being skipped. Run without a display.
class TestInputsCli : public QObject
{
    Q_OBJECT

    using Run = test::CliRun;

    static Run oomlens(const QStringList& arguments) { return test::runOomlensWith(arguments, {}); }

    static QString snapshot() { return test::testDataDir() + QStringLiteral("/scenarios/first_backward.pickle"); }
    static QString message() { return QStringLiteral(OOMLENS_SOURCE_DIR "/resources/examples/oom_case.txt"); }

    static void write(const QString& path, const QByteArray& bytes)
    {
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        QCOMPARE(file.write(bytes), bytes.size());
    }

    static QJsonArray inputs(const Run& run)
    {
        return test::parseJsonObject(run.out)[QStringLiteral("inputs")].toArray();
    }

    static QJsonObject inputNamed(const QJsonArray& inputs, const QString& path)
    {
        for (const QJsonValue& input : inputs) {
            if (input[QStringLiteral("path")].toString() == path)
                return input.toObject();
        }
        qFatal("no input %s", qPrintable(path));
        return {};
    }

    // The stderr lines, each of which must name what it is about.
    static QList<QByteArray> errorLines(const Run& run)
    {
        QList<QByteArray> lines = run.err.split('\n');
        if (!lines.isEmpty() && lines.back().isEmpty())
            lines.removeLast();
        return lines;
    }

private Q_SLOTS:
    void initTestCase() { OOMLENS_REQUIRE_BINARY(); }

    static QByteArray png()
    {
        // A 1x1 PNG, as a screenshot of the failure would be.
        return QByteArray::fromHex("89504e470d0a1a0a0000000d49484452000000010000000108000000003a7e9b550000000a49444154"
                                   "789c63600000000200013c3f8a5c0000000049454e44ae426082");
    }

    // A folder stands for every file in it. One that is no input oomlens reads (a picture, notes)
    // is listed as not read without failing the run; named on its own, it is an error.
    void aFolderIsEverythingInIt()
    {
        QTemporaryDir dir;
        const QString folder = dir.path();
        QVERIFY(QFile::copy(snapshot(), folder + QStringLiteral("/run.pickle")));
        QVERIFY(QFile::copy(message(), folder + QStringLiteral("/traceback.txt")));
        const QString picture = folder + QStringLiteral("/screenshot.png");
        write(picture, png());
        const Run run = oomlens({ QStringLiteral("diagnose"), QStringLiteral("--json"), folder });
        QCOMPARE(run.exitCode, 0);
        const QList<QByteArray> lines = errorLines(run);
        QCOMPARE(lines.size(), 1);
        QVERIFY2(
            lines.front().startsWith(QByteArray("oomlens: " + picture.toUtf8() + ": not read: not a memory snapshot")),
            run.err.constData());
        const QJsonArray read = inputs(run);
        QCOMPARE(read.size(), 3);
        QCOMPARE(inputNamed(read, folder + QStringLiteral("/run.pickle"))[QStringLiteral("kind")].toString(),
            QStringLiteral("snapshot"));
        QVERIFY(inputNamed(read, folder + QStringLiteral("/run.pickle"))[QStringLiteral("error")].isNull());
        QVERIFY(inputNamed(read, folder + QStringLiteral("/traceback.txt"))[QStringLiteral("error")].isNull());
        QVERIFY(inputNamed(read, picture)[QStringLiteral("error")].isString());
        // The traceback was read and used beside the snapshot.
        QVERIFY(!test::parseJsonObject(run.out)[QStringLiteral("oom_messages")].toArray().isEmpty());

        const Run named = oomlens({ QStringLiteral("diagnose"), QStringLiteral("--json"), picture, message() });
        QCOMPARE(named.exitCode, 1);
        QVERIFY2(named.err.startsWith(QByteArray("oomlens: " + picture.toUtf8() + ": not a memory snapshot")),
            named.err.constData());

        // A snapshot in a folder that cannot be decoded is an input that failed.
        QTemporaryDir other;
        QFile whole(snapshot());
        QVERIFY(whole.open(QIODevice::ReadOnly));
        write(other.filePath(QStringLiteral("cut.pickle")), whole.read(5000));
        write(other.filePath(QStringLiteral("screenshot.png")), png());
        QVERIFY(QFile::copy(message(), other.filePath(QStringLiteral("traceback.txt"))));
        const Run broken = oomlens({ QStringLiteral("diagnose"), QStringLiteral("--json"), other.path() });
        QCOMPARE(broken.exitCode, 1);
        QCOMPARE(errorLines(broken).size(), 2);
        QVERIFY2(broken.err.contains("/cut.pickle: truncated pickle"), broken.err.constData());
    }

    void aBrokenSnapshotIsAnErrorAndTheRestIsRead()
    {
        QTemporaryDir dir;
        const QString broken = dir.filePath(QStringLiteral("cut.pickle"));
        QFile whole(snapshot());
        QVERIFY(whole.open(QIODevice::ReadOnly));
        write(broken, whole.read(5000));
        const Run run = oomlens({ QStringLiteral("diagnose"), QStringLiteral("--json"), broken, message() });
        QCOMPARE(run.exitCode, 1);
        QCOMPARE(errorLines(run).size(), 1);
        QVERIFY2(
            run.err.startsWith(QByteArray("oomlens: " + broken.toUtf8() + ": truncated pickle")), run.err.constData());
        QVERIFY(
            inputNamed(inputs(run), broken)[QStringLiteral("error")].toString().contains(QStringLiteral("truncated")));
        QVERIFY(!test::parseJsonObject(run.out)[QStringLiteral("oom_messages")].toArray().isEmpty());
    }

    // Rules that cannot be used stop the command with one line naming the file and why: an
    // analysis silently without them would put memory in other categories than asked.
    void rulesThatCannotBeUsedAreAnError_data()
    {
        QTest::addColumn<QByteArray>("rules");
        QTest::addColumn<QByteArray>("reason");
        QTest::newRow("not JSON") << QByteArray("{\"parameters\": [") << QByteArray("not valid JSON");
        QTest::newRow("unknown category")
            << QByteArray("{\"weights\": \"model\\\\.\"}") << QByteArray("unknown category 'weights'");
        QTest::newRow("YAML, unknown category")
            << QByteArray("parameters: [a]\nbogus: b\n") << QByteArray("unknown category 'bogus'");
        QTest::newRow("invalid regex") << QByteArray("activations: '('\n") << QByteArray("invalid regular expression");
        QTest::newRow("empty list item") << QByteArray("- x\n") << QByteArray("without a category");
    }

    void rulesThatCannotBeUsedAreAnError()
    {
        QFETCH(QByteArray, rules);
        QFETCH(QByteArray, reason);
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("rules.txt"));
        write(path, rules);
        for (const char* command : { "diagnose", "report" }) {
            QStringList arguments { QLatin1String(command), QStringLiteral("--rules"), path, snapshot() };
            const QString html = dir.filePath(QStringLiteral("report.html"));
            if (command == std::string_view("report"))
                arguments << QStringLiteral("-o") << html;
            const Run run = oomlens(arguments);
            QCOMPARE(run.exitCode, 1);
            QCOMPARE(errorLines(run).size(), 1);
            QVERIFY2(run.err.contains(path.toUtf8()), run.err.constData());
            QVERIFY2(run.err.contains(reason), run.err.constData());
            QVERIFY(run.out.isEmpty());
            QVERIFY(!QFile::exists(html));
        }
    }

    void rulesFileThatIsNotThere()
    {
        const Run run = oomlens({ QStringLiteral("diagnose"), QStringLiteral("--rules"),
            QStringLiteral("/nonexistent/rules.yaml"), snapshot() });
        QCOMPARE(run.exitCode, 1);
        QCOMPARE(errorLines(run).size(), 1);
        QVERIFY2(run.err.contains("/nonexistent/rules.yaml: no such file"), run.err.constData());
        QCOMPARE(oomlens({ QStringLiteral("diagnose"), QStringLiteral("--rules="), snapshot() }).exitCode, 2);
    }

    void reportAppliesRules()
    {
        QTemporaryDir dir;
        const QString rules = dir.filePath(QStringLiteral("rules.yaml"));
        write(rules, "parameters: ['.*']\n");
        const QString html = dir.filePath(QStringLiteral("report.html"));
        const Run run = oomlens(
            { QStringLiteral("report"), QStringLiteral("--rules"), rules, snapshot(), QStringLiteral("-o"), html });
        QVERIFY2(run.exitCode == 0, run.err.constData());
        // Every stack is a parameter now: the breakdown's parameters row holds the whole peak.
        const QByteArray parametersRow = "cat-parameters\"></span>Parameters</td><td class=\"num\">";
        const QByteArray page = test::readFile(html);
        const qsizetype row = page.indexOf(parametersRow);
        QVERIFY(row > 0);
        QVERIFY2(page.mid(row, 200).contains("<td class=\"num\">100.0%</td>"), page.mid(row, 200).constData());
        const Run plain = oomlens({ QStringLiteral("report"), snapshot(), QStringLiteral("-o"), html });
        QCOMPARE(plain.exitCode, 0);
        const QByteArray builtIn = test::readFile(html);
        QVERIFY(!builtIn.mid(builtIn.indexOf(parametersRow), 200).contains("100.0%"));
    }

    void aDeviceTheSnapshotLacksIsNamedWithThoseItHas()
    {
        const Run run = oomlens({ QStringLiteral("diagnose"), QStringLiteral("--json"), QStringLiteral("--device"),
            QStringLiteral("7"), snapshot(), message() });
        QCOMPARE(run.exitCode, 1);
        QCOMPARE(errorLines(run).size(), 1);
        QVERIFY2(
            run.err.contains(QByteArray(snapshot().toUtf8() + ": the snapshot has no device 7; it holds device 0")),
            run.err.constData());
        QVERIFY(inputNamed(inputs(run), snapshot())[QStringLiteral("error")].toString().contains(
            QStringLiteral("no device 7")));
        QVERIFY(!test::parseJsonObject(run.out)[QStringLiteral("oom_messages")].toArray().isEmpty());
    }
};

QTEST_GUILESS_MAIN(TestInputsCli)
#include "tst_inputscli.moc"
