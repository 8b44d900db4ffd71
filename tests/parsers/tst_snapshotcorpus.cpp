#include "common/testutil.h"
#include "parsers/pickle/snapshotcompare.h"
#include "parsers/snapshotreader.h"

#include <QDir>
#include <QTest>

#include <nlohmann/json.hpp>

#include <map>
#include <set>

using namespace oomlens;

namespace {

std::string_view view(const QByteArray& bytes)
{
    return std::string_view(bytes.constData(), static_cast<size_t>(bytes.size()));
}

QString snapshotsDir()
{
    return test::corpusDir() + QStringLiteral("/snapshots");
}

std::vector<nlohmann::json> manifest()
{
    std::vector<nlohmann::json> entries;
    const QByteArray text = test::readFile(snapshotsDir() + QStringLiteral("/MANIFEST.jsonl"));
    for (const QByteArray& line : text.split('\n')) {
        if (!line.trimmed().isEmpty())
            entries.push_back(nlohmann::json::parse(line.constData(), line.constData() + line.size()));
    }
    return entries;
}

SnapshotReadResult read(const QByteArray& bytes, SnapshotDecoder decoder)
{
    SnapshotReadOptions options;
    options.decoder = decoder;
    options.allowFallback = false;
    return readSnapshot(view(bytes), options);
}

} // namespace

// Every real snapshot in ../shared/corpus opens, agrees with MANIFEST.jsonl, and decodes to the
// same model with the native decoder and with CPython's own unpickler.
class TestSnapshotCorpus : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void initTestCase()
    {
        OOMLENS_REQUIRE_SHARED();
        QVERIFY(QDir(snapshotsDir()).exists());
    }

    void matchesManifest_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QByteArray>("entry");
        if (!test::hasShared())
            return;
        for (const auto& entry : manifest()) {
            const auto name = entry.at("file").get<std::string>();
            QTest::newRow(name.c_str()) << QString::fromStdString(name) << QByteArray::fromStdString(entry.dump());
        }
        QCOMPARE(manifest().size(), size_t(40));
    }

    void matchesManifest()
    {
        OOMLENS_REQUIRE_SHARED();
        QFETCH(QString, file);
        QFETCH(QByteArray, entry);
        const auto expected = nlohmann::json::parse(entry.constData());
        const QByteArray bytes = test::readFile(snapshotsDir() + QLatin1Char('/') + file);
        QVERIFY(looksLikeSnapshot(view(bytes)));
        const auto result = read(bytes, SnapshotDecoder::Native);
        QVERIFY2(result.snapshot, result.error.c_str());
        const Snapshot& s = *result.snapshot;

        QCOMPARE(s.segments.size(), expected.at("n_segments").get<size_t>());
        QCOMPARE(s.blocks.size(), expected.at("n_blocks").get<size_t>());
        QCOMPARE(s.totalTraceEvents(), expected.at("trace_entries_total").get<size_t>());
        const auto perDevice = expected.at("trace_entries_per_device").get<std::vector<size_t>>();
        QCOMPARE(s.traces.size(), perDevice.size());
        for (size_t d = 0; d < perDevice.size(); ++d) {
            QCOMPARE(s.traces[d].device, int32_t(d));
            QCOMPARE(s.traces[d].events.size(), perDevice[d]);
        }

        std::map<std::string, size_t> actions;
        for (const auto& trace : s.traces) {
            for (const auto& event : trace.events)
                ++actions[std::string(traceActionName(event.action))];
        }
        QCOMPARE(actions, (expected.at("trace_actions").get<std::map<std::string, size_t>>()));
        QCOMPARE(actions.count("oom") > 0, expected.at("has_oom_action").get<bool>());

        std::set<int32_t> devices;
        std::set<bool> expandable;
        uint64_t reserved = 0;
        uint64_t allocated = 0;
        for (const auto& segment : s.segments) {
            devices.insert(segment.device);
            expandable.insert(segment.isExpandable);
            reserved += segment.totalSize;
            allocated += segment.allocatedSize;
            // Blocks are contiguous per segment and tile it.
            uint64_t sum = 0;
            for (uint32_t b = 0; b < segment.blockCount; ++b)
                sum += s.blocks[segment.firstBlock + b].size;
            QCOMPARE(sum, segment.totalSize);
            if (segment.blockCount > 0)
                QCOMPARE(s.blocks[segment.firstBlock].address, segment.address);
        }
        QCOMPARE(devices, (expected.at("devices_in_segments").get<std::set<int32_t>>()));
        if (expected.at("expandable").is_null())
            QCOMPARE(expandable, std::set<bool> { false });
        else
            QCOMPARE(expandable, (expected.at("expandable").get<std::set<bool>>()));
        const double MiB = 1024.0 * 1024.0;
        QVERIFY(qAbs(double(reserved) / MiB - expected.at("reserved_MiB").get<double>()) < 0.01);
        QVERIFY(qAbs(double(allocated) / MiB - expected.at("allocated_MiB").get<double>()) < 0.01);

        if (expected.at("format").get<std::string>() == "list")
            QCOMPARE(s.era, Snapshot::Era::SegmentList);
        if (!expected.at("external_annotations").is_null())
            QCOMPARE(s.annotations.size(), expected.at("external_annotations").get<size_t>());
        if (!expected.at("allocator_conf").is_null()) {
            QVERIFY(s.allocatorSettings);
            QCOMPARE(s.allocatorSettings->allocConf, expected.at("allocator_conf").get<std::string>());
        }
        const bool traceFrames = std::any_of(s.traces.begin(), s.traces.end(), [](const DeviceTrace& t) {
            return std::any_of(t.events.begin(), t.events.end(),
                [](const TraceEvent& e) { return e.stack != FrameTable::emptyStack(); });
        });
        QCOMPARE(traceFrames, expected.at("trace_frames").get<bool>());
        QVERIFY(std::all_of(s.warnings.begin(), s.warnings.end(),
            [](const std::string& w) { return w.find("unknown") == std::string::npos; }));
    }

    void decodersAgree_data()
    {
        QTest::addColumn<QString>("file");
        if (!test::hasShared())
            return;
        for (const auto& entry : manifest()) {
            const auto name = entry.at("file").get<std::string>();
            QTest::newRow(name.c_str()) << QString::fromStdString(name);
        }
    }

    void decodersAgree()
    {
        OOMLENS_REQUIRE_SHARED();
        QFETCH(QString, file);
        const QByteArray bytes = test::readFile(snapshotsDir() + QLatin1Char('/') + file);
        const auto native = read(bytes, SnapshotDecoder::Native);
        const auto python = read(bytes, SnapshotDecoder::Python);
        QVERIFY2(native.snapshot, native.error.c_str());
        QVERIFY2(python.snapshot, python.error.c_str());
        std::string diff;
        QVERIFY2(sameSnapshot(*native.snapshot, *python.snapshot, &diff), diff.c_str());
    }
};

QTEST_GUILESS_MAIN(TestSnapshotCorpus)
#include "tst_snapshotcorpus.moc"
