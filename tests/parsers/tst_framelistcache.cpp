#include "common/testutil.h"
#include "parsers/pickle/snapshotcompare.h"
#include "parsers/snapshotreader.h"

#include <QTest>

using namespace oomlens;

namespace {

// The native decoder recognises a repeated frame list by its encoded bytes. These pickles are
// assembled by hand so that the same bytes mean a different list, or a known list grows further:
// the cases where reusing the stack blindly would be wrong. The script checks that pickle.loads
// accepts each one and prints it.
const char* script = R"(
import pickle, sys
def su(s): b = s.encode(); return b'\x8c' + bytes([len(b)]) + b
def frame(name): return b'}(' + su('filename') + su(name + '.py') + su('line') + b'K\x01' + su('name') + su(name) + b'u'
def event(addr, frames): return (b'}(' + su('action') + su('alloc') + su('addr') + b'K' + bytes([addr]) + su('size')
                                 + b'K\x10' + su('stream') + b'K\x00' + su('frames') + frames + b'u')
known = b'](h\x00h\x01e'
if sys.argv[1] == 'rebound':
    events = [event(1, b'](' + frame('a') + b'q\x00' + frame('b') + b'q\x01e'), event(2, known),
              event(3, b'](' + frame('c') + b'q\x00e'), event(4, known)]
else:
    events = [event(1, b'](' + frame('a') + b'q\x00' + frame('b') + b'q\x01e'), event(2, known),
              event(3, known + b'(h\x01e'), event(4, known + b'h\x00a'), event(5, known)]
data = (b'\x80\x04}(' + su('segments') + b']' + su('device_traces') + b'](](' + b''.join(events) + b'eeu.')
pickle.loads(data)
sys.stdout.buffer.write(data)
)";

} // namespace

class TestFrameListCache : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void sameBytesSameStack_data()
    {
        QTest::addColumn<QString>("shape");
        QTest::addColumn<QStringList>("expected"); // per event: its frame names, innermost first

        QTest::newRow("memo slot rebound between two equal lists")
            << QStringLiteral("rebound")
            << QStringList { QStringLiteral("a b"), QStringLiteral("a b"), QStringLiteral("c"), QStringLiteral("c b") };
        QTest::newRow("known list grown by APPENDS and APPEND")
            << QStringLiteral("grown")
            << QStringList { QStringLiteral("a b"), QStringLiteral("a b"), QStringLiteral("a b b"),
                   QStringLiteral("a b a"), QStringLiteral("a b") };
    }

    void sameBytesSameStack()
    {
        QFETCH(QString, shape);
        QFETCH(QStringList, expected);
        const QByteArray bytes = test::runPython(QString::fromUtf8(script), { shape });
        QVERIFY(!bytes.isEmpty());
        const std::string_view data(bytes.constData(), static_cast<size_t>(bytes.size()));

        SnapshotReadOptions options;
        options.allowFallback = false;
        const auto native = readSnapshot(data, options);
        QVERIFY2(native.snapshot, native.error.c_str());
        options.decoder = SnapshotDecoder::Python;
        const auto python = readSnapshot(data, options);
        QVERIFY2(python.snapshot, python.error.c_str());
        std::string difference;
        QVERIFY2(sameSnapshot(*native.snapshot, *python.snapshot, &difference), difference.c_str());

        const Snapshot& snapshot = *native.snapshot;
        QCOMPARE(snapshot.traces.size(), size_t(1));
        const auto& events = snapshot.traces[0].events;
        QCOMPARE(events.size(), size_t(expected.size()));
        for (size_t i = 0; i < events.size(); ++i) {
            QStringList names;
            for (const FrameId f : snapshot.frames->stack(events[i].stack))
                names << QString::fromUtf8(snapshot.strings->get(snapshot.frames->frame(f).name));
            QCOMPARE(names.join(QLatin1Char(' ')), expected[static_cast<qsizetype>(i)]);
        }
    }
};

QTEST_GUILESS_MAIN(TestFrameListCache)
#include "tst_framelistcache.moc"
