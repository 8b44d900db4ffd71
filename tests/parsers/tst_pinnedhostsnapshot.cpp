#include "common/snapshotbytes.h"
#include "common/testutil.h"

#include <QTest>

#include <nlohmann/json.hpp>

#include <algorithm>

using namespace oomlens;

namespace {

QString fixturePath()
{
    return test::testDataDir() + QStringLiteral("/hostmemory/pinned_host.pickle");
}

std::shared_ptr<const Snapshot> read(const QByteArray& bytes, SnapshotDecoder decoder = SnapshotDecoder::Native)
{
    return test::readSnapshotBytes(bytes, decoder);
}

// The fixture rewritten by Python: `change` is a statement on the unpickled dict `d`.
QByteArray rewritten(const char* change)
{
    const QString script = QStringLiteral("import pickle, sys\n"
                                          "d = pickle.load(open(sys.argv[1], 'rb'))\n")
        + QLatin1String(change) + QStringLiteral("\nsys.stdout.buffer.write(pickle.dumps(d, protocol=4))\n");
    return test::runPython(script, { fixturePath() });
}

nlohmann::json label()
{
    const QByteArray bytes = test::readFile(test::testDataDir() + QStringLiteral("/hostmemory/pinned_host.json"));
    return nlohmann::json::parse(bytes.constData(), bytes.constData() + bytes.size());
}

} // namespace

// Pinned host memory (`host_segments`, `host_traces`, PyTorch 2.14+ with
// record_pinned_host_memory=True) is read into Snapshot::hostMemory, beside the devices and
// never among them.
class TestPinnedHostSnapshot : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void readsHostSegmentsAndTrace_data()
    {
        QTest::addColumn<int>("decoder");
        QTest::newRow("native") << int(SnapshotDecoder::Native);
        QTest::newRow("python") << int(SnapshotDecoder::Python);
    }
    void readsHostSegmentsAndTrace()
    {
        QFETCH(int, decoder);
        const auto snapshot = read(test::readFile(fixturePath()), static_cast<SnapshotDecoder>(decoder));
        QVERIFY(snapshot);
        const auto truth = label();
        QVERIFY(snapshot->hostMemory);
        const PinnedHostMemory& host = *snapshot->hostMemory;
        QCOMPARE(host.segments.size(), truth["host_segments"].get<size_t>());
        QCOMPARE(host.blocks.size(), host.segments.size()); // the host allocator never splits a block
        QCOMPARE(host.events.size(), truth["host_trace_events"].get<size_t>());
        QCOMPARE(host.events.front().action, TraceAction::SegmentAlloc);
        QCOMPARE(host.events.back().action, TraceAction::FreeCompleted);
        uint64_t reserved = 0;
        for (const Segment& segment : host.segments)
            reserved += segment.totalSize;
        QCOMPARE(reserved, truth["host_reserved_bytes"].get<uint64_t>());
        // The stacks came along: the staging buffer's, then the DataLoader's pinning thread's.
        auto innermost = [&](const TraceEvent& event) {
            const auto stack = snapshot->frames->stack(event.stack);
            return stack.empty() ? std::string_view() : snapshot->strings->get(snapshot->frames->frame(stack[0]).name);
        };
        QCOMPARE(innermost(host.events[0]), std::string_view("make_staging_buffer"));
        QCOMPARE(innermost(host.events[2]), std::string_view("pin_memory"));
        QVERIFY(std::none_of(snapshot->warnings.begin(), snapshot->warnings.end(),
            [](const std::string& w) { return w.find("host") != std::string::npos; }));
    }

    void hostMemoryIsNoDevice()
    {
        const auto with = read(test::readFile(fixturePath()));
        const auto without = read(rewritten("del d['host_segments'], d['host_traces']"));
        QVERIFY(with && without);
        QVERIFY(!without->hostMemory);
        QCOMPARE(with->devices(), without->devices());
        QCOMPARE(with->segments.size(), without->segments.size());
        QCOMPARE(with->blocks.size(), without->blocks.size());
        QCOMPARE(with->totalTraceEvents(), without->totalTraceEvents());
        QCOMPARE(with->totalTraceEvents(), label()["device_trace_events"].get<size_t>());
        uint64_t reserved = 0;
        for (const Segment& segment : with->segments)
            reserved += segment.totalSize;
        QCOMPARE(reserved, label()["device_reserved_bytes"].get<uint64_t>());
    }

    // A list of entry lists (the device_traces shape) is read too, joined in order; empty lists
    // (nothing pinned, or the host side not recorded) leave no host memory to show; a key of the
    // wrong type is a warning, not a failure.
    void otherShapes()
    {
        const auto nested = read(rewritten("d['host_traces'] = [d['host_traces'][:4], [], d['host_traces'][4:]]"));
        QVERIFY(nested && nested->hostMemory);
        QCOMPARE(nested->hostMemory->events.size(), label()["host_trace_events"].get<size_t>());
        QCOMPARE(nested->hostMemory->events[4].action, TraceAction::SegmentAlloc);

        const auto empty = read(rewritten("d['host_segments'] = []; d['host_traces'] = []"));
        QVERIFY(empty && !empty->hostMemory);
        QCOMPARE(empty->segments.size(), label()["device_segments"].get<size_t>());

        const auto odd = read(rewritten("d['host_segments'] = 7; d['host_traces'] = {'a': 1}"));
        QVERIFY(odd);
        QVERIFY(!odd->hostMemory);
        QVERIFY(std::any_of(odd->warnings.begin(), odd->warnings.end(),
            [](const std::string& w) { return w.find("host_segments is a") != std::string::npos; }));
        QVERIFY(std::any_of(odd->warnings.begin(), odd->warnings.end(),
            [](const std::string& w) { return w.find("host_traces is a") != std::string::npos; }));
    }
};

QTEST_GUILESS_MAIN(TestPinnedHostSnapshot)
#include "tst_pinnedhostsnapshot.moc"
