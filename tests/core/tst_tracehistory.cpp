#include "common/analysisfixtures.h"
#include "common/testutil.h"
#include "core/caseanalysis.h"
#include "core/jsonexport.h"
#include "core/presentation/historywords.h"
#include "core/report/htmlreport.h"
#include "core/strings.h"
#include "core/textreport.h"
#include "core/units.h"
#include "parsers/inputloader.h"

#include <QTest>

using namespace oomlens;

namespace {

Case openFile(const QString& relative)
{
    Case input;
    addFile(input, QString(test::testDataDir() + QLatin1Char('/') + relative).toStdString());
    return input;
}

bool anyContains(const std::vector<std::string>& lines, const std::string& needle)
{
    for (const std::string& line : lines) {
        if (contains(line, needle))
            return true;
    }
    return false;
}

} // namespace

// Truncated history (the ring buffer wrapped, or recording started late) and segments-only
// snapshots, counted once in core/analysis/tracehistory.h and shown by the CLI and the report.
class TestTraceHistory : public QObject
{
    Q_OBJECT

private slots:
    void wrappedRingBufferCountsGhostFreesAndOlderBlocks()
    {
        const Case input = openFile(QStringLiteral("history/wrapped.pickle"));
        QCOMPARE(input.snapshots.size(), size_t(1));
        const CaseAnalysis analysis = analyzeCase(input);
        const DeviceAnalysis* device = analysis.snapshots.front().primary();
        QVERIFY(device);
        const TraceHistory history = traceHistory(*input.snapshots.front(), *device);
        QCOMPARE(history.coverage, TraceHistory::Coverage::Wrapped);
        QCOMPARE(history.traceEvents, size_t(9));
        QCOMPARE(history.allocEvents, size_t(3));
        QCOMPARE(history.ghostFrees, size_t(2));
        QCOMPARE(history.ghostFreeBytes, 192 * MiB);
        QCOMPARE(history.olderLiveBlocks, size_t(1));
        QCOMPARE(history.olderLiveBytes, 256 * MiB);
        // The two counts are the whole of the memory older than the trace, as the timeline starts it.
        QCOMPARE(history.olderBytes(), device->initialAllocatedBytes);
        QVERIFY(history.truncated());

        const std::vector<std::string> statement = historyStatement(*input.snapshots.front(), history);
        QVERIFY(anyContains(statement, "2 frees (192.00 MiB)"));
        QVERIFY(anyContains(statement, "\"ghost\""));
        QVERIFY(anyContains(statement, "1 block (256.00 MiB)"));
        QVERIFY(anyContains(statement, "3 allocations, 448.00 MiB"));
        const std::string advice = historyAdvice(history);
        QVERIFY(contains(advice, "_record_memory_history(max_entries=100000)"));
        QVERIFY(contains(advice, "clear_history"));
    }

    void lateStartIsNotAWrappedBuffer()
    {
        const SnapshotAnalysis analysis = test::analyzeTrace("before p 512MiB load\nalloc a 1GiB fwd\n");
        const TraceHistory history = traceHistory(*analysis.snapshot, *analysis.primary());
        QCOMPARE(history.coverage, TraceHistory::Coverage::LateStart);
        QCOMPARE(history.ghostFrees, size_t(0));
        QCOMPARE(history.olderLiveBlocks, size_t(1));
        QCOMPARE(history.olderLiveBytes, 512 * MiB);
        QVERIFY(contains(historyAdvice(history), "before the model and the optimizer are created"));
    }

    void ringBufferCutMakesGhostFrees()
    {
        const SnapshotAnalysis analysis = test::analyzeTrace("alloc a 64MiB fwd\nalloc b 32MiB fwd\nfree a bwd\n"
                                                             "alloc c 16MiB fwd\nringbuffer 3\n");
        const TraceHistory history = traceHistory(*analysis.snapshot, *analysis.primary());
        QCOMPARE(history.coverage, TraceHistory::Coverage::Wrapped);
        QCOMPARE(history.ghostFrees, size_t(1));
        QCOMPARE(history.ghostFreeBytes, 64 * MiB);
        QVERIFY(contains(historyAdvice(history), "this trace kept 3 entries"));
    }

    void completeTraceSaysNothing()
    {
        const SnapshotAnalysis analysis = test::analyzeTrace("alloc a 64MiB fwd\nfree a bwd\nalloc b 1GiB fwd\n");
        const TraceHistory history = traceHistory(*analysis.snapshot, *analysis.primary());
        QCOMPARE(history.coverage, TraceHistory::Coverage::Complete);
        QCOMPARE(history.olderBlocks(), size_t(0));
        QVERIFY(historyStatement(*analysis.snapshot, history).empty());
        QVERIFY(historyAdvice(history).empty());
    }

    void stateOnlySnapshotIsSegmentsOnly()
    {
        const Case input = openFile(QStringLiteral("history/state_only.pickle"));
        const CaseAnalysis analysis = analyzeCase(input);
        const TraceHistory history = traceHistory(*input.snapshots.front(), *analysis.snapshots.front().primary());
        QCOMPARE(history.coverage, TraceHistory::Coverage::SegmentsOnly);
        QCOMPARE(history.traceEvents, size_t(0));
        QCOMPARE(history.segments, size_t(2));
        QCOMPARE(history.reservedBytes, 1536 * MiB);
        QCOMPARE(history.liveBlocks, size_t(2));
        QCOMPARE(history.liveBlockBytes, 1088 * MiB);
        QVERIFY(history.blocksHaveStacks);
        const std::vector<std::string> statement = historyStatement(*input.snapshots.front(), history);
        QVERIFY(anyContains(statement, "enabled='state'"));
        QVERIFY(anyContains(statement, "2 segments, 1.50 GiB reserved, 1.06 GiB in 2 live blocks"));
        QVERIFY(anyContains(statement, "Missing without a trace: the timeline"));
        QVERIFY(anyContains(statement, "stacks still tell the categories"));
        QVERIFY(contains(historyAdvice(history), "_record_memory_history(max_entries=100000)"));
    }

    void bareSegmentListIsSegmentsOnly()
    {
        const Case input = openFile(QStringLiteral("snapshots/era_segment_list.pickle"));
        const CaseAnalysis analysis = analyzeCase(input);
        const TraceHistory history = traceHistory(*input.snapshots.front(), *analysis.snapshots.front().primary());
        QVERIFY(history.segmentsOnly());
        QVERIFY(anyContains(historyStatement(*input.snapshots.front(), history), "bare list of segments"));
    }

    void realStateOnlySnapshots_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("words");
        // An empty trace, and one holding a single `snapshot` entry: neither has an allocation.
        QTest::newRow("no entries") << QStringLiteral("kkaitlyn111__cs336-a2-systems__memory_snapshot.pickle")
                                    << QStringLiteral("without trace entries");
        QTest::newRow("one snapshot entry") << QStringLiteral("Yiyi-philosophy__LLM-inference__oom_snapshot.pickle")
                                            << QStringLiteral("holds only 1 entry");
    }

    void realStateOnlySnapshots()
    {
        OOMLENS_REQUIRE_SHARED();
        QFETCH(QString, file);
        QFETCH(QString, words);
        Case input;
        addFile(input, QString(test::corpusDir() + QStringLiteral("/snapshots/") + file).toStdString());
        QCOMPARE(input.snapshots.size(), size_t(1));
        const CaseAnalysis analysis = analyzeCase(input);
        const TraceHistory history = traceHistory(*input.snapshots.front(), *analysis.snapshots.front().primary());
        QVERIFY(history.segmentsOnly());
        QVERIFY(anyContains(historyStatement(*input.snapshots.front(), history), words.toStdString()));
    }

    void diagnoseJsonAndTextCarryTheHistory()
    {
        const Case input = openFile(QStringLiteral("history/wrapped.pickle"));
        const CaseAnalysis analysis = analyzeCase(input);
        const nlohmann::ordered_json json = caseToJson(input, analysis);
        const auto& history = json["snapshots"][0]["history"];
        QCOMPARE(history["coverage"].get<std::string>(), std::string("wrapped"));
        QCOMPARE(history["ghost_frees"].get<size_t>(), size_t(2));
        QCOMPARE(history["ghost_free_bytes"].get<uint64_t>(), 192 * MiB);
        QCOMPARE(history["older_than_trace_bytes"].get<uint64_t>(), 448 * MiB);
        QVERIFY(!history["advice"].get<std::string>().empty());
        // The keys that were there before stay as they were.
        QCOMPARE(json["snapshots"][0]["trace_truncated"].get<bool>(), true);

        const std::string text = caseToText(input, analysis);
        QVERIFY(contains(text, "history: wrapped"));
        QVERIFY(contains(text, "2 frees (192.00 MiB)"));
        QVERIFY(contains(text, "max_entries="));

        const Case stateOnly = openFile(QStringLiteral("history/state_only.pickle"));
        const std::string stateText = caseToText(stateOnly, analyzeCase(stateOnly));
        QVERIFY(contains(stateText, "history: segments_only"));
        QVERIFY(contains(stateText, "allocated at the dump 1.06 GiB"));
        QVERIFY(!contains(stateText, "peak allocated"));
    }

    void reportSaysWhatIsMissingInsteadOfAnEmptyChart()
    {
        const Case stateOnly = openFile(QStringLiteral("history/state_only.pickle"));
        const std::string html = report::buildHtmlReport(stateOnly, analyzeCase(stateOnly));
        QVERIFY(contains(html, "class=\"history segments-only\""));
        QVERIFY(
            contains(html, "0 trace events (no allocation), 1.06 GiB allocated and 1.50 GiB reserved at the dump."));
        QVERIFY(contains(html, "Missing without a trace: the timeline"));
        QVERIFY(contains(html, "Allocator state at the dump"));
        QVERIFY(contains(html, "Largest allocations live at the dump"));
        QVERIFY(!contains(html, "Live requested bytes by category after each trace event"));

        const Case wrapped = openFile(QStringLiteral("history/wrapped.pickle"));
        const std::string wrappedHtml = report::buildHtmlReport(wrapped, analyzeCase(wrapped));
        QVERIFY(contains(wrappedHtml, "class=\"history truncated\""));
        QVERIFY(contains(wrappedHtml, "(&quot;ghost&quot; frees)") || contains(wrappedHtml, "(&#34;ghost&#34; frees)"));
        QVERIFY(contains(wrappedHtml, "The curve starts at 448.00 MiB: memory older than the trace"));
        QVERIFY(contains(wrappedHtml, "Live requested bytes by category after each trace event"));
    }
};

QTEST_GUILESS_MAIN(TestTraceHistory)
#include "tst_tracehistory.moc"
