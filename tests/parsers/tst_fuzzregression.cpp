#include "common/clirun.h"
#include "common/testutil.h"
#include "fuzz/fuzztargets.h"

#include <QDir>
#include <QTest>

#include <cstring>
#include <memory>

using namespace oomlens;

namespace {

using Target = std::string (*)(const uint8_t*, size_t);

struct NamedTarget
{
    const char* folder;
    Target run;
};

constexpr NamedTarget targets[] = {
    { "text", fuzz::textTarget },
    { "pickle", fuzz::pickleTarget },
    { "container", fuzz::containerTarget },
    { "case", fuzz::caseTarget },
    { "sidecar", fuzz::sidecarTarget },
    { "rules", fuzz::rulesTarget },
    { "config", fuzz::configTarget },
    { "plan", fuzz::planFlagsTarget },
};

QString corpusDir(const char* folder)
{
    return QStringLiteral(OOMLENS_SOURCE_DIR "/fuzz/corpus/") + QLatin1String(folder);
}

// In an exactly sized heap block, as libFuzzer passes it: a read one byte past the end is then an
// AddressSanitizer report rather than a read of QByteArray's terminator or spare capacity.
std::string run(Target target, const QByteArray& bytes)
{
    const auto size = static_cast<size_t>(bytes.size());
    const auto copy = std::make_unique<uint8_t[]>(size);
    std::memcpy(copy.get(), bytes.constData(), size);
    return target(copy.get(), size);
}

QByteArray seed(const char* folder, const char* name)
{
    return test::readFile(corpusDir(folder) + QLatin1Char('/') + QLatin1String(name));
}

} // namespace

// Replays every committed seed and every crash the fuzzers found (fuzz/corpus/<target>/) through
// the same entry points the libFuzzer executables use, so a fixed crash stays fixed in any build.
class TestFuzzRegression : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void corpus_data()
    {
        QTest::addColumn<int>("target");
        QTest::addColumn<QString>("path");
        int rows = 0;
        for (int t = 0; t < int(std::size(targets)); ++t) {
            const QDir dir(corpusDir(targets[t].folder));
            const QStringList files = dir.entryList(QDir::Files, QDir::Name);
            QVERIFY2(!files.isEmpty(), qPrintable(QStringLiteral("no seeds in ") + dir.path()));
            for (const QString& file : files) {
                QTest::addRow("%s/%s", targets[t].folder, qPrintable(file)) << t << dir.filePath(file);
                ++rows;
            }
        }
        QVERIFY(rows >= 20);
    }

    void corpus()
    {
        QFETCH(int, target);
        QFETCH(QString, path);
        const QByteArray bytes = test::readFile(path);
        const std::string problem = run(targets[target].run, bytes);
        QVERIFY2(problem.empty(), problem.c_str());
    }

    // The seeds must reach the code behind the sniffing, or the fuzzers would mutate noise.
    void pickleSeedsDecode_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<int>("events");
        for (int protocol = 0; protocol <= 5; ++protocol)
            QTest::addRow("p%d", protocol) << QStringLiteral("snapshot_p%1.pickle").arg(protocol) << 6;
        QTest::newRow("segment list") << QStringLiteral("segment_list_p2.pickle") << 0;
    }

    void pickleSeedsDecode()
    {
        QFETCH(QString, name);
        QFETCH(int, events);
        const QByteArray bytes = seed("pickle", qPrintable(name));
        const SnapshotReadResult result
            = readSnapshot(std::string_view(bytes.constData(), size_t(bytes.size())), fuzz::nativeOnly());
        QVERIFY2(result.snapshot, result.error.c_str());
        QCOMPARE(result.snapshot->totalTraceEvents(), size_t(events));
        QCOMPARE(result.snapshot->segments.size(), size_t(1));
    }

    void containerSeedsUnwrap_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QString>("container");
        QTest::newRow("pickle") << QStringLiteral("snapshot.pickle") << QStringLiteral("pickle");
        QTest::newRow("gzip") << QStringLiteral("snapshot.pickle.gz") << QStringLiteral("gzip");
        QTest::newRow("stored zip") << QStringLiteral("snapshot_stored.zip") << QStringLiteral("torch.save zip");
        QTest::newRow("deflated zip") << QStringLiteral("snapshot_deflated.zip") << QStringLiteral("torch.save zip");
        QTest::newRow("zip64") << QStringLiteral("snapshot_zip64.zip") << QStringLiteral("torch.save zip");
        QTest::newRow("json") << QStringLiteral("snapshot.json") << QStringLiteral("json");
        QTest::newRow("memory_viz") << QStringLiteral("snapshot_memory_viz.html") << QStringLiteral("memory_viz html");
    }

    void containerSeedsUnwrap()
    {
        QFETCH(QString, name);
        QFETCH(QString, container);
        const QByteArray bytes = seed("container", qPrintable(name));
        const SnapshotReadResult result
            = readSnapshot(std::string_view(bytes.constData(), size_t(bytes.size())), fuzz::nativeOnly());
        QVERIFY2(result.snapshot, result.error.c_str());
        QCOMPARE(QString::fromStdString(result.snapshot->container), container);
        QCOMPARE(result.snapshot->totalTraceEvents(), size_t(6));
    }

    void textSeedsFindSomething()
    {
        const QDir dir(corpusDir("text"));
        for (const QString& file : dir.entryList(QDir::Files)) {
            const QByteArray bytes = test::readFile(dir.filePath(file));
            const TextFindings findings = parseText(std::string_view(bytes.constData(), size_t(bytes.size())));
            QVERIFY2(!findings.empty(), qPrintable(file));
        }
    }

    void caseSeedsCombineInputs()
    {
        const QByteArray bytes = seed("case", "snapshot_and_message");
        const std::string_view all(bytes.constData(), size_t(bytes.size()));
        const size_t cut = all.find(fuzz::nextInput);
        QVERIFY(cut != std::string_view::npos);
        Case input;
        addInput(input, "snapshot", all.substr(0, cut), fuzz::nativeOnly());
        addInput(input, "message", all.substr(cut + fuzz::nextInput.size()), fuzz::nativeOnly());
        QCOMPARE(input.snapshots.size(), size_t(1));
        QCOMPARE(input.text.oomMessages.size(), size_t(1));
        QVERIFY(!analyzeCase(input).diagnoses.empty());
    }

    // The seeds of the newer inputs reach past their parsers: a sidecar that is read, rules that
    // parse and recategorize the snapshot after them, a config that yields a model, flags that plan.
    void newerInputSeedsAreAccepted()
    {
        const QByteArray side = seed("sidecar", "sidecar.oomlens.json");
        const SidecarParseResult sidecar
            = parseCaptureSidecar(std::string_view(side.constData(), size_t(side.size())), "s.oomlens.json");
        QVERIFY2(sidecar.sidecar, sidecar.error.c_str());
        QCOMPARE(sidecar.sidecar->rank, std::optional<int>(1));

        for (const char* name : { "rules.json", "rules.yaml", "rules_only.yaml" }) {
            const QByteArray bytes = seed("rules", name);
            const auto parts = fuzz::splitFirst(std::string_view(bytes.constData(), size_t(bytes.size())));
            std::string error;
            const std::optional<CategoryRules> rules = parseCategoryRules(parts.first, &error);
            QVERIFY2(rules, error.c_str());
            QCOMPARE(rules->rules().size(), size_t(name == std::string_view("rules.json") ? 3 : 5));
        }

        for (const char* name : { "gpt2_config.json", "llama3_8b_config.json" }) {
            const QByteArray bytes = seed("config", name);
            const planner::HfConfigResult config
                = planner::modelFromHfConfig(std::string_view(bytes.constData(), size_t(bytes.size())));
            QVERIFY2(config.model, config.error.c_str());
            QVERIFY(config.model->totalParameters() > 100'000'000);
        }
    }

    // The plan target must plan, not stop at its first line: a typo'd flag ends the input quietly,
    // so a seed that never reaches makePlan would fuzz nothing. Every seed's set-up is valid.
    void planSeedsReachThePlanner()
    {
        const QDir dir(corpusDir("plan"));
        for (const QString& file : dir.entryList(QDir::Files)) {
            if (file.startsWith(QLatin1String("crash-")))
                continue;
            const QByteArray bytes = test::readFile(dir.filePath(file));
            QVERIFY2(bytes.contains("\n"), qPrintable(file));
            // The same reading as the target, but checked line by line through the CLI itself.
            QStringList arguments { QStringLiteral("plan"), QStringLiteral("--json") };
            for (const QByteArray& line : bytes.split('\n')) {
                if (line.isEmpty())
                    continue;
                const QList<QByteArray> parts = line.split(' ');
                arguments << QStringLiteral("--") + QString::fromUtf8(parts[0]);
                if (parts.size() > 1)
                    arguments << QString::fromUtf8(parts[1]);
            }
            OOMLENS_REQUIRE_BINARY();
            const test::CliRun result = test::runOomlens(arguments);
            QVERIFY2(result.exitCode == 0, qPrintable(file + QLatin1String(": ") + QString::fromUtf8(result.err)));
            const auto json = nlohmann::json::parse(
                result.out.constData(), result.out.constData() + result.out.size(), nullptr, false);
            QVERIFY2(!json.is_discarded(), qPrintable(file));
        }
    }

    // `plan` found a card size past 2^64 bytes ("--card 24e192"): converting it was undefined
    // behaviour, which only the sanitizer builds would notice. Sizes beyond any card are refused.
    void cardSizesBeyondAnyCardAreRefused()
    {
        QVERIFY(!planner::cardFromText("24e192"));
        QVERIFY(!planner::cardFromText("2e15"));
        QVERIFY(planner::cardFromText("24GB"));
        QCOMPARE(planner::cardFromText("1e12")->capacityBytes, uint64_t(1'000'000'000'000));
    }

    // A key that is not UTF-8 ("addess\x94") is kept, as U+FFFD, not passed on raw: the JSON
    // output would refuse it.
    void invalidUtf8StringsAreReplaced()
    {
        const QByteArray bytes = seed("case", "crash-invalid-utf8-key");
        const std::string_view all(bytes.constData(), size_t(bytes.size()));
        const SnapshotReadResult result = readSnapshot(all.substr(0, all.find(fuzz::nextInput)), fuzz::nativeOnly());
        QVERIFY2(result.snapshot, result.error.c_str());
        bool found = false;
        for (const std::string& warning : result.snapshot->warnings) {
            QVERIFY2(text::isValidUtf8(warning), warning.c_str());
            found = found || warning.find("addess\xEF\xBF\xBD") != std::string::npos;
        }
        QVERIFY(found);
    }

    // The same file through the real CLI: one JSON document, not an abort.
    void cliJsonSurvivesInvalidUtf8()
    {
        OOMLENS_REQUIRE_BINARY();
        const QByteArray out = test::runOomlens({ QStringLiteral("diagnose"), QStringLiteral("--json"),
                                                    corpusDir("case") + QStringLiteral("/crash-invalid-utf8-key") })
                                   .out;
        const auto json = nlohmann::json::parse(out.constData(), out.constData() + out.size(), nullptr, false);
        QVERIFY2(!json.is_discarded(), out.left(500).constData());
        QVERIFY(json.contains("inputs"));
    }

    // STRING sends the reader to the embedded-Python decoder, whose memo would grow to twice the
    // PUT index and be zero-filled: 64 GiB here. The opcode prescan must refuse it first.
    void pythonFallbackMemoBombIsRefused()
    {
        const std::string_view bomb("\x80\x02S'a'\nr\xf0\xff\xff\xff.", 13);
        const SnapshotReadResult result = readSnapshot(bomb);
        QVERIFY(!result.snapshot);
        QVERIFY2(result.error.find("memo index 4294967280 is out of range at byte 7") != std::string::npos,
            result.error.c_str());
    }

    // The invariants themselves: a target that accepted anything would pass every row above.
    void brokenInvariantsAreReported()
    {
        QCOMPARE(fuzz::checkErrorLine("", "x"), std::string("x: empty error message"));
        QVERIFY(!fuzz::checkErrorLine("two\nlines", "x").empty());
        SnapshotReadResult both;
        both.snapshot = std::make_shared<const Snapshot>();
        both.error = "also an error";
        QVERIFY(!fuzz::checkReadResult(both).empty());
        QVERIFY(!fuzz::checkReadResult(SnapshotReadResult {}).empty());
        TextFindings invalidUtf8;
        invalidUtf8.oomMessages.emplace_back().text = "\xff";
        QVERIFY(!fuzz::checkTextFindings(invalidUtf8).empty());
    }
};

QTEST_GUILESS_MAIN(TestFuzzRegression)
#include "tst_fuzzregression.moc"
