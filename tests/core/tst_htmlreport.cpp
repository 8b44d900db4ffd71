#include "common/testutil.h"
#include "common/tracebuilder.h"
#include "tst_htmlfixture.h"

#include "core/presentation/labels.h"
#include "core/report/charts.h"
#include "core/report/htmlescape.h"
#include "core/report/htmlreport.h"
#include "core/textreport.h"

#include <QElapsedTimer>
#include <QRegularExpression>
#include <QTest>
#include <QXmlStreamReader>

#include <random>

using namespace oomlens;
using namespace oomlens::report;

// Trace text for the big fixtures, allocations placed by the fixture itself (at=) in one segment:
// the builder's first-fit placement looks at every allocation made so far.
class BumpTrace
{
public:
    explicit BumpTrace(uint64_t segmentBytes)
    {
        line("segment_alloc s " + std::to_string(segmentBytes));
        flush();
        m_base = m_builder.address("s");
    }
    void line(const std::string& text)
    {
        m_text += text;
        m_text += '\n';
        if (m_text.size() > 1'000'000)
            flush();
    }
    void allocAt(const std::string& name, uint64_t bytes, const char* phase, uint64_t offset)
    {
        line("alloc " + name + " " + std::to_string(bytes) + " " + phase + " at=" + std::to_string(m_base + offset));
    }
    // Never reuses an address.
    void alloc(const std::string& name, uint64_t bytes, const char* phase)
    {
        allocAt(name, bytes, phase, m_next);
        m_next += (bytes + 511) / 512 * 512;
    }
    SnapshotAnalysis analyze()
    {
        flush();
        return analyzeSnapshot(m_builder.build());
    }

private:
    void flush()
    {
        if (!m_builder.add(m_text))
            qFatal("trace text: %s", m_builder.error().c_str());
        m_text.clear();
    }
    test::TraceBuilder m_builder;
    std::string m_text;
    uint64_t m_base = 0;
    uint64_t m_next = 0;
};

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
            attributes >= 3, qPrintable(QStringLiteral("escaped attribute breaker seen %1 times").arg(attributes)));
        // The gradients' stack file, in the largest allocations' headlines and stacks.
        const std::string escapedFilename = "&#39;&gt;&lt;img src=x onerror=alert(1)&gt;.py";
        size_t filenames = 0;
        for (size_t at = html.find(escapedFilename); at != std::string::npos; at = html.find(escapedFilename, at + 1))
            ++filenames;
        QVERIFY2(filenames >= 2, qPrintable(QStringLiteral("escaped stack filename seen %1 times").arg(filenames)));
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
        QVERIFY(html.contains(QStringLiteral("<details><summary>1. 1024.00 MiB · Parameters · allocated in loading")));
        QVERIFY(html.contains(QLatin1String("_call_impl  torch/nn/modules/module.py:1750")));
        // Categories by their names, as the app shows them, never by their JSON keys.
        QVERIFY(html.contains(QLatin1String("</span>Optimizer state</td>")));
        QVERIFY(!html.contains(QLatin1String(">optimizer_state<")));
        QVERIFY(html.contains(QLatin1String("<span class=\"badge error\">not read</span>")));
    }

    // The answer first: the verdict, then the timeline, then every diagnosis with its whole ladder
    // of fixes (a reader met nine code-heavy fix cards before any chart).
    void verdictAndTimelineBeforeTheLadder()
    {
        const auto [input, analysis] = test::hostileTrainingCase();
        const QString html = reportOf(input, analysis);
        const qsizetype verdict = html.indexOf(QLatin1String("<section id=\"verdict\">"));
        const qsizetype timeline = html.indexOf(QLatin1String("<section id=\"snapshots\">"));
        const qsizetype ladder = html.indexOf(QLatin1String("<section id=\"diagnosis\">"));
        QVERIFY(verdict >= 0 && timeline >= 0 && ladder >= 0);
        QVERIFY(verdict < timeline);
        QVERIFY(timeline < ladder);
        QVERIFY(html.indexOf(QLatin1String("<pre><code>")) > timeline);
        const QString verdictPart = html.mid(verdict, timeline - verdict);
        QVERIFY(verdictPart.contains(QString::fromStdString(analysis.diagnoses.front().title).toHtmlEscaped()));
    }

    // The report and the text report name categories, phases and inputs as the app does (labels.h),
    // never by the keys the JSON and the style sheet use.
    void labelsAreTheApps()
    {
        const auto [input, analysis] = test::hostileTrainingCase();
        const QString html = QString::fromStdString(htmlToText(buildHtmlReport(input, analysis)));
        const QString text = QString::fromStdString(caseToText(input, analysis));
        const DeviceAnalysis& device = *analysis.snapshots.front().primary();
        for (int c = 0; c < categoryCount; ++c) {
            const auto category = static_cast<Category>(c);
            if (device.categoriesAtPeak[size_t(c)] == 0)
                continue;
            const QString label = QString::fromUtf8(categoryLabel(category).data());
            const QString key = QString::fromUtf8(categoryName(category).data());
            QVERIFY2(html.contains(label), qPrintable(label));
            QVERIFY2(text.contains(QStringLiteral("    ") + label + QStringLiteral(": ")), qPrintable(label));
            QVERIFY2(!text.contains(QStringLiteral("    ") + key + QStringLiteral(": ")), qPrintable(key));
            if (key.contains(QLatin1Char('_'))) {
                QVERIFY2(!html.contains(key), qPrintable(key));
                QVERIFY2(!text.contains(key), qPrintable(key));
            }
        }
        // The largest allocations were made in phases whose keys are not their words.
        for (Phase phase : { Phase::Load, Phase::Optimizer, Phase::Data }) {
            const QString words = QString::fromStdString(phaseInSentence(phase));
            const QString key = QString::fromUtf8(phaseName(phase).data());
            QVERIFY2(html.contains(QStringLiteral("allocated in ") + words), qPrintable(words));
            for (const QString& after : { QStringLiteral(" ·"), QStringLiteral(" of step") })
                QVERIFY2(!html.contains(QStringLiteral("allocated in ") + key + after), qPrintable(key));
        }
        // What each input was read as, in the app's Inputs table's words.
        for (const CaseInput& item : input.inputs) {
            const QString label = QString::fromUtf8(inputKindLabel(item.kind).data());
            const QString key = QString::fromUtf8(inputKindName(item.kind).data());
            QVERIFY2(html.contains(QStringLiteral(" | ") + label + QStringLiteral(" | ")), qPrintable(label));
            QVERIFY2(!html.contains(QStringLiteral(" | ") + key + QStringLiteral(" | ")), qPrintable(key));
            if (item.error)
                continue; // the text report gives the reason instead
            QVERIFY2(text.contains(QStringLiteral(": ") + label + QLatin1Char('\n')), qPrintable(label));
            QVERIFY2(!text.contains(QStringLiteral(": ") + key + QLatin1Char('\n')), qPrintable(key));
        }
        QCOMPARE(phaseInSentence(Phase::Optimizer), std::string("optimizer step"));
        QVERIFY(html.contains(QStringLiteral("failed request 3.00 GiB in backward")));
    }

    void noCaptureAdviceForAGoodSnapshot()
    {
        auto [input, analysis] = test::hostileTrainingCase();
        analysis.snapshots.front().devices.front().traceTruncated = false;
        analysis.snapshots.front().devices.front().initialAllocatedBytes = 0; // nothing older than the trace
        // The analysis counts the history once; count it again for the changed device.
        analysis.snapshots.front().devices.front().history
            = traceHistory(*analysis.snapshots.front().snapshot, analysis.snapshots.front().devices.front());
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
        // Random allocations and frees of every kind the categorizer tells apart.
        const char* phases[] = { "load", "fwd", "grad", "optinit", "data", "none" };
        std::mt19937 random(7);
        std::vector<int> live;
        BumpTrace trace(128 * 1024 * GiB);
        for (int i = 0; i < 40000; ++i) {
            if (!live.empty() && random() % 2 == 0) {
                const size_t pick = random() % live.size();
                trace.line("free x" + std::to_string(live[pick]) + " none");
                live.erase(live.begin() + static_cast<std::ptrdiff_t>(pick));
            } else {
                trace.alloc("x" + std::to_string(i), (random() % 4096 + 1) * MiB, phases[random() % std::size(phases)]);
                live.push_back(i);
            }
        }
        const SnapshotAnalysis analysis = trace.analyze();
        const DeviceAnalysis& device = analysis.devices.front();
        const TimelineSeries curves(device);
        const TimelineChartData series = timelineChartData(device, curves, 500);
        QVERIFY(series.points.size() <= 1002);
        QVERIFY(series.points.size() >= 500);
        QCOMPARE(series.maxAllocated, device.peakAllocatedBytes);
        uint64_t reserved = 0;
        for (const Segment& segment : analysis.snapshot->segments)
            reserved += segment.totalSize;
        QCOMPARE(series.maxReserved, reserved); // segments are never freed in this run
        QCOMPARE(reserved, 128 * 1024 * GiB);
        bool peakDrawn = false;
        for (size_t i = 0; i < series.points.size(); ++i) {
            if (i > 0)
                QVERIFY(series.points[i - 1].event < series.points[i].event);
            if (series.points[i].total() == device.peakAllocatedBytes) {
                peakDrawn = true;
                QCOMPARE(series.points[i].bytes, device.categoriesAtPeak);
            }
            // Against an independent replay: every allocation live right after the event.
            CategoryBytes live {};
            for (const Allocation& allocation : device.allocations) {
                if (allocation.liveAfter(series.points[i].event))
                    live[static_cast<size_t>(allocation.category)] += allocation.requestedSize;
            }
            QCOMPARE(series.points[i].bytes, live);
        }
        QVERIFY(peakDrawn);
    }

    void reservedRecoveredBeforeTheTrace()
    {
        // A segment reserved before the trace began, and one the trace sees reserved.
        const SnapshotAnalysis analysis = test::analyzeReportTrace("segment old 0x7e0000000000 2GiB large\n"
                                                                   "segment_alloc s1 1GiB\n"
                                                                   "alloc a 512MiB fwd in=s1\n"
                                                                   "free a bwd\n");
        const DeviceAnalysis& device = analysis.devices.front();
        const TimelineSeries curves(device);
        const TimelineChartData series = timelineChartData(device, curves, 1000);
        // 3 GiB at the dump, 1 GiB of it reserved during the trace: 2 GiB were there before.
        QCOMPARE(curves.reservedAt(-1), 2 * GiB);
        QCOMPARE(series.reserved.front().bytes, 3 * GiB); // right after the first event, the segment_alloc
        QCOMPARE(series.maxReserved, 3 * GiB);
        QCOMPARE(series.maxAllocated, 512 * MiB);
    }

    void millionEventReportIsSmall()
    {
        // 1M events: 500k allocations with at most 64 live, across phases and categories.
        const char* phases[] = { "fwd", "grad", "optinit", "data", "load" };
        constexpr uint64_t slot = 32 * 1024;
        BumpTrace trace(65 * slot);
        for (int i = 0; i < 500'000; ++i) {
            // 65 slots for at most 64 live allocations: a slot is free again when it comes round.
            trace.allocAt("a" + std::to_string(i), static_cast<uint64_t>(((i % 2048) * 7919) % 2048 * 16 + 16),
                phases[(i / 10000) % std::size(phases)], static_cast<uint64_t>(i % 65) * slot);
            if (i >= 64)
                trace.line("free_completed a" + std::to_string(i - 64));
        }
        CaseAnalysis analysis;
        analysis.snapshots.push_back(trace.analyze());
        QVERIFY(analysis.snapshots.front().snapshot->totalTraceEvents() >= 999'000);
        Case input;
        input.snapshots.push_back(analysis.snapshots.front().snapshot);
        input.inputs.push_back({ "big.pickle", InputKind::Snapshot, std::nullopt, 0 });
        QElapsedTimer timer;
        timer.start();
        const std::string html = buildHtmlReport(input, analysis);
        qInfo("1M-event report: %.2f MB in %lld ms", static_cast<double>(html.size()) / 1e6,
            static_cast<long long>(timer.elapsed()));
        QVERIFY(html.size() < 5'000'000);
        QVERIFY(html.find("(999,") != std::string::npos); // the axis title counts every event
    }

    void allocatorMapStaysSmallWithManyBlocks()
    {
        BumpTrace trace(1 * GiB);
        for (int i = 0; i < 100000; ++i)
            trace.alloc("a" + std::to_string(i), 4096, i % 2 == 0 ? "load" : "fwd");
        const SnapshotAnalysis analysis = trace.analyze();
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
