#include "common/clirun.h"
#include "common/testutil.h"
#include "common/textfixtures.h"

#include <QFile>
#include <QJsonArray>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

// Runs the real `oomlens` binary as a user or a script would, and checks the contract of
// product.md §5: the JSON keys, the exit status, stdin, and one error line per bad input.
class TestDiagnoseCli : public QObject
{
    Q_OBJECT

    using Run = oomlens::test::CliRun;

    static Run oomlens(const QStringList& arguments, const QByteArray& stdinBytes = {})
    {
        return oomlens::test::runOomlens(arguments, stdinBytes);
    }

    static QString example() { return QStringLiteral(OOMLENS_SOURCE_DIR "/resources/examples/oom_case.txt"); }

private Q_SLOTS:
    void initTestCase() { OOMLENS_REQUIRE_BINARY(); }

    void versionAndHelp()
    {
        const Run version = oomlens({ QStringLiteral("--version") });
        QCOMPARE(version.exitCode, 0);
        QVERIFY(version.out.startsWith("oomlens "));
        const Run help = oomlens({ QStringLiteral("--help") });
        QCOMPARE(help.exitCode, 0);
        QVERIFY(help.out.contains("diagnose"));
    }

    void usageErrorsExitTwo()
    {
        QCOMPARE(oomlens({ QStringLiteral("diagnose") }).exitCode, 2);
        QCOMPARE(oomlens({ QStringLiteral("diagnose"), QStringLiteral("--bogus"), example() }).exitCode, 2);
        QCOMPARE(oomlens({ QStringLiteral("diagnose"), QStringLiteral("--device") }).exitCode, 2);
    }

    // Help as every Qt tool gives it: on stdout, exit 0, naming the command's options.
    void commandHelp_data()
    {
        QTest::addColumn<QString>("command");
        QTest::addColumn<QStringList>("options");
        QTest::newRow("diagnose") << QStringLiteral("diagnose")
                                  << QStringList { QStringLiteral("--json"), QStringLiteral("--device"),
                                         QStringLiteral("--rules"), QStringLiteral("--help") };
        QTest::newRow("report") << QStringLiteral("report")
                                << QStringList { QStringLiteral("--output"), QStringLiteral("--device") };
    }

    void commandHelp()
    {
        QFETCH(QString, command);
        QFETCH(QStringList, options);
        for (const QString& help : { QStringLiteral("--help"), QStringLiteral("-h") }) {
            const Run run = oomlens({ command, help });
            QCOMPARE(run.exitCode, 0);
            QVERIFY2(run.err.isEmpty(), run.err.constData());
            QVERIFY2(run.out.startsWith(QByteArray("Usage: oomlens " + command.toUtf8() + ' ')), run.out.constData());
            for (const QString& option : options)
                QVERIFY2(run.out.contains(option.toUtf8()), qPrintable(option));
        }
        // --help needs no inputs, but a malformed command line is still a usage error.
        QCOMPARE(oomlens({ command, QStringLiteral("--help"), QStringLiteral("--device") }).exitCode, 2);
        QCOMPARE(
            oomlens({ command, QStringLiteral("--device"), QStringLiteral("0"), QStringLiteral("--help") }).exitCode,
            0);
    }

    void topLevelHelpListsEveryCommand()
    {
        const Run run = oomlens({ QStringLiteral("-h") });
        QCOMPARE(run.exitCode, 0);
        for (const char* command : { "oomlens diagnose", "oomlens report", "oomlens mcp", "--version" })
            QVERIFY2(run.out.contains(command), command);
        // The window's line only where the build has one.
        QCOMPARE(run.out.contains("oomlens [FILE...]"), oomlens::test::oomlensBinaryHasGui());
        QCOMPARE(oomlens({ QStringLiteral("-v") }).out, oomlens({ QStringLiteral("--version") }).out);
    }

    // An unknown flag is a usage error: exit 2, nothing on stdout, and the first line of stderr
    // names the flag as it was typed.
    void unknownOptionIsOneLineAndExitTwo_data()
    {
        QTest::addColumn<QStringList>("arguments");
        QTest::addColumn<QByteArray>("firstLine");
        QTest::newRow("long") << QStringList { QStringLiteral("diagnose"), QStringLiteral("--bogus"), example() }
                              << QByteArray("oomlens diagnose: unknown option --bogus");
        QTest::newRow("long with value") << QStringList { QStringLiteral("diagnose"), QStringLiteral("--bogus=1"),
            example() } << QByteArray("oomlens diagnose: unknown option --bogus");
        QTest::newRow("short") << QStringList { QStringLiteral("diagnose"), QStringLiteral("-x"), example() }
                               << QByteArray("oomlens diagnose: unknown option -x");
        QTest::newRow("value on a flag") << QStringList { QStringLiteral("diagnose"), QStringLiteral("--json=yes"),
            example() } << QByteArray("oomlens diagnose: Unexpected value after '--json'.");
        QTest::newRow("bad device") << QStringList { QStringLiteral("diagnose"), QStringLiteral("--device"),
            QStringLiteral("-1"), example() }
                                    << QByteArray("oomlens diagnose: --device needs a device ordinal");
        QTest::newRow("report") << QStringList { QStringLiteral("report"), QStringLiteral("--json"), example(),
            QStringLiteral("-o"), QStringLiteral("-") }
                                << QByteArray("oomlens report: unknown option --json");
        // Not a command and not a file to open: the GUI is not started for it.
        QTest::newRow("no command") << QStringList { QStringLiteral("--bogus") }
                                    << QByteArray("oomlens: unknown option --bogus");
    }

    void unknownOptionIsOneLineAndExitTwo()
    {
        QFETCH(QStringList, arguments);
        QFETCH(QByteArray, firstLine);
        const Run run = oomlens(arguments);
        QCOMPARE(run.exitCode, 2);
        QVERIFY2(run.out.isEmpty(), run.out.constData());
        const QByteArray first = run.err.left(run.err.indexOf('\n'));
        QVERIFY2(first.startsWith(firstLine), run.err.constData());
        QVERIFY2(run.err.contains("usage:"), run.err.constData());
    }

    // Options go anywhere among the inputs; '--' ends them ('-' is always an input: stdin).
    void optionsAmongInputs()
    {
        const Run run = oomlens({ QStringLiteral("diagnose"), example(), QStringLiteral("--device=0"),
            QStringLiteral("--json"), QStringLiteral("--"), example() });
        QCOMPARE(run.exitCode, 0);
        QCOMPARE(oomlens::test::parseJsonObject(run.out)[QStringLiteral("inputs")].toArray().size(), 2);
    }

    // --rules FILE is read with the inputs: a rule that claims every stack moves the whole peak
    // into its category; a file that cannot be used is an error naming it.
    void rulesFile()
    {
        QTemporaryDir dir;
        const QString rules = dir.filePath(QStringLiteral("rules.yaml"));
        QFile file(rules);
        QVERIFY(file.open(QIODevice::WriteOnly));
        file.write("parameters: ['.*']\n");
        file.close();
        const QString snapshot = QStringLiteral(OOMLENS_SOURCE_DIR "/tests/data/scenarios/first_backward.pickle");
        const auto figures = [&](const QStringList& options) {
            const Run run = oomlens(QStringList { QStringLiteral("diagnose"), QStringLiteral("--json") } + options
                + QStringList { snapshot });
            if (run.exitCode != 0)
                qWarning("%s", run.err.constData());
            return oomlens::test::parseJsonObject(run.out)[QStringLiteral("snapshots")].toArray().first().toObject();
        };
        const QJsonObject plain = figures({});
        const QJsonObject ruled = figures({ QStringLiteral("--rules"), rules });
        const qint64 peak = ruled[QStringLiteral("peak_allocated_bytes")].toInteger();
        QVERIFY(peak > 0);
        QVERIFY(ruled[QStringLiteral("rules_error")].isNull());
        const QJsonObject categories = ruled[QStringLiteral("categories_at_peak")].toObject();
        QCOMPARE(categories[QStringLiteral("parameters")].toInteger(), peak);
        QVERIFY(
            plain[QStringLiteral("categories_at_peak")].toObject()[QStringLiteral("parameters")].toInteger() < peak);

        // Rules asked for are never skipped quietly (tst_inputscli has the other ways they fail).
        const Run missing = oomlens({ QStringLiteral("diagnose"), QStringLiteral("--json"), QStringLiteral("--rules"),
            dir.filePath(QStringLiteral("none.yaml")), snapshot });
        QCOMPARE(missing.exitCode, 1);
        QVERIFY2(missing.err.contains("none.yaml: no such file"), missing.err.constData());
        QVERIFY(missing.out.isEmpty());
    }

    void jsonHasEveryContractKey()
    {
        const Run run = oomlens({ QStringLiteral("diagnose"), QStringLiteral("--json"), example() });
        QCOMPARE(run.exitCode, 0);
        const QJsonObject root = oomlens::test::parseJsonObject(run.out);
        QCOMPARE(root.value(QStringLiteral("tool")).toString(), QStringLiteral("oomlens"));
        for (const char* key : { "version", "inputs", "oom_messages", "memory_summaries", "snapshots", "diagnoses" })
            QVERIFY2(root.contains(QLatin1String(key)), key);

        const QJsonObject input = root[QStringLiteral("inputs")].toArray().first().toObject();
        QCOMPARE(input[QStringLiteral("kind")].toString(), QStringLiteral("log"));
        QVERIFY(input[QStringLiteral("error")].isNull());

        const QJsonObject message = root[QStringLiteral("oom_messages")].toArray().first().toObject();
        for (const char* key : { "backend", "template", "exception", "device", "requested_bytes", "total_bytes",
                 "free_bytes", "allocated_bytes", "reserved_bytes", "reserved_unallocated_bytes", "allowed_bytes",
                 "private_pools_bytes", "processes", "torch_version_hint", "phase", "truncated" })
            QVERIFY2(message.contains(QLatin1String(key)), key);
        // "Tried to allocate 1.50 GiB" and "2.18 GiB is reserved by PyTorch but unallocated".
        QCOMPARE(message[QStringLiteral("requested_bytes")].toInteger(), qint64(1610612736));
        QCOMPARE(message[QStringLiteral("reserved_unallocated_bytes")].toInteger(), qint64(2340757176));
        QCOMPARE(message[QStringLiteral("phase")].toString(), QStringLiteral("backward"));
        QCOMPARE(message[QStringLiteral("backend")].toString(), QStringLiteral("cuda"));
        QVERIFY(message[QStringLiteral("allowed_bytes")].isNull());

        const QJsonObject summary = root[QStringLiteral("memory_summaries")].toArray().first().toObject();
        QCOMPARE(summary[QStringLiteral("ooms")].toInt(), 1);
        QCOMPARE(summary[QStringLiteral("alloc_retries")].toInt(), 2);
        const QJsonObject allocated
            = summary[QStringLiteral("rows")].toObject()[QStringLiteral("allocated_memory")].toObject();
        QCOMPARE(allocated[QStringLiteral("current")].toInteger(), qint64(20346) * 1024 * 1024);

        const QJsonArray diagnoses = root[QStringLiteral("diagnoses")].toArray();
        QVERIFY(!diagnoses.isEmpty());
        const QJsonObject top = diagnoses.first().toObject();
        QCOMPARE(top[QStringLiteral("id")].toString(), QStringLiteral("fragmentation"));
        for (const char* key : { "title", "confidence", "evidence", "fixes" })
            QVERIFY2(top.contains(QLatin1String(key)), key);
        const QJsonObject fix = top[QStringLiteral("fixes")].toArray().first().toObject();
        for (const char* key : { "title", "detail", "snippet", "projected_saving_bytes", "changes_experiment" })
            QVERIFY2(fix.contains(QLatin1String(key)), key);
    }

    // Keys added after the first contract (never renamed): the IPEX platform limit, XLA's
    // BufferAssignment stats, the loop's own memory log, and host-memory kills.
    void jsonCarriesNewerMessageFieldsAndHostKills()
    {
        const QString textB = QStringLiteral(OOMLENS_SOURCE_DIR "/tests/data/text_b/");
        const Run run = oomlens({ QStringLiteral("diagnose"), QStringLiteral("--json"),
            textB + QStringLiteral("xpu_platform_4gb_limit.txt"),
            textB + QStringLiteral("jax_resource_exhausted_buffer_stats.txt"),
            textB + QStringLiteral("longest_batch_in_log.txt"), textB + QStringLiteral("host_dmesg_oom_killer.txt") });
        QCOMPARE(run.exitCode, 0);
        const QJsonObject root = oomlens::test::parseJsonObject(run.out);
        const QJsonArray messages = root[QStringLiteral("oom_messages")].toArray();
        QCOMPARE(messages.size(), 3);
        for (const auto& value : messages) {
            const QJsonObject message = value.toObject();
            for (const char* key : { "platform_limit_bytes", "xla_buffers", "trainable_parameters", "memory_log" })
                QVERIFY2(message.contains(QLatin1String(key)), key);
        }
        const auto withBackend = [&](const QString& backend) {
            for (const auto& value : messages) {
                if (value.toObject()[QStringLiteral("backend")].toString() == backend)
                    return value.toObject();
            }
            return QJsonObject();
        };
        // "can NOT allocate memory block with size larger than 4GB"
        const QJsonObject xpu = withBackend(QStringLiteral("xpu"));
        QCOMPARE(xpu[QStringLiteral("platform_limit_bytes")].toInteger(), qint64(4) * 1024 * 1024 * 1024);
        QVERIFY(xpu[QStringLiteral("xla_buffers")].isNull());
        // "preallocated temp allocation: 20.00GiB", "total allocation: 35.00GiB"
        const QJsonObject xla = withBackend(QStringLiteral("xla"))[QStringLiteral("xla_buffers")].toObject();
        QCOMPARE(xla[QStringLiteral("temp_bytes")].toInteger(), qint64(20) * 1024 * 1024 * 1024);
        QCOMPARE(xla[QStringLiteral("total_bytes")].toInteger(), qint64(35) * 1024 * 1024 * 1024);
        QCOMPARE(xla[QStringLiteral("parameter_bytes")].toInteger(), qint64(15) * 512 * 1024 * 1024);
        // "step  4430 | seq_len 4096 |" after three logged steps
        const QJsonArray log = withBackend(QStringLiteral("cuda"))[QStringLiteral("memory_log")].toArray();
        QVERIFY(log.size() >= 3);
        const QJsonObject last = log.last().toObject();
        QCOMPARE(last[QStringLiteral("step")].toInteger(), qint64(4430));
        QCOMPARE(last[QStringLiteral("sequence_length")].toInteger(), qint64(4096));

        const QJsonArray kills = root[QStringLiteral("host_kills")].toArray();
        QVERIFY(!kills.isEmpty());
        const QJsonObject kill = kills.first().toObject();
        QCOMPARE(kill[QStringLiteral("kind")].toString(), QStringLiteral("kernel_oom_killer"));
        QCOMPARE(kill[QStringLiteral("pid")].toInteger(), qint64(28311));
        QCOMPARE(kill[QStringLiteral("resident_bytes")].toInteger(), qint64(61723420) * 1024);
        for (const char* key : { "line", "process", "limit_bytes", "source_line" })
            QVERIFY2(kill.contains(QLatin1String(key)), key);
    }

    // A log with several failures lists each progress line once: under the first failure after it.
    void memoryLogListsEachLineOnce()
    {
        // Two different failures (the same message twice would read as one repeated).
        const auto oom = [](int gib) -> QByteArray {
            return "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate " + QByteArray::number(gib)
                + ".00 GiB. GPU 0 has a total capacity of 23.65 GiB of which 1.10 GiB is free.\n";
        };
        QByteArray log;
        for (int step = 1; step <= 6; ++step) {
            log += "step " + QByteArray::number(step) + " | loss 2.31 | mem " + QByteArray::number(10 + step)
                + ".0 GiB\n";
            if (step == 4 || step == 6)
                log += oom(step / 2);
        }
        const Run run = oomlens({ QStringLiteral("diagnose"), QStringLiteral("--json"), QStringLiteral("-") }, log);
        QCOMPARE(run.exitCode, 0);
        const QJsonArray messages = oomlens::test::parseJsonObject(run.out)[QStringLiteral("oom_messages")].toArray();
        QCOMPARE(messages.size(), 2);
        const auto steps = [&](int message) {
            QList<qint64> result;
            for (const auto& point : messages[message].toObject()[QStringLiteral("memory_log")].toArray())
                result.append(point.toObject()[QStringLiteral("step")].toInteger());
            return result;
        };
        QCOMPARE(steps(0), (QList<qint64> { 1, 2, 3, 4 }));
        QCOMPARE(steps(1), (QList<qint64> { 5, 6 }));
    }

    void stdinIsAnInput()
    {
        const QByteArray message
            = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a "
              "total capacity of 9.64 GiB of which 22.12 MiB is free. Process 932170 has 6.88 GiB "
              "memory in use. Including non-PyTorch memory, this process has 2.60 GiB memory in use. "
              "Of the allocated memory 2.31 GiB is allocated by PyTorch, and 34.15 MiB is reserved by "
              "PyTorch but unallocated.\n";
        const Run run = oomlens({ QStringLiteral("diagnose"), QStringLiteral("--json"), QStringLiteral("-") }, message);
        QCOMPARE(run.exitCode, 0);
        const QJsonObject root = oomlens::test::parseJsonObject(run.out);
        QCOMPARE(root[QStringLiteral("inputs")].toArray().first().toObject()[QStringLiteral("path")].toString(),
            QStringLiteral("-"));
        const QJsonArray diagnoses = root[QStringLiteral("diagnoses")].toArray();
        QVERIFY(!diagnoses.isEmpty());
        QCOMPARE(diagnoses.first().toObject()[QStringLiteral("id")].toString(), QStringLiteral("other_process"));
    }

    void badInputGetsOneLineAndOthersAreStillAnalyzed()
    {
        QTemporaryDir dir;
        const QString garbage = dir.filePath(QStringLiteral("garbage.bin"));
        QFile file(garbage);
        QVERIFY(file.open(QIODevice::WriteOnly));
        QByteArray bytes(4096, '\0');
        for (int i = 0; i < bytes.size(); ++i)
            bytes[i] = static_cast<char>((i * 7919) % 251);
        file.write(bytes);
        file.close();
        const QString missing = dir.filePath(QStringLiteral("missing.pickle"));

        const Run run = oomlens({ QStringLiteral("diagnose"), QStringLiteral("--json"), garbage, missing, example() });
        QCOMPARE(run.exitCode, 1);
        const QList<QByteArray> lines = run.err.trimmed().split('\n');
        QCOMPARE(lines.size(), 2);
        QVERIFY(lines[0].contains("garbage.bin"));
        QVERIFY(lines[1].contains("missing.pickle"));
        const QJsonObject root = oomlens::test::parseJsonObject(run.out);
        const QJsonArray inputs = root[QStringLiteral("inputs")].toArray();
        QCOMPARE(inputs.size(), 3);
        QVERIFY(!inputs[0].toObject()[QStringLiteral("error")].isNull());
        QVERIFY(inputs[2].toObject()[QStringLiteral("error")].isNull());
        QVERIFY(!root[QStringLiteral("diagnoses")].toArray().isEmpty());
    }

    void emptyInputIsAnError()
    {
        const Run run = oomlens({ QStringLiteral("diagnose"), QStringLiteral("-") }, QByteArray());
        QCOMPARE(run.exitCode, 1);
        QVERIFY(run.err.contains("empty"));
    }

    void textOutputNamesTheDiagnosis()
    {
        const Run run = oomlens({ QStringLiteral("diagnose"), example() });
        QCOMPARE(run.exitCode, 0);
        QVERIFY(run.out.contains("fragmentation"));
        QVERIFY(run.out.contains("expandable_segments"));
    }

    // The three inputs the brief answer was measured on: the bundled example, a three-line paste
    // from a public issue (optimizer step, ../shared/corpus tb-034) and a small real snapshot.
    void briefAnswerFitsOnAScreen_data()
    {
        QTest::addColumn<QString>("input");
        QTest::addColumn<QByteArray>("stdinBytes");
        QTest::addColumn<bool>("needsCorpus");
        QTest::newRow("bundled example") << example() << QByteArray() << false;
        QByteArray paste;
        for (const auto& record : oomlens::test::corpusTextRecords(QStringLiteral("oom_tracebacks.jsonl")))
            if (record["id"] == "tb-034")
                paste = QByteArray::fromStdString(record["text"].get<std::string>());
        QTest::newRow("public paste") << QStringLiteral("-") << paste << true;
        QTest::newRow("real snapshot") << oomlens::test::corpusDir()
                + QStringLiteral("/snapshots/Nesta-gitU__discrete_diffusion__memory_snapshot.json")
                                       << QByteArray() << true;
    }

    void briefAnswerFitsOnAScreen()
    {
        QFETCH(QString, input);
        QFETCH(QByteArray, stdinBytes);
        QFETCH(bool, needsCorpus);
        if (needsCorpus)
            OOMLENS_REQUIRE_SHARED();
        const Run brief = oomlens({ QStringLiteral("diagnose"), input }, stdinBytes);
        QCOMPARE(brief.exitCode, 0);
        const QList<QByteArray> lines = brief.out.split('\n');
        QVERIFY2(lines.size() <= 31, brief.out.constData()); // 30 lines and the empty piece after the last
        QVERIFY2(brief.out.contains("\nVerdict: "), brief.out.constData());
        QVERIFY2(brief.out.contains("\nEvidence:\n  - "), brief.out.constData());
        QVERIFY2(brief.out.contains("\nFix"), brief.out.constData());
        QVERIFY(brief.out.contains("--full"));

        // --full says everything the brief answer says: each evidence line, the fix and its code.
        const Run full = oomlens({ QStringLiteral("diagnose"), QStringLiteral("--full"), input }, stdinBytes);
        QCOMPARE(full.exitCode, 0);
        QVERIFY(full.out.size() > brief.out.size());
        for (const QByteArray& line : lines) {
            QByteArray said;
            if (line.startsWith("  - "))
                said = line.mid(4);
            else if (line.startsWith("  | "))
                said = "| " + line.mid(4);
            else if (line.startsWith("Verdict: "))
                said = line.mid(9, line.indexOf(" (") - 9);
            if (!said.isEmpty())
                QVERIFY2(full.out.contains(said), said.constData());
        }
    }

    // nn.DataParallel across three GPUs: the text says what each device held, not only the one it
    // describes in full.
    void multiDeviceSnapshotNamesEveryDevice()
    {
        OOMLENS_REQUIRE_SHARED();
        const QString snapshot = oomlens::test::corpusDir()
            + QStringLiteral("/snapshots/Constructor-Sun__code_location__memory_snapshot.pickle");
        const QJsonObject json = oomlens::test::parseJsonObject(
            oomlens::test::runOomlens({ QStringLiteral("diagnose"), QStringLiteral("--json"), snapshot }).out);
        QVERIFY(!json[QStringLiteral("snapshots")].toArray().isEmpty());
        for (const QString& mode : { QStringLiteral("--full"), QString() }) {
            QStringList arguments { QStringLiteral("diagnose"), snapshot };
            if (!mode.isEmpty())
                arguments.insert(1, mode);
            const Run run = oomlens(arguments);
            QCOMPARE(run.exitCode, 0);
            for (const char* device : { "device 0: peak ", "device 1 (described): peak ", "device 2: peak " })
                QVERIFY2(run.out.contains(device), qPrintable(mode + QLatin1Char(' ') + QLatin1String(device)));
        }
    }

    // The verl RL snapshot: what the JSON knows of its pools and of frees that waited for another
    // stream is in the text too.
    void rlSnapshotTextHasPoolsAndPendingFrees()
    {
        OOMLENS_REQUIRE_SHARED();
        const QString snapshot
            = oomlens::test::corpusDir() + QStringLiteral("/snapshots-rl/volcengine__verl__mem.pickle");
        const QJsonObject json = oomlens::test::parseJsonObject(
            oomlens::test::runOomlens({ QStringLiteral("diagnose"), QStringLiteral("--json"), snapshot }).out);
        const QJsonObject pools = json[QStringLiteral("private_pools")].toArray().at(0).toObject();
        const QJsonObject pending = json[QStringLiteral("pending_frees")].toArray().at(0).toObject();
        const Run full = oomlens({ QStringLiteral("diagnose"), QStringLiteral("--full"), snapshot });
        QCOMPARE(full.exitCode, 0);
        QVERIFY(pools[QStringLiteral("has_private")].toBool() || pending[QStringLiteral("waited_frees")].toInt() > 0);
        if (pools[QStringLiteral("has_private")].toBool()) {
            QVERIFY2(full.out.contains("memory pools at the dump:"), full.out.constData());
            for (const QJsonValue pool : pools[QStringLiteral("pools")].toArray()) {
                const QString heldBy = pool[QStringLiteral("held_by")][QStringLiteral("text")].toString();
                if (!heldBy.isEmpty())
                    QVERIFY2(full.out.contains(heldBy.toUtf8()), qPrintable(heldBy));
            }
        }
        if (pending[QStringLiteral("waited_frees")].toInt() > 0)
            QVERIFY2(full.out.contains(QByteArray(QByteArray::number(pending[QStringLiteral("waited_frees")].toInt())
                         + " frees waited for another stream")),
                full.out.constData());
    }

    // The failing phase a user reads is the parser's: the JSON's messages and its failing_phase.
    void failingPhaseIsOneValue()
    {
        OOMLENS_REQUIRE_SHARED();
        for (const char* id : { "tb-028", "tb-038" }) { // rank-prefixed vLLM workers; a bare traceback
            QByteArray paste;
            for (const auto& record : oomlens::test::corpusTextRecords(QStringLiteral("oom_tracebacks.jsonl")))
                if (record["id"] == id)
                    paste = QByteArray::fromStdString(record["text"].get<std::string>());
            QVERIFY(!paste.isEmpty());
            const QJsonObject json = oomlens::test::parseJsonObject(oomlens::test::runOomlens(
                { QStringLiteral("diagnose"), QStringLiteral("--json"), QStringLiteral("-") }, paste)
                                                                        .out);
            const QString phase = json[QStringLiteral("failing_phase")].toString();
            QVERIFY2(phase != QStringLiteral("unknown"), id);
            for (const QJsonValue message : json[QStringLiteral("oom_messages")].toArray())
                QCOMPARE(message[QStringLiteral("phase")].toString(), phase);
        }
    }
};

QTEST_GUILESS_MAIN(TestDiagnoseCli)
#include "tst_diagnosecli.moc"
