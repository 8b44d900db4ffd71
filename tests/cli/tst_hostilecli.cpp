#include "common/clirun.h"
#include "common/testutil.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonObject>
#include <QProcess>
#include <QTemporaryDir>
#include <QTest>

#include <sys/stat.h>

using namespace oomlens;

// Inputs nobody meant to give, each through the command line as a user would give it, each under
// a timeout (runOomlensWith stops the test on a hang or a crash): deep nesting, huge lines, invalid
// UTF-8, NUL bytes, a loop of symbolic links, named pipes, /dev/zero, an endless standard input,
// a file that changes while it is read. Each ends in at most one clear line on stderr and an exit
// status, never in a hang, an abort or a core dump. Run without a display.
class TestHostileCli : public QObject
{
    Q_OBJECT

    using Run = test::CliRun;

    QTemporaryDir m_dir;

    QString path(const char* name) const { return m_dir.filePath(QLatin1String(name)); }

    static Run oomlens(const QStringList& arguments, const QString& stdinFile = {})
    {
        test::CliOptions options;
        options.stdinFile = stdinFile;
        options.timeoutMs = 120000;
        return test::runOomlensWith(arguments, options);
    }

    static Run diagnose(const QString& input) { return oomlens({ QStringLiteral("diagnose"), input }); }

    static QString snapshot() { return test::testDataDir() + QStringLiteral("/scenarios/first_backward.pickle"); }
    static QString message() { return QStringLiteral(OOMLENS_SOURCE_DIR "/resources/examples/oom_case.txt"); }

    static void write(const QString& path, const QByteArray& bytes)
    {
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        QCOMPARE(file.write(bytes), bytes.size());
    }

    // One line on stderr that names the input and says `reason`, and exit status `status`.
    static void verifyOneError(const Run& run, const QString& input, const char* reason, int status = 1)
    {
        QVERIFY2(run.exitCode == status,
            qPrintable(QStringLiteral("exit %1: %2").arg(run.exitCode).arg(QString::fromUtf8(run.err))));
        QVERIFY2(run.err.count('\n') == 1 && run.err.endsWith('\n'), run.err.constData());
        QVERIFY2(run.err.contains(input.toUtf8()), run.err.constData());
        QVERIFY2(run.err.contains(reason), run.err.constData());
    }

    static QByteArray deep(const QByteArray& open, const QByteArray& inner, const QByteArray& close, int levels)
    {
        return open.repeated(levels) + inner + close.repeated(levels);
    }

    static bool isUtf8(const QByteArray& bytes) { return QString::fromUtf8(bytes).toUtf8() == bytes; }

private Q_SLOTS:
    void initTestCase()
    {
        OOMLENS_REQUIRE_BINARY();
        QVERIFY(m_dir.isValid());
    }

    // 100,000 levels: nlohmann's parser and the pickle decoder keep their own stacks, and nothing
    // after them walks the nesting by recursion.
    void deepNesting()
    {
        constexpr int levels = 100000;
        write(path("deep.json"), deep("{\"a\":", "1", "}", levels));
        verifyOneError(diagnose(path("deep.json")), path("deep.json"), "no OOM message");
        write(path("deep-array.json"), deep("[", "", "]", levels));
        verifyOneError(diagnose(path("deep-array.json")), path("deep-array.json"), "no OOM message");
        // A model config.json, the planner's and the case's.
        write(path("config.json"), "{\"model_type\": \"llama\", \"x\": " + deep("[", "", "]", levels) + "}");
        verifyOneError(diagnose(path("config.json")), path("config.json"), "a model config.json, but");
        verifyOneError(oomlens({ QStringLiteral("plan"), QStringLiteral("--model"), path("config.json") }),
            path("config.json"), "not a model config.json");
        // Category rules.
        write(path("rules.json"), "{\"activations\": " + deep("[", "", "]", levels) + "}");
        verifyOneError(
            oomlens({ QStringLiteral("diagnose"), QStringLiteral("--rules"), path("rules.json"), snapshot() }),
            path("rules.json"), "must list strings");
        // A capture sidecar beside a snapshot: ignored with a warning, the snapshot still read.
        QVERIFY(QFile::copy(snapshot(), path("run.pickle")));
        write(path("run.oomlens.json"), deep("{\"device_name\":", "1", "}", levels));
        const Run sidecar = diagnose(path("run.pickle"));
        QCOMPARE(sidecar.exitCode, 0);
        QVERIFY2(
            sidecar.err.count('\n') == 1 && sidecar.err.contains("capture sidecar ignored"), sidecar.err.constData());
        // A rank summary.
        write(path("rank0.summary.json"), "{\"oomlens_rank_summary\": 1, \"x\": " + deep("[", "", "]", levels) + "}");
        const Run summary = diagnose(path("rank0.summary.json"));
        QCOMPARE(summary.exitCode, 1);
        QVERIFY2(summary.err.contains(path("rank0.summary.json").toUtf8()), summary.err.constData());
        // Pickles: nested lists, and nested lists where a snapshot's segments belong.
        write(path("deep.pickle"), "\x80\x02" + QByteArray(levels, ']') + QByteArray(levels - 1, 'a') + ".");
        verifyOneError(diagnose(path("deep.pickle")), path("deep.pickle"), "not a memory snapshot");
        write(path("deep-segments.pickle"),
            QByteArray("\x80\x02}X\x08\x00\x00\x00segments", 16) + QByteArray(levels, ']') + QByteArray(levels - 1, 'a')
                + "s.");
        verifyOneError(diagnose(path("deep-segments.pickle")), path("deep-segments.pickle"), "not a memory snapshot");
    }

    // 64 MiB without a line break after an OOM message's start: read, bounded in time.
    void hugeLine()
    {
        write(path("huge.txt"), "torch.OutOfMemoryError: CUDA out of memory. " + QByteArray(64 << 20, 'x'));
        const Run run = oomlens({ QStringLiteral("diagnose"), QStringLiteral("--json"), path("huge.txt") });
        QVERIFY2(run.exitCode == 0 || run.exitCode == 1, run.err.constData());
        QVERIFY(run.err.count('\n') <= 1);
        QVERIFY(isUtf8(run.out));
    }

    // Bytes that are not UTF-8 reach the JSON as U+FFFD, never as bytes a JSON reader refuses.
    void invalidUtf8AndNulBytes()
    {
        write(path("latin1.txt"),
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
            "79.15 GiB of which 1.06 GiB is free. Process 4242 has 78.08 GiB memory in use. Caf\xe9 \xff\xfe\xc3\n");
        const Run run = oomlens({ QStringLiteral("diagnose"), QStringLiteral("--json"), path("latin1.txt") });
        QCOMPARE(run.exitCode, 0);
        QVERIFY(isUtf8(run.out));
        QVERIFY(!test::parseJsonObject(run.out)[QStringLiteral("oom_messages")].toArray().isEmpty());

        QByteArray nul = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB";
        nul += QByteArray(200, '\0') + "\n";
        write(path("nul.txt"), nul);
        verifyOneError(diagnose(path("nul.txt")), path("nul.txt"), "not text");
    }

    void symbolicLinkLoop()
    {
        QVERIFY(QFile::link(path("loop-b"), path("loop-a")));
        QVERIFY(QFile::link(path("loop-a"), path("loop-b")));
        verifyOneError(diagnose(path("loop-a")), path("loop-a"), "symbolic links form a loop");
        QVERIFY(QFile::link(path("nowhere"), path("dangling")));
        verifyOneError(diagnose(path("dangling")), path("dangling"), "a symbolic link to a file that does not exist");
    }

    void namedPipes()
    {
        // Nobody writes: read as empty at once instead of waiting for a writer.
        QVERIFY(mkfifo(QFile::encodeName(path("idle.fifo")).constData(), 0600) == 0);
        verifyOneError(diagnose(path("idle.fifo")), path("idle.fifo"), "the input is empty");
        // A writer (a shell's `<(...)`, a log being piped in): read to its end like a file.
        QVERIFY(mkfifo(QFile::encodeName(path("log.fifo")).constData(), 0600) == 0);
        QProcess writer;
        writer.start(QStringLiteral("cp"), { message(), path("log.fifo") });
        QVERIFY(writer.waitForStarted());
        // The writer must hold the pipe open before oomlens looks, or it reads an idle pipe.
        QTest::qWait(300);
        const Run run = diagnose(path("log.fifo"));
        QVERIFY(writer.waitForFinished(60000));
        QVERIFY2(run.exitCode == 0, run.err.constData());
    }

    // Devices never end: refused by what they are, wherever a file is named.
    void devices()
    {
        const QString zero = QStringLiteral("/dev/zero");
        if (!QFile::exists(zero))
            QSKIP("no /dev/zero here");
        verifyOneError(diagnose(zero), zero, "is a device, not a file");
        verifyOneError(
            oomlens({ QStringLiteral("diagnose"), QStringLiteral("--rules"), zero, snapshot() }), zero, "is a device");
        verifyOneError(oomlens({ QStringLiteral("plan"), QStringLiteral("--model"), zero }), zero, "is a device");
        // `report` adds that, with nothing read, it wrote nothing.
        const Run report = oomlens({ QStringLiteral("report"), zero, QStringLiteral("-o"), path("zero.html") });
        QCOMPARE(report.exitCode, 1);
        QVERIFY2(report.err.startsWith("oomlens: /dev/zero: is a device, not a file\n"), report.err.constData());
        QVERIFY(!QFile::exists(path("zero.html")));
    }

    // Standard input that never ends: read up to its bound (1 GiB), then one error.
    void endlessStandardInput()
    {
        if (!QFile::exists(QStringLiteral("/dev/zero")))
            QSKIP("no /dev/zero here");
        const Run run = oomlens({ QStringLiteral("diagnose"), QStringLiteral("-") }, QStringLiteral("/dev/zero"));
        QCOMPARE(run.exitCode, 1);
        QVERIFY2(run.err.startsWith("oomlens: -: more than 1 GiB came without an end"), run.err.constData());
    }

    // A log still being written only grows: it is read as it was when opened.
    void logGrowingWhileRead()
    {
        const QString log = path("growing.log");
        QFile seed(message());
        QVERIFY(seed.open(QIODevice::ReadOnly));
        write(log, seed.readAll().repeated(100));
        QProcess writer;
        writer.start(QStringLiteral("sh"),
            { QStringLiteral("-c"), QStringLiteral("while :; do echo 'step 12 loss 0.41' >> '%1'; done").arg(log) });
        QVERIFY(writer.waitForStarted());
        for (int i = 0; i < 3; ++i) {
            const Run run = diagnose(log);
            QVERIFY2(run.exitCode == 0, run.err.constData());
        }
        writer.kill();
        writer.waitForFinished();
    }

    // A snapshot rewritten while it is decoded (torch.save truncates, then writes): each run reads
    // one whole version or says in one line that the file changed, was cut short or is broken.
    void snapshotRewrittenWhileRead()
    {
        const QString file = path("rewritten.pickle");
        QVERIFY(QFile::copy(test::testDataDir() + QStringLiteral("/job/rank6.pickle"), file));
        QProcess writer;
        writer.start(QStringLiteral("sh"),
            { QStringLiteral("-c"),
                QStringLiteral("while :; do cp '%1' '%2'; done")
                    .arg(test::testDataDir() + QStringLiteral("/job/rank6.pickle"), file) });
        QVERIFY(writer.waitForStarted());
        for (int i = 0; i < 10; ++i) {
            const Run run = diagnose(file);
            QVERIFY2(run.exitCode == 0 || run.exitCode == 1, run.err.constData());
            if (run.exitCode == 1)
                QVERIFY2(run.err.count('\n') == 1 && run.err.startsWith("oomlens: "), run.err.constData());
        }
        writer.kill();
        writer.waitForFinished();
    }
};

QTEST_GUILESS_MAIN(TestHostileCli)
#include "tst_hostilecli.moc"
