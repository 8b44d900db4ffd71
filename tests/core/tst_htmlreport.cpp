#include "common/testutil.h"
#include "tst_htmlfixture.h"

#include "core/report/charts.h"
#include "core/report/htmlescape.h"
#include "core/report/htmlreport.h"
#include "core/report/timelineseries.h"

#include <QElapsedTimer>
#include <QRegularExpression>
#include <QTest>
#include <QXmlStreamReader>

#include <random>

using namespace oomlens;
using namespace oomlens::report;

class TestHtmlReport : public QObject
{
    Q_OBJECT

    static QString reportOf(const Case& input, const CaseAnalysis& analysis)
    {
        return QString::fromStdString(buildHtmlReport(input, analysis));
    }

private Q_SLOTS:
    void escapesText_data()
    {
        QTest::addColumn<QByteArray>("input");
        QTest::addColumn<QByteArray>("expected");
        QTest::newRow("plain") << QByteArray("forward") << QByteArray("forward");
        QTest::newRow("script") << QByteArray("<script>alert(1)</script>")
                                << QByteArray("&lt;script&gt;alert(1)&lt;/script&gt;");
        QTest::newRow("attribute breaker") << QByteArray("\"><img src=x onerror=alert(1)>")
                                           << QByteArray("&quot;&gt;&lt;img src=x onerror=alert(1)&gt;");
        QTest::newRow("single quote and ampersand") << QByteArray("a' & b") << QByteArray("a&#39; &amp; b");
        QTest::newRow("utf-8 kept") << QByteArray("größe – 日本") << QByteArray("größe – 日本");
        QTest::newRow("invalid utf-8 replaced")
            << QByteArray("a\xff\xc3(b") << QByteArray("a\xEF\xBF\xBD\xEF\xBF\xBD(b");
        QTest::newRow("overlong slash") << QByteArray("\xC0\xAF") << QByteArray("\xEF\xBF\xBD\xEF\xBF\xBD");
        QTest::newRow("control bytes dropped") << QByteArray("a\x01\x1b[31mb\r\n") << QByteArray("a[31mb\n");
        QTest::newRow("truncated sequence") << QByteArray("ok\xE6\x97") << QByteArray("ok\xEF\xBF\xBD\xEF\xBF\xBD");
    }

    void escapesText()
    {
        QFETCH(QByteArray, input);
        QFETCH(QByteArray, expected);
        QCOMPARE(QByteArray::fromStdString(escapeHtml(input.toStdString())), expected);
    }

    void hostileStringsAppearOnlyEscaped()
    {
        const auto [input, analysis] = test::hostileTrainingCase();
        const std::string html = buildHtmlReport(input, analysis);
        QVERIFY(html.find("<script") == std::string::npos);
        QVERIFY(html.find("<img") == std::string::npos);
        QVERIFY(html.find("onerror=alert(1)>") == std::string::npos);
        // The escaped forms are there: frame names (top allocation stacks), filenames (inputs),
        // the message, the nvidia-smi GPU name, diagnosis text and evidence.
        const std::string escapedScript = "&lt;script&gt;alert(1)&lt;/script&gt;";
        const std::string escapedAttribute = "&quot;&gt;&lt;img src=x onerror=alert(1)&gt;";
        size_t scripts = 0;
        for (size_t at = html.find(escapedScript); at != std::string::npos; at = html.find(escapedScript, at + 1))
            ++scripts;
        size_t attributes = 0;
        for (size_t at = html.find(escapedAttribute); at != std::string::npos; at = html.find(escapedAttribute, at + 1))
            ++attributes;
        QVERIFY2(scripts >= 5, qPrintable(QStringLiteral("escaped script tag seen %1 times").arg(scripts)));
        QVERIFY2(
            attributes >= 4, qPrintable(QStringLiteral("escaped attribute breaker seen %1 times").arg(attributes)));
    }

    void selfContainedAndLocked()
    {
        const auto [input, analysis] = test::hostileTrainingCase();
        const QString html = reportOf(input, analysis);
        QVERIFY(html.startsWith(QLatin1String("<!DOCTYPE html>")));
        QVERIFY(html.contains(QLatin1String("<meta http-equiv=\"Content-Security-Policy\" content=\"default-src "
                                            "'none'; style-src 'unsafe-inline'; img-src data:\">")));
        QVERIFY(!html.contains(QLatin1String("<script"), Qt::CaseInsensitive));
        QVERIFY(!html.contains(QLatin1String("<link"), Qt::CaseInsensitive));
        QVERIFY(!html.contains(QLatin1String("@import")));
        QVERIFY(!html.contains(QLatin1String("url(")));
        // Every src/href is an in-page anchor; nothing can reach the network.
        const QRegularExpression reference(QStringLiteral("\\b(src|href|xlink:href|action)\\s*=\\s*\"([^\"]*)\""));
        for (auto it = reference.globalMatch(html); it.hasNext();) {
            const QRegularExpressionMatch match = it.next();
            QVERIFY2(match.captured(2).startsWith(QLatin1Char('#')), qPrintable(match.captured(0)));
        }
        QVERIFY(html.contains(QLatin1String("@media print")));
        QVERIFY(html.contains(QLatin1String("prefers-color-scheme: dark")));
    }

    void chartsAreWellFormedSvg()
    {
        const auto [input, analysis] = test::hostileTrainingCase();
        const QString html = reportOf(input, analysis);
        const QRegularExpression svg(QStringLiteral("<svg .*?</svg>"), QRegularExpression::DotMatchesEverythingOption);
        int charts = 0;
        for (auto it = svg.globalMatch(html); it.hasNext(); ++charts) {
            QXmlStreamReader xml(it.next().captured(0));
            while (!xml.atEnd())
                xml.readNext();
            QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
        }
        QCOMPARE(charts, 3); // timeline, category breakdown, allocator map
        QVERIFY(html.contains(QLatin1String("class=\"band cat-activations\"")));
        QVERIFY(html.contains(QLatin1String("class=\"marker oom-marker\"")));
        QVERIFY(html.contains(QLatin1String("class=\"reserved-line\"")));
        QVERIFY(html.contains(QLatin1String("class=\"phase phase-backward\"")));
    }

    void contentSections()
    {
        const auto [input, analysis] = test::hostileTrainingCase();
        const QString html = reportOf(input, analysis);
        QVERIFY(html.contains(QLatin1String("<title>Out of memory: The first backward pass does not fit</title>")));
        QVERIFY(html.contains(QLatin1String("confidence 82%")));
        QVERIFY(html.contains(QLatin1String("<span class=\"badge experiment\">changes the experiment</span>")));
        QVERIFY(html.contains(QLatin1String("saves about 512.00 MiB, not enough alone")));
        QVERIFY(html.contains(QLatin1String("<pre><code>with torch.autocast(&quot;cuda&quot;, "
                                            "dtype=torch.bfloat16):\n    loss = model(x) &lt; 1 &amp;&amp; y &gt; 2")));
        // Every OOM number is explained, including what it implies.
        QVERIFY(html.contains(QLatin1String("<td>Reserved but unallocated</td><td class=\"num\">2.00 GiB</td>")));
        QVERIFY(html.contains(
            QLatin1String("<li>The 3.00 GiB request was 424.00 MiB more than free plus cached-but-unused")));
        QVERIFY(
            html.contains(QLatin1String("<td>Used outside PyTorch&#39;s cache</td><td class=\"num\">424.00 MiB</td>")));
        // The truncated trace asks for a better capture with the exact calls.
        QVERIFY(html.contains(QLatin1String("torch.cuda.memory._record_memory_history(max_entries=100000)")));
        QVERIFY(html.contains(QLatin1String("torch.cuda.memory._dump_snapshot(")));
        // Top allocations at the peak carry their stacks in collapsible sections.
        QVERIFY(html.contains(
            QStringLiteral("<details><summary>1. 1024.00 MiB · parameters · allocated in load of step 0")));
        QVERIFY(html.contains(QLatin1String("forward  torch/nn/modules/linear.py:")));
        QVERIFY(html.contains(QLatin1String("<span class=\"badge error\">not read</span>")));
    }

    void noCaptureAdviceForAGoodSnapshot()
    {
        auto [input, analysis] = test::hostileTrainingCase();
        analysis.snapshots.front().devices.front().traceTruncated = false;
        QVERIFY(!reportOf(input, analysis).contains(QLatin1String("_record_memory_history")));
    }

    void textOnlyCase()
    {
        auto [input, analysis] = test::hostileTrainingCase();
        input.snapshots.clear();
        input.inputs.erase(input.inputs.begin() + 1);
        analysis.snapshots.clear();
        const QString html = reportOf(input, analysis);
        QVERIFY(!html.contains(QLatin1String("<svg")));
        QVERIFY(html.contains(QLatin1String("No memory snapshot was among the inputs")));
        QVERIFY(html.contains(QLatin1String("The OOM message, explained")));
    }

    void emptyCaseStillRenders()
    {
        const QString html = reportOf(Case {}, CaseAnalysis {});
        QVERIFY(html.contains(QLatin1String("Nothing to diagnose")));
        QVERIFY(html.endsWith(QLatin1String("</html>\n")));
    }

    void textGolden()
    {
        const auto [input, analysis] = test::hostileTrainingCase();
        const std::string text = htmlToText(buildHtmlReport(input, analysis));
        OOMLENS_COMPARE_GOLDEN(QStringLiteral("report/hostile_training_case.txt"), text);
    }

    void timelineKeepsThePeak()
    {
        test::ReportFixture f;
        std::mt19937 random(7);
        std::vector<size_t> live;
        f.segmentAlloc(64 * GiB);
        for (int i = 0; i < 40000; ++i) {
            if (!live.empty() && random() % 2 == 0) {
                const size_t pick = random() % live.size();
                f.free(live[pick]);
                live.erase(live.begin() + static_cast<std::ptrdiff_t>(pick));
            } else {
                live.push_back(f.alloc((random() % 4096 + 1) * MiB, static_cast<Category>(random() % categoryCount),
                    Phase::Forward, 1, FrameTable::emptyStack(), 0));
            }
        }
        const SnapshotAnalysis analysis = f.finish();
        const DeviceAnalysis& device = analysis.devices.front();
        const TimelineSeries series = buildTimelineSeries(*analysis.snapshot, device, 500);
        QVERIFY(series.points.size() <= 1000);
        QVERIFY(series.points.size() >= 500);
        QCOMPARE(series.maxAllocated, device.peakAllocatedBytes);
        uint64_t reserved = 0;
        for (const Segment& segment : analysis.snapshot->segments)
            reserved += segment.totalSize;
        QCOMPARE(series.maxReserved, reserved); // segments are never freed in this run
        QVERIFY(reserved > 64 * GiB);
        bool peakDrawn = false;
        for (size_t i = 0; i < series.points.size(); ++i) {
            if (i > 0)
                QVERIFY(series.points[i - 1].event < series.points[i].event);
            if (series.points[i].total() == device.peakAllocatedBytes) {
                peakDrawn = true;
                QCOMPARE(series.points[i].live, device.categoriesAtPeak);
            }
            QCOMPARE(series.points[i].live, liveAt(device, series.points[i].event));
        }
        QVERIFY(peakDrawn);
    }

    void reservedRecoveredBeforeTheTrace()
    {
        test::ReportFixture f;
        f.segmentAlloc(1 * GiB);
        const size_t a = f.alloc(512 * MiB, Category::Activations, Phase::Forward, 1, FrameTable::emptyStack(), 0);
        f.free(a);
        SnapshotAnalysis analysis = f.finish();
        Segment older;
        older.address = 0x1000;
        older.totalSize = 2 * GiB;
        auto snapshot = std::make_shared<Snapshot>(*analysis.snapshot);
        snapshot->segments.push_back(older);
        analysis.snapshot = snapshot;
        const TimelineSeries series = buildTimelineSeries(*analysis.snapshot, analysis.devices.front());
        // 3 GiB at the dump, 1 GiB of it allocated during the trace: 2 GiB were there before.
        QCOMPARE(series.points.front().reserved, 3 * GiB);
        QCOMPARE(series.maxReserved, 3 * GiB);
        QCOMPARE(series.maxAllocated, 512 * MiB);
    }

    void millionEventReportIsSmall()
    {
        test::ReportFixture f;
        std::vector<size_t> live;
        const StackId where = f.stack({ { "forward", "model.py" }, { "train_step", "train.py" } });
        f.segmentAlloc(16 * GiB);
        for (int i = 0; f.device().eventPhase.size() < 1'000'000; ++i) {
            live.push_back(f.alloc(static_cast<uint64_t>(((i % 2048) * 7919) % 2048 + 1) * 16,
                static_cast<Category>(i % categoryCount), static_cast<Phase>(1 + (i / 10000) % 5), i / 50000, where,
                0));
            if (live.size() > 64) {
                f.free(live.front());
                live.erase(live.begin());
            }
        }
        CaseAnalysis analysis;
        analysis.snapshots.push_back(f.finish());
        Case input;
        input.snapshots.push_back(analysis.snapshots.front().snapshot);
        input.inputs.push_back({ "big.pickle", InputKind::Snapshot, std::nullopt, 0 });
        QElapsedTimer timer;
        timer.start();
        const std::string html = buildHtmlReport(input, analysis);
        qInfo("1M-event report: %.2f MB in %lld ms", static_cast<double>(html.size()) / 1e6,
            static_cast<long long>(timer.elapsed()));
        QVERIFY(html.size() < 5'000'000);
        QVERIFY(html.find("(1,000,00") != std::string::npos); // the axis title counts every event
    }

    void allocatorMapStaysSmallWithManyBlocks()
    {
        test::ReportFixture f;
        f.segmentAlloc(1 * GiB);
        for (int i = 0; i < 100000; ++i)
            f.alloc(4096, static_cast<Category>(i % 2 == 0 ? 0 : 3), Phase::Forward, 1, FrameTable::emptyStack(), 0);
        const SnapshotAnalysis analysis = f.finish();
        const DeviceAnalysis& device = analysis.devices.front();
        const AllocatorState state
            = allocatorStateAt(*analysis.snapshot, device, static_cast<int64_t>(device.eventPhase.size()) - 1);
        QCOMPARE(state.segments.front().blocks.size(), size_t(100000));
        const std::string svg = allocatorMapSvg(state, device, 64);
        size_t rects = 0;
        for (size_t at = svg.find("<rect"); at != std::string::npos; at = svg.find("<rect", at + 1))
            ++rects;
        // 100000 alternating blocks fill 1/2.6 of the row; at half-pixel resolution that is a few hundred runs.
        QVERIFY2(rects < 1000, qPrintable(QString::number(rects)));
        QVERIFY(rects > 10);
        QVERIFY(svg.size() < 200 * 1000);
    }
};

QTEST_GUILESS_MAIN(TestHtmlReport)
#include "tst_htmlreport.moc"
