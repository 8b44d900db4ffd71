#include "common/testutil.h"
#include "parsers/pickle/snapshotbuilder.h"
#include "parsers/python/pyunpickler.h"
#include "parsers/snapshotreader.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QRandomGenerator>
#include <QTemporaryDir>
#include <QTest>

#include <atomic>
#include <thread>

using namespace oomlens;

namespace {

std::string_view view(const QByteArray& bytes)
{
    return std::string_view(bytes.constData(), static_cast<size_t>(bytes.size()));
}

SnapshotReadResult read(const QByteArray& bytes, SnapshotDecoder decoder)
{
    SnapshotReadOptions options;
    options.decoder = decoder;
    options.allowFallback = false;
    return readSnapshot(view(bytes), options);
}

// Runs the embedded-Python decoder without the opcode pre-scan: only the restricted unpickler
// stands between the bytes and the interpreter.
std::string restrictedOnly(const QByteArray& bytes)
{
    pickle::SnapshotBuilder builder;
    python::PythonUnpickleOptions options;
    options.prescan = false;
    try {
        python::pythonUnpickle(view(bytes), builder, options);
    } catch (const pickle::DecodeError& e) {
        return e.what();
    }
    return {};
}

// A byte-string literal, embedded NULs included.
#define B(literal) QByteArray(literal, sizeof(literal) - 1)

} // namespace

class TestPickleSafety : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    // First in the suite, so the embedded interpreter starts on a worker thread, as in the app.
    void worksFromWorkerThreads()
    {
        const QByteArray data = test::readFile(test::testDataDir() + QStringLiteral("/snapshots/newest_p4.pickle"));
        std::atomic_int ok { 0 };
        std::vector<std::thread> threads;
        for (int t = 0; t < 4; ++t) {
            threads.emplace_back([&] {
                for (int i = 0; i < 5; ++i)
                    ok += read(data, SnapshotDecoder::Python).snapshot ? 1 : 0;
            });
        }
        for (auto& thread : threads)
            thread.join();
        QCOMPARE(ok.load(), 20);
    }

    // The classic exploit: an object whose __reduce__ calls os.system. Neither decoder may run it.
    void reduceExploitNeverRuns_data()
    {
        QTest::addColumn<int>("protocol");
        for (int p = 0; p <= 5; ++p)
            QTest::newRow(qPrintable(QStringLiteral("protocol %1").arg(p))) << p;
    }

    void reduceExploitNeverRuns()
    {
        QFETCH(int, protocol);
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString marker = dir.filePath(QStringLiteral("oomlens-pwned-%1").arg(protocol));
        const QByteArray exploit = test::runPython(QStringLiteral(R"(
import os, pickle, sys
class Exploit:
    def __reduce__(self):
        return (os.system, ('touch ' + sys.argv[1],))
sys.stdout.buffer.write(pickle.dumps({'segments': [], 'device_traces': [[Exploit()]]}, protocol=int(sys.argv[2])))
)"),
            { marker, QString::number(protocol) });
        QVERIFY(exploit.size() > 20);
        QVERIFY(!QFile::exists(marker));

        for (const auto decoder : { SnapshotDecoder::Native, SnapshotDecoder::Python }) {
            const auto result = read(exploit, decoder);
            QVERIFY(!result.snapshot);
            QVERIFY2(
                result.error.rfind("refusing to run code from the snapshot: opcode ", 0) == 0, result.error.c_str());
            QVERIFY2(result.error.find(" at byte ") != std::string::npos, result.error.c_str());
        }
        // Without the pre-scan the restricted unpickler refuses by itself.
        const std::string error = restrictedOnly(exploit);
        QVERIFY2(error.find("refusing to run code from the snapshot: global") != std::string::npos, error.c_str());
        QVERIFY(error.find("system") != std::string::npos);
        QVERIFY2(!QFile::exists(marker), "the exploit ran");
    }

    void everyCodeOpcodeIsRefused_data()
    {
        QTest::addColumn<QByteArray>("pickle");
        QTest::addColumn<QString>("message");
        const auto row = [](const char* name, const QByteArray& data, const char* opcode, int at) {
            QTest::newRow(name) << data
                                << QStringLiteral("refusing to run code from the snapshot: opcode %1 at byte %2")
                                       .arg(QLatin1String(opcode))
                                       .arg(at);
        };
        row("GLOBAL",
            B("\x80\x02"
              "cposix\nsystem\n"
              "X\x01\x00\x00\x00"
              "x"
              "\x85R."),
            "GLOBAL", 2);
        row("STACK_GLOBAL", B("\x80\x04\x8c\x05posix\x8c\x06system\x93."), "STACK_GLOBAL", 17);
        row("REDUCE", B("\x80\x02]K\x01\x85R."), "REDUCE", 6);
        row("BUILD", B("\x80\x02}}b."), "BUILD", 4);
        row("INST", B("\x80\x02(iposix\nsystem\n."), "INST", 3);
        row("OBJ", B("\x80\x02(]o."), "OBJ", 4);
        row("NEWOBJ", B("\x80\x02])\x81."), "NEWOBJ", 4);
        row("NEWOBJ_EX", B("\x80\x04])}\x92."), "NEWOBJ_EX", 5);
        row("EXT1", B("\x80\x02\x82\x01."), "EXT1", 2);
        row("EXT2", B("\x80\x02\x83\x01\x00."), "EXT2", 2);
        row("EXT4", B("\x80\x02\x84\x01\x00\x00\x00."), "EXT4", 2);
        row("PERSID", B("\x80\x02P1\n."), "PERSID", 2);
        row("BINPERSID", B("\x80\x02K\x01Q."), "BINPERSID", 4);
    }

    void everyCodeOpcodeIsRefused()
    {
        QFETCH(QByteArray, pickle);
        QFETCH(QString, message);
        for (const auto decoder : { SnapshotDecoder::Native, SnapshotDecoder::Python }) {
            const auto result = read(pickle, decoder);
            QVERIFY(!result.snapshot);
            QCOMPARE(QString::fromStdString(result.error), message);
        }
    }

    void absurdSizesAreBounded_data()
    {
        QTest::addColumn<QByteArray>("pickle");
        QTest::addColumn<QString>("fragment");
        QByteArray fourGiB("\x80\x02X\xff\xff\xff\xff", 7);
        fourGiB.append(1024, 'a');
        QTest::newRow("BINUNICODE of 4 GiB in 1 KiB") << fourGiB << "opcode BINUNICODE at byte 2 runs past the end";
        QTest::newRow("BINUNICODE8 of 2^63") << B("\x80\x04\x8d\xff\xff\xff\xff\xff\xff\xff\x7f"
                                                  "abc.")
                                             << "opcode BINUNICODE8 at byte 2";
        QTest::newRow("BINBYTES8") << B("\x80\x04\x8e\x00\x00\x00\x00\x01\x00\x00\x00.")
                                   << "opcode BINBYTES8 at byte 2";
        QTest::newRow("LONG4 of 2 GiB") << B("\x80\x02\x8b\xff\xff\xff\x7f\x01.") << "opcode LONG4 at byte 2";
        QTest::newRow("FRAME past the end") << B("\x80\x04\x95\x10") << "opcode FRAME at byte 2";
        QTest::newRow("empty") << QByteArray() << "empty input";
        QTest::newRow("no STOP") << B("\x80\x02}") << "before the STOP opcode";
        QTest::newRow("unknown opcode") << B("\x80\x02\xff.") << "unknown opcode 0xff at byte 2";
    }

    void absurdSizesAreBounded()
    {
        QFETCH(QByteArray, pickle);
        QFETCH(QString, fragment);
        for (const auto decoder : { SnapshotDecoder::Native, SnapshotDecoder::Python }) {
            const auto result = read(pickle, decoder);
            QVERIFY(!result.snapshot);
            QVERIFY2(QString::fromStdString(result.error).contains(fragment), result.error.c_str());
        }
    }

    void memoBombsAreBounded()
    {
        // A memo index far beyond anything stored.
        const auto huge = read(B("\x80\x02]r\xf0\xff\xff\xff."), SnapshotDecoder::Native);
        QVERIFY(!huge.snapshot);
        QVERIFY2(huge.error.find("memo index 4294967280 is out of range at byte 3") != std::string::npos,
            huge.error.c_str());
        QVERIFY(!read(B("\x80\x02]r\xf0\xff\xff\xff."), SnapshotDecoder::Python).snapshot);
        // A GET of something never stored.
        QVERIFY(read(B("\x80\x02h\x07."), SnapshotDecoder::Native).error.find("memo key 7 was never stored")
            != std::string::npos);

        // "Billion laughs": 40 levels of lists, each holding its predecessor 16 times (16^40 paths).
        QByteArray laughs("\x80\x02]q\x00", 5);
        for (int level = 1; level <= 40; ++level) {
            laughs.append("](", 2);
            for (int i = 0; i < 16; ++i)
                laughs.append("h").append(char(level - 1));
            laughs.append("eq").append(char(level));
        }
        laughs.append('.');
        QElapsedTimer timer;
        timer.start();
        for (const auto decoder : { SnapshotDecoder::Native, SnapshotDecoder::Python }) {
            const auto result = read(laughs, decoder);
            QVERIFY(!result.snapshot);
            QVERIFY2(result.error.find("not a memory snapshot") != std::string::npos, result.error.c_str());
        }
        QVERIFY(timer.elapsed() < 10000);
    }

    void deepNestingIsBounded()
    {
        // 200000 nested lists, each appended into its parent.
        QByteArray nested("\x80\x02", 2);
        nested.append(200000, ']');
        nested.append(199999, 'a');
        nested.append('.');
        const auto native = read(nested, SnapshotDecoder::Native);
        QVERIFY(!native.snapshot);
        QVERIFY2(native.error.find("not a memory snapshot") != std::string::npos, native.error.c_str());
        const auto python = read(nested, SnapshotDecoder::Python);
        QVERIFY(!python.snapshot);
        QVERIFY2(python.error.find("nesting deeper than 1000 levels") != std::string::npos, python.error.c_str());

        QByteArray marks("\x80\x02", 2);
        marks.append(20000, '(');
        marks.append('.');
        const auto manyMarks = read(marks, SnapshotDecoder::Native);
        QVERIFY2(manyMarks.error.find("nesting deeper than 10000 levels at byte 10002") != std::string::npos,
            manyMarks.error.c_str());
    }

    // Every prefix of a real snapshot: one message with the offset, never a crash.
    void truncatedInputs()
    {
        const QByteArray full = test::readFile(test::testDataDir() + QStringLiteral("/snapshots/era_traces.pickle"));
        QVERIFY(!full.isEmpty());
        for (qsizetype length = 0; length < full.size(); ++length) {
            const auto result = read(full.left(length), SnapshotDecoder::Native);
            QVERIFY(!result.snapshot);
            QVERIFY2(result.error.find('\n') == std::string::npos, result.error.c_str());
            QVERIFY2(result.error.find("at byte") != std::string::npos
                    || result.error.find("empty") != std::string::npos
                    || result.error.find("not a memory snapshot") != std::string::npos,
                result.error.c_str());
        }
        for (qsizetype length : { qsizetype(3), full.size() / 2, full.size() - 1 }) {
            const auto result = read(full.left(length), SnapshotDecoder::Python);
            QVERIFY(!result.snapshot);
            QVERIFY2(result.error.find("truncated pickle") != std::string::npos, result.error.c_str());
        }
    }

    void brokenContainers_data()
    {
        QTest::addColumn<QByteArray>("data");
        QTest::addColumn<QString>("fragment");
        const QByteArray gz = test::readFile(test::testDataDir() + QStringLiteral("/snapshots/newest.pickle.gz"));
        QTest::newRow("truncated gzip") << gz.left(gz.size() / 2) << "truncated gzip data";
        QByteArray corrupt = gz;
        corrupt[40] = char(corrupt[40] ^ 0x55);
        corrupt[41] = char(corrupt[41] ^ 0x55);
        QTest::newRow("corrupt gzip") << corrupt << "gzip";
        const QByteArray zip = test::readFile(test::testDataDir() + QStringLiteral("/snapshots/newest_stored.zip"));
        QTest::newRow("zip without directory") << zip.left(zip.size() - 100) << "ZIP";
        const QByteArray html
            = test::readFile(test::testDataDir() + QStringLiteral("/snapshots/newest_memory_viz.html"));
        QByteArray badHtml = html;
        badHtml.replace("\"base64\": \"gA", "\"base64\": \"gA!!");
        QTest::newRow("bad base64") << badHtml << "not valid base64";
        QTest::newRow("bad json") << QByteArray("{\"segments\": [1, 2,, 3]}") << "not valid JSON at byte";
        QTest::newRow("json, wrong shape") << QByteArray("{\"segments\": 7}") << "'segments' is a int";
    }

    void brokenContainers()
    {
        QFETCH(QByteArray, data);
        QFETCH(QString, fragment);
        const auto result = read(data, SnapshotDecoder::Native);
        QVERIFY(!result.snapshot);
        QVERIFY2(QString::fromStdString(result.error).contains(fragment), result.error.c_str());
    }

    void randomBytes()
    {
        QRandomGenerator random(1234);
        for (int i = 0; i < 300; ++i) {
            QByteArray data(qsizetype(random.bounded(1, 4096)), Qt::Uninitialized);
            for (auto& c : data)
                c = char(random.bounded(256));
            if (i % 2 == 0) {
                data[0] = char(0x80);
                data[1] = char(2 + random.bounded(4));
            }
            const auto result = read(data, SnapshotDecoder::Native);
            QVERIFY(!result.snapshot || result.error.empty());
            QVERIFY(result.snapshot || !result.error.empty());
        }
    }

    // Flips bytes of a real snapshot 2000 times: errors are fine, crashes and hangs are not.
    void mutations()
    {
        OOMLENS_REQUIRE_SHARED();
        const QByteArray original = test::readFile(
            test::corpusDir() + QStringLiteral("/snapshots/jogregoire__How-Diffusion-Models-Work__my_snapshot.pickle"));
        QVERIFY(!original.isEmpty());
        QRandomGenerator random(42);
        int decoded = 0;
        for (int round = 0; round < 2000; ++round) {
            QByteArray data = original;
            const int flips = 1 + int(random.bounded(4));
            for (int f = 0; f < flips; ++f) {
                const auto at = qsizetype(random.bounded(quint32(data.size())));
                data[at] = char(data[at] ^ (1 << random.bounded(8)));
            }
            if (round % 50 == 0)
                data.truncate(qsizetype(random.bounded(quint32(data.size()))));
            const auto native = read(data, SnapshotDecoder::Native);
            QVERIFY(bool(native.snapshot) != !native.error.empty());
            decoded += native.snapshot ? 1 : 0;
            if (round % 10 == 0) {
                const auto python = read(data, SnapshotDecoder::Python);
                QVERIFY(bool(python.snapshot) != !python.error.empty());
            }
        }
        qInfo("%d of 2000 mutated snapshots still decoded", decoded);
    }
};

QTEST_GUILESS_MAIN(TestPickleSafety)
#include "tst_picklesafety.moc"
