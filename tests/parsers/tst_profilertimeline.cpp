#include "common/testutil.h"
#include "core/caseanalysis.h"
#include "core/jsonexport.h"
#include "core/profilercomparison.h"
#include "core/profilertimeline.h"
#include "core/report/htmlreport.h"
#include "parsers/inputloader.h"
#include "parsers/profilertimelinereader.h"

#include <QTest>

#include <nlohmann/json.hpp>

#include <zlib.h>

using namespace oomlens;

namespace {

std::string gzipped(const std::string& text)
{
    z_stream zs {};
    deflateInit2(&zs, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 16 + MAX_WBITS, 8, Z_DEFAULT_STRATEGY);
    std::string out(deflateBound(&zs, static_cast<uLong>(text.size())) + 64, '\0');
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(text.data()));
    zs.avail_in = static_cast<uInt>(text.size());
    zs.next_out = reinterpret_cast<Bytef*>(out.data());
    zs.avail_out = static_cast<uInt>(out.size());
    deflate(&zs, Z_FINISH);
    out.resize(out.size() - zs.avail_out);
    deflateEnd(&zs);
    return out;
}

QString corpusTimeline()
{
    return test::corpusDir() + QStringLiteral("/profiler/memory_timeline.raw.gz");
}

std::string readBytes(const QString& path)
{
    const QByteArray bytes = test::readFile(path);
    return std::string(bytes.constData(), static_cast<size_t>(bytes.size()));
}

// A small raw export written by hand: two parameters before profiling, an activation created and
// freed, an input turned into a temporary by an in-place op (INCREMENT_VERSION's pair), times in us.
const std::string smallRaw = R"([[-1, 1, 4096, 0], [-1, 1, 1024, 0],
  [100, 2, 8192, 4], [100, 2, 512, 2],
  [150, 3, -512, 2], [150, 3, 512, 3],
  [200, 2, 2048, 5], [250, 4, -8192, 4], [300, 2, 256, 6], [300, 2, 128, 7]])";

} // namespace

class TestProfilerTimeline : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void sniffsByContent_data()
    {
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<int>("kind");
        QTest::newRow("raw") << QByteArray::fromStdString(smallRaw) << int(ProfilerFileKind::Raw);
        QTest::newRow("raw gzip") << QByteArray::fromStdString(gzipped(smallRaw)) << int(ProfilerFileKind::Raw);
        QTest::newRow("coalesced") << QByteArray(
            R"([[0, 10], [[0, 1, 2, 3, 4, 5, 6, 7, 8], [0, 1, 2, 3, 4, 5, 6, 7, 9]]])")
                                   << int(ProfilerFileKind::Coalesced);
        QTest::newRow("chrome trace") << QByteArray(R"({"schemaVersion": 1, "traceEvents": []})")
                                      << int(ProfilerFileKind::ChromeTrace);
        QTest::newRow("html") << QByteArray("<html>\n<head><meta charset=\"utf-8\" /><title>GPU Memory Timeline "
                                            "HTML</title></head>\n<body><img src='data:image/png;base64,iVBO'></body>")
                              << int(ProfilerFileKind::Html);
        QTest::newRow("snapshot json list")
            << QByteArray(R"([{"total_size": 2097152, "blocks": []}])") << int(ProfilerFileKind::None);
        QTest::newRow("three numbers") << QByteArray("[[1, 2, 3], [4, 5, 6]]") << int(ProfilerFileKind::None);
        QTest::newRow("config") << QByteArray(R"({"model_type": "llama"})") << int(ProfilerFileKind::None);
        QTest::newRow("text") << QByteArray("RuntimeError: CUDA out of memory.") << int(ProfilerFileKind::None);
    }

    void sniffsByContent()
    {
        QFETCH(QByteArray, bytes);
        QFETCH(int, kind);
        QCOMPARE(int(sniffProfilerFile(std::string_view(bytes.constData(), size_t(bytes.size())))), kind);
    }

    void readsRawEvents()
    {
        const ProfilerReadResult result = readProfilerFile(smallRaw, "small.raw.json");
        QVERIFY2(!result.error, result.error ? result.error->c_str() : "");
        QCOMPARE(result.timelines.size(), size_t(1));
        const ProfilerTimeline& timeline = result.timelines[0];
        QCOMPARE(timeline.events, size_t(10));
        QCOMPARE(timeline.preexistingBytes, int64_t(5120));
        QVERIFY(!timeline.device);
        // -1 goes to the first time; one point per distinct time.
        QCOMPARE(timeline.points.size(), size_t(5));
        QCOMPARE(timeline.points.front().timeUs, int64_t(100));
        const ProfilerTimeline::Point* peak = timeline.peak();
        QVERIFY(peak);
        // At 200 us: parameters 5120, activation 8192, temporary 512 (was an input), gradient 2048.
        QCOMPARE(peak->timeUs, int64_t(200));
        QCOMPARE(peak->total(), int64_t(5120 + 8192 + 512 + 2048));
        QCOMPARE(peak->bytes[size_t(ProfilerCategory::Input)], int64_t(0));
        QCOMPARE(peak->bytes[size_t(ProfilerCategory::Temporary)], int64_t(512));
        const auto ours = toOomlensCategories(timeline.points.back().bytes);
        // AUTOGRAD_DETAIL counts as a temporary, None as unknown.
        QCOMPARE(ours[size_t(Category::Temporaries)], uint64_t(512 + 256));
        QCOMPARE(ours[size_t(Category::Unknown)], uint64_t(128));
        QCOMPARE(ours[size_t(Category::Activations)], uint64_t(0));
    }

    void categoryMapping()
    {
        QCOMPARE(oomlensCategory(ProfilerCategory::Parameter), Category::Parameters);
        QCOMPARE(oomlensCategory(ProfilerCategory::OptimizerState), Category::OptimizerState);
        QCOMPARE(oomlensCategory(ProfilerCategory::Input), Category::Inputs);
        QCOMPARE(oomlensCategory(ProfilerCategory::Temporary), Category::Temporaries);
        QCOMPARE(oomlensCategory(ProfilerCategory::Activation), Category::Activations);
        QCOMPARE(oomlensCategory(ProfilerCategory::Gradient), Category::Gradients);
        QCOMPARE(oomlensCategory(ProfilerCategory::AutogradDetail), Category::Temporaries);
        QCOMPARE(oomlensCategory(ProfilerCategory::None), Category::Unknown);
        QCOMPARE(std::string(profilerCategoryName(ProfilerCategory::AutogradDetail)), std::string("AUTOGRAD_DETAIL"));
        QCOMPARE(std::string(profilerCategoryName(ProfilerCategory::None)), std::string("None"));
    }

    void readsCoalescedJson()
    {
        // export_memory_timeline("x.json"): a leading slot, then the 8 categories, per time.
        const std::string json = R"([[-1, 5, 9], [[0, 100, 0, 0, 0, 0, 0, 0, 0], [0, 100, 0, 0, 0, 300, 0, 0, 0],
            [0, 100, 50, 0, 0, 0, 20, 0, 0]]])";
        const ProfilerReadResult result = readProfilerFile(json, "t.json");
        QVERIFY(!result.error);
        const ProfilerTimeline& timeline = result.timelines.at(0);
        QCOMPARE(timeline.format, ProfilerTimelineFormat::Coalesced);
        QCOMPARE(timeline.points.size(), size_t(3));
        QCOMPARE(timeline.peak()->timeUs, int64_t(5));
        QCOMPARE(timeline.peak()->bytes[size_t(ProfilerCategory::Activation)], int64_t(300));
        QCOMPARE(timeline.points[2].bytes[size_t(ProfilerCategory::Gradient)], int64_t(20));
    }

    void readsChromeTraceMemoryEvents()
    {
        const std::string trace = R"({"traceEvents": [
            {"ph": "X", "name": "aten::mm", "ts": 5, "dur": 3},
            {"ph": "i", "name": "[memory]", "ts": 10.4, "args": {"Device Type": 1, "Device Id": 0, "Bytes": 512,
              "Total Allocated": 512, "Total Reserved": 2097152}},
            {"ph": "i", "name": "[memory]", "ts": 12, "args": {"Device Type": 0, "Device Id": -1, "Bytes": 64,
              "Total Allocated": 64, "Total Reserved": 0}},
            {"ph": "i", "name": "[memory]", "ts": 20, "args": {"Device Type": 1, "Device Id": 0, "Bytes": 1024,
              "Total Allocated": 1536, "Total Reserved": 2097152}},
            {"ph": "i", "name": "[memory]", "ts": 30, "args": {"Device Type": 1, "Device Id": 0, "Bytes": -512,
              "Total Allocated": 1024, "Total Reserved": 2097152}}]})";
        const ProfilerReadResult result = readProfilerFile(trace, "trace.json");
        QVERIFY2(!result.error, result.error ? result.error->c_str() : "");
        QCOMPARE(result.timelines.size(), size_t(1)); // the host's events are not the GPU's
        const ProfilerTimeline& timeline = result.timelines[0];
        QCOMPARE(timeline.device.value_or(""), std::string("cuda:0"));
        QCOMPARE(timeline.events, size_t(3));
        QCOMPARE(timeline.peak()->total(), int64_t(1536));
        QCOMPARE(timeline.peak()->timeUs, int64_t(20));
        QCOMPARE(timeline.points.front().timeUs, int64_t(10));
        QVERIFY(!timeline.warnings.empty());
    }

    void clearErrors_data()
    {
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<QString>("expected");
        QTest::newRow("html") << QByteArray("<html><head><title>GPU Memory Timeline HTML</title></head></html>")
                              << QStringLiteral("export it as JSON");
        QTest::newRow("no memory events") << QByteArray(R"({"traceEvents": [{"ph": "X", "name": "aten::mm"}]})")
                                          << QStringLiteral("profile_memory=True");
        QTest::newRow("bad category") << QByteArray("[[0, 2, 512, 9], [1, 4, -512, 9]]")
                                      << QStringLiteral("category index 9");
        QTest::newRow("cut json") << QByteArray("[[0, 2, 512, 1], [1, 4, -5") << QStringLiteral("not valid JSON");
        // Long enough that the head inflates (and sniffs) while the stream ends early.
        std::string longRaw = "[";
        for (int i = 0; i < 20000; ++i)
            longRaw += "[" + std::to_string(i) + ", 2, " + std::to_string(512 + i % 97) + ", " + std::to_string(i % 8)
                + "], ";
        longRaw += "[20000, 4, -512, 0]]";
        const std::string longGzip = gzipped(longRaw);
        QTest::newRow("cut gzip") << QByteArray::fromStdString(longGzip.substr(0, longGzip.size() / 2))
                                  << QStringLiteral("gzip");
    }

    void clearErrors()
    {
        QFETCH(QByteArray, bytes);
        QFETCH(QString, expected);
        Case input;
        addInput(input, "x", std::string_view(bytes.constData(), size_t(bytes.size())));
        QCOMPARE(input.inputs.size(), size_t(1));
        QCOMPARE(input.inputs[0].kind, InputKind::ProfilerTimeline);
        QVERIFY(input.inputs[0].error);
        QVERIFY2(QString::fromStdString(*input.inputs[0].error).contains(expected), input.inputs[0].error->c_str());
        QVERIFY(input.profilerTimelines.empty());
    }

    // HolisticTraceAnalysis's test data: a real export_memory_timeline_raw, gzip, times in ns.
    // The figures below were read from it apart from this parser (Python, json and a running sum
    // per category; the state at the end of each time).
    void realRawExport()
    {
        OOMLENS_REQUIRE_SHARED();
        const std::string bytes = readBytes(corpusTimeline());
        QCOMPARE(sniffProfilerFile(bytes), ProfilerFileKind::Raw);
        Case input;
        addInput(input, "memory_timeline.raw.gz", bytes);
        QCOMPARE(input.inputs.at(0).kind, InputKind::ProfilerTimeline);
        QVERIFY(!input.inputs[0].error);
        QCOMPARE(input.profilerTimelines.size(), size_t(1));
        const ProfilerTimeline& timeline = input.profilerTimelines[0];
        QCOMPARE(timeline.events, size_t(16845));
        QCOMPARE(timeline.points.size(), size_t(7720));
        QCOMPARE(timeline.preexistingBytes, int64_t(332060904));
        const ProfilerTimeline::Point* peak = timeline.peak();
        QCOMPARE(peak->total(), int64_t(3082832104));
        QCOMPARE(peak->timeUs, int64_t(1696966047194486));
        const ProfilerCategoryBytes expected { 102440608, 102228128, 19395584, 0, 2592465920, 67858432, 64225280,
            134218152 };
        QCOMPARE(peak->bytes, expected);
        QCOMPARE(timeline.lastTimeUs() - timeline.firstTimeUs(), int64_t(1696966048083248 - 1696966047096061));

        const CaseAnalysis analysis = analyzeCase(input);
        const nlohmann::ordered_json json = caseToJson(input, analysis);
        const auto& entry = json.at("profiler_timelines").at(0);
        QCOMPARE(entry.at("format").get<std::string>(), std::string("raw"));
        QVERIFY(entry.at("device").is_null());
        QCOMPARE(entry.at("events").get<int64_t>(), int64_t(16845));
        QCOMPARE(entry.at("peak_bytes").get<int64_t>(), int64_t(3082832104));
        QCOMPARE(entry.at("peak_time_us").get<int64_t>(), int64_t(1696966047194486));
        QCOMPARE(entry.at("categories_at_peak").at("activations").get<int64_t>(), int64_t(2592465920));
        QCOMPARE(entry.at("categories_at_peak").at("temporaries").get<int64_t>(), int64_t(64225280));
        QCOMPARE(entry.at("categories_at_peak").at("unknown").get<int64_t>(), int64_t(134218152));
        QCOMPARE(entry.at("pytorch_categories_at_peak").at("AUTOGRAD_DETAIL").get<int64_t>(), int64_t(64225280));
        QCOMPARE(entry.at("pytorch_categories_at_peak").at("OPTIMIZER_STATE").get<int64_t>(), int64_t(102228128));
        QVERIFY(entry.at("compared_with_snapshot").is_null());
        QCOMPARE(json.at("inputs").at(0).at("kind").get<std::string>(), std::string("profiler_timeline"));

        report::ReportOptions options;
        const std::string html = report::buildHtmlReport(input, analysis, options);
        QVERIFY(html.find("id=\"profiler\"") != std::string::npos);
        QVERIFY(html.find("AUTOGRAD_DETAIL") != std::string::npos);
        const size_t section = html.find("id=\"profiler\"");
        QVERIFY(html.find("<svg", section) != std::string::npos);
    }

    // A snapshot and a profiler timeline opened together: the two categorisations side by side.
    void besideASnapshot()
    {
        Case input;
        addFile(input, QString(test::testDataDir() + QStringLiteral("/snapshots/newest.pickle.gz")).toStdString());
        addInput(input, "small.raw.json", smallRaw);
        QCOMPARE(input.snapshots.size(), size_t(1));
        QCOMPARE(input.profilerTimelines.size(), size_t(1));
        const CaseAnalysis analysis = analyzeCase(input);
        const auto comparisons = compareProfilerWithSnapshots(input, analysis);
        QCOMPARE(comparisons.size(), size_t(1));
        const ProfilerComparison& comparison = comparisons[0];
        QCOMPARE(comparison.profilerPeakBytes, uint64_t(5120 + 8192 + 512 + 2048));
        QCOMPARE(comparison.snapshotPeakBytes, analysis.snapshots[0].primary()->peakAllocatedBytes);
        uint64_t snapshotSum = 0;
        uint64_t profilerSum = 0;
        for (const ProfilerComparisonRow& row : comparison.rows) {
            snapshotSum += row.snapshotBytes;
            profilerSum += row.profilerBytes;
            if (row.category == Category::Temporaries)
                QCOMPARE(row.profilerSources,
                    (std::vector<ProfilerCategory> { ProfilerCategory::Temporary, ProfilerCategory::AutogradDetail }));
        }
        QCOMPARE(snapshotSum, comparison.snapshotPeakBytes);
        QCOMPARE(profilerSum, comparison.profilerPeakBytes);
        const nlohmann::ordered_json json = caseToJson(input, analysis);
        const auto& compared = json.at("profiler_timelines").at(0).at("compared_with_snapshot");
        QCOMPARE(compared.at("profiler_peak_bytes").get<uint64_t>(), comparison.profilerPeakBytes);
        QVERIFY(!compared.at("categories").empty());
        const std::string html = report::buildHtmlReport(input, analysis, report::ReportOptions {});
        QVERIFY(html.find("profiler-comparison") != std::string::npos);
    }
};

QTEST_GUILESS_MAIN(TestProfilerTimeline)
#include "tst_profilertimeline.moc"
