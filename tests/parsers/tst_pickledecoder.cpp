#include "common/testutil.h"
#include "parsers/pickle/snapshotcompare.h"
#include "parsers/snapshotreader.h"

#include <QTest>

#include <limits>

using namespace oomlens;

namespace {

std::string_view view(const QByteArray& bytes)
{
    return std::string_view(bytes.constData(), static_cast<size_t>(bytes.size()));
}

// Both decoders on the same bytes; they must agree, and the native result is returned.
std::shared_ptr<const Snapshot> decodeBoth(const QByteArray& bytes, std::string* error)
{
    SnapshotReadOptions options;
    options.allowFallback = false;
    const auto native = readSnapshot(view(bytes), options);
    options.decoder = SnapshotDecoder::Python;
    const auto python = readSnapshot(view(bytes), options);
    if (!native.snapshot || !python.snapshot) {
        *error = native.error + " | " + python.error;
        if (!native.snapshot && !python.snapshot)
            return nullptr;
        *error += " (only one decoder failed)";
        return nullptr;
    }
    if (!sameSnapshot(*native.snapshot, *python.snapshot, error))
        return nullptr;
    return native.snapshot;
}

// Edge values in every integer width the pickler chooses from (BININT1/2, BININT, LONG1, and
// INT/LONG text in protocols 0-1), and text beyond ASCII.
const char* edgeScript = R"(
import pickle, sys
ints = [0, 1, 255, 256, 65535, 65536, 2**31 - 1, 2**31, 2**32, 2**63 - 1, 2**63, 2**64 - 1, -1, -2**31, -2**63]
frames = [{'filename': 'модуль/ü.py', 'line': 7, 'name': '<lambda>\u2028x'}, {'filename': 'e\U0001F600.py', 'line': 2**31 - 1, 'name': 'f'}]
trace = [{'action': 'alloc', 'addr': v, 'size': v, 'stream': v, 'time_us': v, 'frames': frames,
          'user_metadata': 'ü\u20ac\U0001F600'} for v in ints]
snap = {'segments': [], 'device_traces': [trace],
        'allocator_settings': {'garbage_collection_threshold': 0.123456789, 'max_split_size': -1,
                               'expandable_segments': True, 'PYTORCH_CUDA_ALLOC_CONF': 'a\\nb'}}
sys.stdout.buffer.write(pickle.dumps(snap, protocol=int(sys.argv[1])))
)";

// Opcodes CPython's pickler does not emit for a snapshot, assembled by hand; pickle.loads must
// accept the result, so the script checks that before printing it.
const char* assembledScript = R"(
import pickle, struct, sys
def su(s): b = s.encode(); return b'\x8c' + bytes([len(b)]) + b
def bu8(s): b = s.encode(); return b'\x8d' + struct.pack('<Q', len(b)) + b
frame = b'}' + b'(' + b'U\x08filename' + b'T\x04\x00\x00\x00a.py' + su('line') + b'K\x05' + su('name') + bu8('fn') + b'u'
frames = b']' + frame + b'p7\n' + b'a' + b'g7\n' + b'a'
block = (b'}' + su('size') + b'M\x00\x02' + b's' + su('state') + b'V\\u0069nactive\n' + b's' + su('frames') + frames + b's')
segment = (b'(' + su('device') + b'I3\n' + su('address') + b'L4096L\n' + su('total_size') + b'\x8b\x02\x00\x00\x00\x00\x02'
           + su('is_expandable') + b'I01\n' + su('segment_pool_id') + b'(K\x01K\x02t' + su('blocks') + b'](' + block + b'e'
           + su('extra') + b'(C\x02abB\x01\x00\x00\x00c\x8e\x01\x00\x00\x00\x00\x00\x00\x00d\x96\x00\x00\x00\x00\x00\x00\x00\x00l'
           + su('set') + b'\x8f(K\x01K\x02\x90' + su('frozen') + b'(K\x03\x91' + su('none') + b'N'
           + b'd')
settings = b'}' + su('garbage_collection_threshold') + b'F0.25\n' + b's'
data = (b'\x80\x02' + b'(' + su('segments') + b'(' + segment + b'l' + su('allocator_settings') + settings
        + su('junk') + b'K\x09' + b'2' + b'0' + b'(K\x01K\x02' + b'1' + b'd' + b'.')
pickle.loads(data)
sys.stdout.buffer.write(data)
)";

} // namespace

class TestPickleDecoder : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void edgeValues_data()
    {
        QTest::addColumn<int>("protocol");
        for (int p = 0; p <= 5; ++p)
            QTest::newRow(qPrintable(QStringLiteral("protocol %1").arg(p))) << p;
    }

    void edgeValues()
    {
        QFETCH(int, protocol);
        const QByteArray bytes = test::runPython(QString::fromUtf8(edgeScript), { QString::number(protocol) });
        QVERIFY(!bytes.isEmpty());
        std::string error;
        const auto s = decodeBoth(bytes, &error);
        QVERIFY2(s, error.c_str());
        const std::vector<uint64_t> expected { 0, 1, 255, 256, 65535, 65536, (1ULL << 31) - 1, 1ULL << 31, 1ULL << 32,
            (1ULL << 63) - 1, 1ULL << 63, ~0ULL, ~0ULL, uint64_t(-(int64_t(1) << 31)), 1ULL << 63 };
        const auto& events = s->traces.at(0).events;
        QCOMPARE(events.size(), expected.size());
        for (size_t i = 0; i < expected.size(); ++i) {
            QCOMPARE(events[i].addr, expected[i]);
            QCOMPARE(events[i].size, expected[i]);
            QCOMPARE(uint64_t(events[i].timeUs), expected[i]);
            QCOMPARE(s->strings->get(events[i].userMetadata), std::string_view("ü\u20ac\U0001F600"));
        }
        const auto stack = s->frames->stack(events[0].stack);
        QCOMPARE(stack.size(), size_t(2));
        const Frame& first = s->frames->frame(stack[0]);
        QCOMPARE(s->strings->get(first.filename), std::string_view("модуль/ü.py"));
        QCOMPARE(s->strings->get(first.name), std::string_view("<lambda>\u2028x"));
        QCOMPARE(s->frames->frame(stack[1]).line, std::numeric_limits<int32_t>::max());
        QCOMPARE(s->strings->get(s->frames->frame(stack[1]).filename), std::string_view("e\U0001F600.py"));
        QVERIFY(s->allocatorSettings);
        QCOMPARE(s->allocatorSettings->garbageCollectionThreshold, 0.123456789);
        QCOMPARE(s->allocatorSettings->maxSplitSize, int64_t(-1));
        QVERIFY(s->allocatorSettings->expandableSegments);
        QCOMPARE(s->allocatorSettings->allocConf, std::string("a\\nb"));
    }

    void integersBeyond64BitsAreAnError()
    {
        const QByteArray bytes = test::runPython(
            QStringLiteral("import pickle,sys; sys.stdout.buffer.write(pickle.dumps({'segments': [], 'device_traces': "
                           "[[{'action': 'alloc', 'addr': 2**64, 'size': 1, 'stream': 0}]]}, protocol=4))"));
        for (const auto decoder : { SnapshotDecoder::Native, SnapshotDecoder::Python }) {
            SnapshotReadOptions options;
            options.decoder = decoder;
            const auto result = readSnapshot(view(bytes), options);
            QVERIFY(!result.snapshot);
            QVERIFY2(result.error.find("the trace entry field 'addr' does not fit in 64 bits") != std::string::npos,
                result.error.c_str());
        }
    }

    void handAssembledOpcodes()
    {
        const QByteArray bytes = test::runPython(QString::fromUtf8(assembledScript));
        QVERIFY(!bytes.isEmpty());
        std::string error;
        const auto s = decodeBoth(bytes, &error);
        QVERIFY2(s, error.c_str());
        QCOMPARE(s->segments.size(), size_t(1));
        const Segment& segment = s->segments[0];
        QCOMPARE(segment.device, 3);
        QCOMPARE(segment.address, uint64_t(4096));
        QCOMPARE(segment.totalSize, uint64_t(512));
        QVERIFY(segment.isExpandable);
        QCOMPARE(segment.pool, (PoolId { 1, 2 }));
        QCOMPARE(s->blocks.size(), size_t(1));
        QCOMPARE(s->blocks[0].size, uint64_t(512));
        QCOMPARE(s->blocks[0].address, uint64_t(4096)); // from the segment base
        QCOMPARE(s->blocks[0].state, BlockState::Inactive);
        // The same frame twice: once built, once fetched back with the text GET opcode.
        const auto stack = s->frames->stack(s->blocks[0].stack);
        QCOMPARE(stack.size(), size_t(2));
        QCOMPARE(stack[0], stack[1]);
        QCOMPARE(s->strings->get(s->frames->frame(stack[0]).filename), std::string_view("a.py"));
        QCOMPARE(s->strings->get(s->frames->frame(stack[0]).name), std::string_view("fn"));
        QCOMPARE(s->frames->frame(stack[0]).line, 5);
        QVERIFY(s->allocatorSettings);
        QCOMPARE(s->allocatorSettings->garbageCollectionThreshold, 0.25);
    }
};

QTEST_GUILESS_MAIN(TestPickleDecoder)
#include "tst_pickledecoder.moc"
