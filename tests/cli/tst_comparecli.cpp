#include "common/clirun.h"
#include "common/testutil.h"

#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

#include <cmath>

// Runs the real `oomlens compare` as a user or a script would: the text, the JSON of product.md
// §5 (Wave-2 commands), two windows of one run, the report's comparison section, and the exit
// statuses (1 unreadable input, 2 usage error).
class TestCompareCli : public QObject
{
    Q_OBJECT

    using Run = oomlens::test::CliRun;

    static Run oomlens(const QStringList& arguments)
    {
        return oomlens::test::runOomlens(QStringList { QStringLiteral("compare") } + arguments);
    }

    static QString pair(const char* name)
    {
        return oomlens::test::testDataDir() + QStringLiteral("/compare/") + QString::fromLatin1(name);
    }

    static QJsonObject truth(const char* pairName)
    {
        return QJsonDocument::fromJson(oomlens::test::readFile(pair("truth.json")))
            .object()
            .value(QLatin1String(pairName))
            .toObject();
    }

    static QJsonObject compareJson(const QStringList& arguments)
    {
        const Run run = oomlens(arguments + QStringList { QStringLiteral("--json") });
        if (run.exitCode != 0)
            qFatal("compare failed (%d): %s", run.exitCode, run.err.constData());
        const QJsonObject document = oomlens::test::parseJsonObject(run.out);
        if (document.value(QStringLiteral("tool")).toString() != QLatin1String("oomlens"))
            qFatal("no tool key");
        return document.value(QStringLiteral("compare")).toObject();
    }

private Q_SLOTS:
    void initTestCase() { OOMLENS_REQUIRE_BINARY(); }

    void textTableAndSummary()
    {
        const Run run = oomlens({ pair("checkpointing.a.pickle"), pair("checkpointing.b.pickle") });
        QCOMPARE(run.exitCode, 0);
        QVERIFY2(run.err.isEmpty(), run.err.constData());
        for (const char* expected : { "Peak allocated", "254.32 MiB", "178.13 MiB", "Activations", "-76.19 MiB",
                 "Sites that changed most at the peak", "model.py:52:forward", "New in B (", "Vanished from B (",
                 "Summary: B cut activations at the peak by 76.19 MiB; the peak stays in the backward of step 2" })
            QVERIFY2(run.out.contains(expected), expected);
        // The summary is the last line.
        QVERIFY(run.out.trimmed().split('\n').last().startsWith("Summary: "));
    }

    void jsonContract()
    {
        const QJsonObject compare = compareJson({ pair("batch.a.pickle"), pair("batch.b.pickle") });
        const QJsonObject expected = truth("batch");
        for (const char* key : { "a", "b", "categories_delta", "sites", "summary" })
            QVERIFY2(compare.contains(QLatin1String(key)), key);
        const QJsonObject a = compare.value(QStringLiteral("a")).toObject();
        const QJsonObject b = compare.value(QStringLiteral("b")).toObject();
        QCOMPARE(a.value(QStringLiteral("peak_allocated_bytes")).toDouble(),
            expected.value(QStringLiteral("a_peak_allocated_bytes")).toDouble());
        QCOMPARE(b.value(QStringLiteral("peak_allocated_bytes")).toDouble(),
            expected.value(QStringLiteral("b_peak_allocated_bytes")).toDouble());
        const QJsonObject delta = compare.value(QStringLiteral("categories_delta")).toObject();
        double sumA = 0;
        for (const char* category :
            { "parameters", "gradients", "optimizer_state", "activations", "temporaries", "inputs", "unknown" }) {
            QVERIFY2(
                a.value(QStringLiteral("categories_at_peak")).toObject().contains(QLatin1String(category)), category);
            QVERIFY2(delta.contains(QLatin1String(category)), category);
            const double x
                = a.value(QStringLiteral("categories_at_peak")).toObject().value(QLatin1String(category)).toDouble();
            const double y
                = b.value(QStringLiteral("categories_at_peak")).toObject().value(QLatin1String(category)).toDouble();
            QCOMPARE(delta.value(QLatin1String(category)).toDouble(), y - x);
            sumA += x;
        }
        QCOMPARE(sumA, a.value(QStringLiteral("peak_allocated_bytes")).toDouble());
        QVERIFY(delta.value(QStringLiteral("activations")).toDouble() < 0);

        const QJsonArray sites = compare.value(QStringLiteral("sites")).toArray();
        QVERIFY(!sites.isEmpty());
        double previous = INFINITY;
        for (const auto& value : sites) {
            const QJsonObject site = value.toObject();
            for (const char* key : { "stack", "category", "a_bytes", "b_bytes", "delta_bytes", "phase" })
                QVERIFY2(site.contains(QLatin1String(key)), key);
            QCOMPARE(site.value(QStringLiteral("delta_bytes")).toDouble(),
                site.value(QStringLiteral("b_bytes")).toDouble() - site.value(QStringLiteral("a_bytes")).toDouble());
            const double magnitude = std::abs(site.value(QStringLiteral("delta_bytes")).toDouble());
            QVERIFY(magnitude <= previous); // sorted by |delta|
            previous = magnitude;
            QVERIFY(site.value(QStringLiteral("stack")).isArray());
        }
        // Batch 8 vs 4: the same program, so every site is on both sides.
        QCOMPARE(compare.value(QStringLiteral("new_sites")).toInt(), 0);
        QCOMPARE(compare.value(QStringLiteral("vanished_sites")).toInt(), 0);
        QVERIFY(compare.value(QStringLiteral("summary")).toString().startsWith(QStringLiteral("B cut activations")));
        QVERIFY(compare.value(QStringLiteral("surviving")).isNull());
    }

    void windowsOfOneRun()
    {
        const QJsonObject expected = truth("leak");
        const QJsonObject compare = compareJson(
            { pair("leak.pickle"), QStringLiteral("--window"), QStringLiteral("2:2"), QStringLiteral("--window=3") });
        QVERIFY(compare.value(QStringLiteral("windows")).toBool());
        const QJsonObject a = compare.value(QStringLiteral("a")).toObject();
        QCOMPARE(a.value(QStringLiteral("window")).toObject().value(QStringLiteral("first_step")).toInt(), 2);
        QCOMPARE(compare.value(QStringLiteral("b")).toObject().value(QStringLiteral("peak_step")).toInt(), 3);
        const double leak = expected.value(QStringLiteral("leak_bytes_per_step")).toDouble();
        QCOMPARE(compare.value(QStringLiteral("surviving_bytes")).toDouble(), leak);
        const QJsonObject kept = compare.value(QStringLiteral("surviving")).toArray().first().toObject();
        QVERIFY(kept.value(QStringLiteral("repeats")).toBool());
        QCOMPARE(kept.value(QStringLiteral("stack")).toArray().first().toString(),
            expected.value(QStringLiteral("leak_site_frames")).toArray().first().toString());

        const Run text = oomlens({ pair("leak.pickle"), QStringLiteral("--window"), QStringLiteral("2"),
            QStringLiteral("--window"), QStringLiteral("3") });
        QCOMPARE(text.exitCode, 0);
        QVERIFY2(
            text.out.contains("Still alive after step 3 of what step 2 allocated: 32.00 MiB"), text.out.constData());
        QVERIFY(text.out.contains("(a leak)"));
    }

    void reportHasTheSection()
    {
        QTemporaryDir directory;
        const QString path = directory.filePath(QStringLiteral("compare.html"));
        const Run run = oomlens({ pair("fused.a.pickle"), pair("fused.b.pickle"), QStringLiteral("-o"), path });
        QCOMPARE(run.exitCode, 0);
        QVERIFY(run.out.contains("Summary: ")); // the text still goes to stdout
        const QByteArray html = oomlens::test::readFile(path);
        for (const char* expected : { "<section id=\"comparison\">", "href=\"#comparison\"", "Comparison: A and B",
                 "Sites that changed most at the peak", "Vanished from B (1)", "New in B (0)", "compare-a-line",
                 "compare-b-line", "The rest of this report describes B.", "fused.b.pickle" })
            QVERIFY2(html.contains(expected), expected);
        // The rest of the report is B's own.
        QVERIFY(html.contains("id=\"snapshots\""));

        const Run windows = oomlens({ pair("leak.pickle"), QStringLiteral("--window"), QStringLiteral("2:2"),
            QStringLiteral("--window"), QStringLiteral("3:3"), QStringLiteral("--report"), path });
        QCOMPARE(windows.exitCode, 0);
        const QByteArray windowHtml = oomlens::test::readFile(path);
        QVERIFY(windowHtml.contains("Comparison: step 2 and step 3"));
        QVERIFY(windowHtml.contains("Still alive after step 3 of what step 2 allocated: 32.00 MiB"));
        QVERIFY(windowHtml.contains("steps aligned"));
    }

    void usageErrors_data()
    {
        QTest::addColumn<QStringList>("arguments");
        QTest::addColumn<QString>("message");
        const QString a = pair("batch.a.pickle");
        const QString leak = pair("leak.pickle");
        const QString window = QStringLiteral("--window");
        QTest::newRow("nothing") << QStringList {} << QStringLiteral("give two snapshots");
        QTest::newRow("one snapshot") << QStringList { a } << QStringLiteral("give two snapshots");
        QTest::newRow("three snapshots") << QStringList { a, a, a } << QStringLiteral("give two snapshots, not 3");
        QTest::newRow("one window") << QStringList { leak, window, QStringLiteral("2") }
                                    << QStringLiteral("--window is given twice");
        QTest::newRow("bad window") << QStringList { leak, window, QStringLiteral("3:2"), window, QStringLiteral("4") }
                                    << QStringLiteral("--window needs STEP or FIRST:LAST");
        QTest::newRow("windows of two") << QStringList { leak, a, window, QStringLiteral("2"), window,
            QStringLiteral("3") } << QStringLiteral("give one");
        QTest::newRow("step not in the trace") << QStringList { leak, window, QStringLiteral("2"), window,
            QStringLiteral("9") } << QStringLiteral("step 9 is not in the trace, which has steps 0");
        QTest::newRow("unknown option") << QStringList { a, a, QStringLiteral("--bogus") }
                                        << QStringLiteral("unknown option --bogus");
    }
    void usageErrors()
    {
        QFETCH(QStringList, arguments);
        QFETCH(QString, message);
        const Run run = oomlens(arguments);
        QCOMPARE(run.exitCode, 2);
        QVERIFY(run.out.isEmpty());
        QVERIFY2(run.err.startsWith("oomlens compare: "), run.err.constData());
        QVERIFY2(QString::fromUtf8(run.err.split('\n').first()).contains(message), run.err.constData());
    }

    void unreadableInputs()
    {
        const Run missing = oomlens({ pair("batch.a.pickle"), QStringLiteral("/nonexistent/b.pickle") });
        QCOMPARE(missing.exitCode, 1);
        QVERIFY(missing.out.isEmpty());
        QVERIFY2(missing.err.startsWith("oomlens: /nonexistent/b.pickle: "), missing.err.constData());
        QCOMPARE(missing.err.count('\n'), 1);

        const QString message = oomlens::test::testDataDir() + QStringLiteral("/scenarios/leak.oom.txt");
        const Run text = oomlens({ message, pair("batch.b.pickle") });
        QCOMPARE(text.exitCode, 1);
        QVERIFY2(text.err.contains("not a memory snapshot"), text.err.constData());

        const Run device = oomlens(
            { pair("batch.a.pickle"), pair("batch.b.pickle"), QStringLiteral("--device"), QStringLiteral("5") });
        QCOMPARE(device.exitCode, 1);
        QVERIFY2(device.err.contains("the snapshot has no device 5; it holds device 0"), device.err.constData());
    }

    void listedInTheUsage()
    {
        QVERIFY(oomlens::test::runOomlens({ QStringLiteral("--help") }).out.contains("oomlens compare A B"));
        const Run help = oomlens({ QStringLiteral("--help") });
        QCOMPARE(help.exitCode, 0);
        QVERIFY(help.out.contains("--window"));
    }
};

QTEST_GUILESS_MAIN(TestCompareCli)
#include "tst_comparecli.moc"
