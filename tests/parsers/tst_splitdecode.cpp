#include "common/testutil.h"
#include "parsers/pickle/nativeunpickler.h"
#include "parsers/pickle/snapshotbuilder.h"
#include "parsers/pickle/snapshotcompare.h"

#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <cstring>

using namespace oomlens;

namespace {

// A trace list split between two decoders (nativeunpicklersplit.cpp) must give what one decoder
// gives, interned ids included: the views and reports order by them.

struct Decoded
{
    Snapshot snapshot;
    bool split = false;
};

// Small files spend a larger share in their first training step, where new frames keep coming:
// the split starts later than on a big file, so that its first try holds.
Decoded decode(const QByteArray& bytes, uint64_t splitFrom, double splitStart = 0.25)
{
    pickle::SnapshotBuilder builder;
    builder.setSizeHint(static_cast<uint64_t>(bytes.size()));
    pickle::NativeUnpickler unpickler(builder);
    unpickler.splitFrom = splitFrom;
    unpickler.splitStart = splitStart;
    const auto root = unpickler.decode(std::string_view(bytes.constData(), static_cast<size_t>(bytes.size())));
    return { builder.finish(root), unpickler.wasSplit() };
}

// Same tables, same ids, same records: what sameSnapshot (which compares by text) lets pass.
QString firstIdDifference(const Snapshot& a, const Snapshot& b)
{
    if (a.strings->size() != b.strings->size())
        return QStringLiteral("string count %1 vs %2").arg(a.strings->size()).arg(b.strings->size());
    for (uint32_t i = 0; i < a.strings->size(); ++i) {
        if (a.strings->get(StringId(i)) != b.strings->get(StringId(i)))
            return QStringLiteral("string %1").arg(i);
    }
    if (a.frames->frameCount() != b.frames->frameCount() || a.frames->stackCount() != b.frames->stackCount())
        return QStringLiteral("frame or stack count");
    for (uint32_t i = 0; i < a.frames->frameCount(); ++i) {
        if (!(a.frames->frame(FrameId(i)) == b.frames->frame(FrameId(i))))
            return QStringLiteral("frame %1").arg(i);
    }
    for (uint32_t i = 0; i < a.frames->stackCount(); ++i) {
        const auto x = a.frames->stack(StackId(i));
        const auto y = b.frames->stack(StackId(i));
        if (x.size() != y.size() || !std::equal(x.begin(), x.end(), y.begin()))
            return QStringLiteral("stack %1").arg(i);
    }
    if (a.traces.size() != b.traces.size())
        return QStringLiteral("trace count");
    for (size_t t = 0; t < a.traces.size(); ++t) {
        const auto& x = a.traces[t].events;
        const auto& y = b.traces[t].events;
        if (x.size() != y.size())
            return QStringLiteral("trace %1 length %2 vs %3").arg(t).arg(x.size()).arg(y.size());
        for (size_t i = 0; i < x.size(); ++i) {
            if (x[i].stack != y[i].stack || x[i].compileContext != y[i].compileContext
                || x[i].userMetadata != y[i].userMetadata || x[i].pool != y[i].pool || x[i].addr != y[i].addr
                || x[i].size != y[i].size || x[i].timeUs != y[i].timeUs || x[i].action != y[i].action
                || x[i].stream != y[i].stream)
                return QStringLiteral("trace %1 event %2").arg(t).arg(i);
        }
    }
    if (a.warnings != b.warnings)
        return QStringLiteral("warnings");
    if (a.entryPools != b.entryPools)
        return QStringLiteral("entry pools");
    return {};
}

enum class Expect { Split, OneDecoder, Either };

void checkSameAsOneDecoder(const QByteArray& bytes, Expect expect)
{
    const Decoded serial = decode(bytes, UINT64_MAX);
    QVERIFY(!serial.split);
    const Decoded split = decode(bytes, 0);
    if (expect != Expect::Either)
        QCOMPARE(split.split, expect == Expect::Split);
    std::string difference;
    QVERIFY2(sameSnapshot(serial.snapshot, split.snapshot, &difference), difference.c_str());
    const QString ids = firstIdDifference(serial.snapshot, split.snapshot);
    QVERIFY2(ids.isEmpty(), qPrintable(ids));
}

QByteArray generated(const QStringList& options)
{
    QTemporaryDir dir;
    const QString out = dir.filePath(QStringLiteral("snapshot.pickle"));
    QProcess process;
    process.start(QStringLiteral(OOMLENS_PYTHON),
        QStringList { QStringLiteral(OOMLENS_SOURCE_DIR "/bench/gen_snapshot.py"), QStringLiteral("--out"), out }
            + options);
    if (!process.waitForFinished(120000) || process.exitCode() != 0)
        qWarning("gen_snapshot.py failed: %s", process.readAllStandardError().constData());
    return test::readFile(out);
}

// Trace entries built by hand, pickled by CPython (protocol 4), for what the generator never
// writes: `shape` picks the oddity, placed all through the trace so that the split meets it.
const char* oddTrace = R"(
import pickle, sys
shape = sys.argv[1]
frames = [{'filename': 'f%d.py' % i, 'line': i, 'name': 'fn%d' % i} for i in range(64)]
late_frames, late_tags = {}, {}
events = []
for i in range(40000):
    stack = [frames[i % 64], frames[(i * 7) % 64]]
    addr = 0x1000 * i
    metadata = ''
    if shape == 'fake_batch_bytes':
        addr = 0x28947d2865 + (i << 40)  # APPENDS MARK EMPTY_DICT MEMOIZE MARK inside a LONG1
    # Objects first pickled in the first half (after the split began), the same objects again
    # in the second half: memo GETs across the split point.
    if shape == 'late_frame' and i % 997 == 0:
        late_frames[i] = {'filename': 'late%d.py' % i, 'line': 1, 'name': 'late'}
        stack = [late_frames[i]] + stack
    if shape == 'late_frame' and i >= 25000 and i % 991 == 0:
        stack = [late_frames[(i - 15000) // 997 * 997]] + stack
    if shape == 'late_string' and i % 501 == 0:
        late_tags[i] = 'tag%d' % i
        metadata = late_tags[i]
    if shape == 'late_string' and i >= 25000 and i % 499 == 0:
        metadata = late_tags[(i - 15000) // 501 * 501]
    e = {'action': 'alloc', 'addr': addr, 'size': 512, 'stream': 0, 'time_us': i, 'frames': stack,
         'user_metadata': metadata}
    events.append(e)
    if i % 2:
        events.append({'action': 'free_requested', 'addr': addr, 'size': 512, 'stream': 0, 'time_us': i,
                       'frames': stack, 'user_metadata': metadata})
snapshot = {'segments': [], 'device_traces': [events]}
sys.stdout.buffer.write(pickle.dumps(snapshot, protocol=4))
)";

} // namespace

Q_DECLARE_METATYPE(Expect)

class TestSplitDecode : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void generatedSnapshots_data()
    {
        QTest::addColumn<QStringList>("options");
        QTest::addColumn<Expect>("expect");
        QTest::newRow("one device") << QStringList { QStringLiteral("--events"), QStringLiteral("40000") }
                                    << Expect::Split;
        QTest::newRow("two devices") << QStringList { QStringLiteral("--events"), QStringLiteral("40000"),
            QStringLiteral("--devices"), QStringLiteral("2"), QStringLiteral("--seed"), QStringLiteral("3") }
                                     << Expect::Split;
        QTest::newRow("expandable segments") << QStringList { QStringLiteral("--events"), QStringLiteral("30000"),
            QStringLiteral("--expandable") } << Expect::Split;
        // A run that dies out of memory ends with entries whose action (segment_free, oom) and
        // key (device_free) the second half stores and then refers to again.
        QTest::newRow("ends out of memory") << QStringList { QStringLiteral("--events"), QStringLiteral("40000"),
            QStringLiteral("--oom") } << Expect::Split;
        QTest::newRow("protocol 5") << QStringList { QStringLiteral("--events"), QStringLiteral("30000"),
            QStringLiteral("--protocol"), QStringLiteral("5") }
                                    << Expect::Split;
        // Numbered memo slots (BINPUT): the split point's memo size is in the bytes, but only
        // MEMOIZE pickles (what PyTorch writes) are split.
        QTest::newRow("protocol 2, one decoder") << QStringList { QStringLiteral("--events"), QStringLiteral("30000"),
            QStringLiteral("--protocol"), QStringLiteral("2") }
                                                 << Expect::OneDecoder;
    }

    void generatedSnapshots()
    {
        QFETCH(QStringList, options);
        QFETCH(Expect, expect);
        const QByteArray bytes = generated(options);
        QVERIFY(bytes.size() > 4 * 1024 * 1024);
        checkSameAsOneDecoder(bytes, expect);
    }

    void oddTraces_data()
    {
        QTest::addColumn<QString>("shape");
        QTest::addColumn<Expect>("expect");
        QTest::newRow("plain") << QStringLiteral("plain") << Expect::Split;
        // A value first stored after the split began, referred to from the second half. A frame
        // inside a new frame list cannot be read across, so that split fails; a later try may have
        // the frame in its memo (when it starts depends on the threads' pace). A string is read
        // across once the first decoder reaches the split point.
        QTest::newRow("frame stored by the first half") << QStringLiteral("late_frame") << Expect::Either;
        QTest::newRow("string stored by the first half") << QStringLiteral("late_string") << Expect::Split;
        // The split point's bytes inside an integer: the first decoder never lands on it.
        QTest::newRow("batch bytes inside a value") << QStringLiteral("fake_batch_bytes") << Expect::OneDecoder;
    }

    void oddTraces()
    {
        QFETCH(QString, shape);
        QFETCH(Expect, expect);
        const QByteArray bytes = test::runPython(QString::fromUtf8(oddTrace), { shape });
        QVERIFY(bytes.size() > 1024 * 1024);
        checkSameAsOneDecoder(bytes, expect);
    }

    void truncatedSecondHalf()
    {
        // A pickle cut inside the second half: both ways report the same error.
        QByteArray bytes = generated({ QStringLiteral("--events"), QStringLiteral("30000") });
        bytes.truncate(bytes.size() * 3 / 4);
        QString serialError, splitError;
        try {
            decode(bytes, UINT64_MAX);
        } catch (const pickle::DecodeError& e) {
            serialError = QString::fromUtf8(e.what());
        }
        try {
            decode(bytes, 0);
        } catch (const pickle::DecodeError& e) {
            splitError = QString::fromUtf8(e.what());
        }
        QVERIFY(!serialError.isEmpty());
        QCOMPARE(splitError, serialError);
    }
};

QTEST_GUILESS_MAIN(TestSplitDecode)
#include "tst_splitdecode.moc"
