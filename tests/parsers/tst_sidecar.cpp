#include "common/testutil.h"
#include "core/diagnosis/oomfacts.h"
#include "core/jsonexport.h"
#include "parsers/inputloader.h"
#include "parsers/sidecarreader.h"

#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <nlohmann/json.hpp>

using namespace oomlens;

namespace {

constexpr uint64_t mib = uint64_t(1) << 20;
constexpr uint64_t gib = uint64_t(1) << 30;

QString sidecarData(const QString& name)
{
    return test::testDataDir() + QStringLiteral("/sidecar/") + name;
}

void writeFile(const QString& path, const QByteArray& bytes)
{
    QFile file(path);
    QVERIFY2(file.open(QIODevice::WriteOnly), qPrintable(path));
    file.write(bytes);
}

// The captured snapshot copied into `dir` as NAME, with `sidecar` written beside it as the
// helper would name it; returns the snapshot's path.
std::string stage(const QTemporaryDir& dir, const QString& name, const QByteArray& sidecar,
    const QString& snapshot = QStringLiteral("capture.pickle"))
{
    const QString path = dir.filePath(name + QStringLiteral(".pickle"));
    QFile::copy(sidecarData(snapshot), path);
    if (!sidecar.isNull())
        writeFile(dir.filePath(name + QStringLiteral(".oomlens.json")), sidecar);
    return path.toStdString();
}

const AllocConfSetting* settingFrom(const Case& c, const std::string& source)
{
    for (const auto& setting : c.text.allocConfs) {
        if (setting.source == source)
            return &setting;
    }
    return nullptr;
}

} // namespace

class TestSidecar : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void besideTheSnapshot()
    {
        Case c;
        addFile(c, sidecarData(QStringLiteral("capture.pickle")).toStdString());
        QCOMPARE(c.snapshots.size(), size_t(1));
        QCOMPARE(c.inputs.size(), size_t(2));
        QCOMPARE(c.inputs[0].kind, InputKind::Snapshot);
        QVERIFY(!c.inputs[0].error);
        QCOMPARE(c.inputs[1].kind, InputKind::Sidecar);
        QVERIFY2(!c.inputs[1].error, c.inputs[1].error.value_or("").c_str());
        QVERIFY(c.inputs[1].path.ends_with("/sidecar/capture.oomlens.json"));

        QCOMPARE(c.sidecars.size(), size_t(1));
        const CaptureSidecar& sidecar = c.sidecars[0];
        QCOMPARE(sidecar.snapshotIndex, 0);
        QCOMPARE(sidecar.sourcePath, c.inputs[1].path);
        QCOMPARE(sidecar.deviceName.value_or(""), std::string("NVIDIA GeForce RTX 3090"));
        QCOMPARE(sidecar.totalMemoryBytes.value_or(0), uint64_t(25438126080));
        QCOMPARE(sidecar.torchVersion.value_or(""), std::string("2.7.1+cu126"));
        QCOMPARE(sidecar.cudaVersion.value_or(""), std::string("12.6"));
        QCOMPARE(sidecar.rank.value_or(-1), 1);
        QCOMPARE(sidecar.worldSize.value_or(-1), 4);
        QVERIFY(sidecar.nvidiaSmi && sidecar.nvidiaSmi->find("NVIDIA-SMI 535.104.05") != std::string::npos);
        QVERIFY(sidecar.exception && sidecar.exception->find("torch.OutOfMemoryError") != std::string::npos);
    }

    // The sidecar's texts reach TextFindings exactly as if each had been given on its own.
    void textsReachTheFindings()
    {
        Case c;
        addFile(c, sidecarData(QStringLiteral("capture.pickle")).toStdString());
        QCOMPARE(c.text.nvidiaSmi.size(), size_t(1));
        QCOMPARE(c.text.nvidiaSmi[0].gpus.size(), size_t(1));
        QCOMPARE(c.text.nvidiaSmi[0].gpus[0].totalBytes.value_or(0), 24576 * mib);
        QCOMPARE(c.text.nvidiaSmi[0].processes.size(), size_t(1));

        QCOMPARE(c.text.oomMessages.size(), size_t(1));
        const OomMessage& message = c.text.oomMessages[0];
        QCOMPARE(message.requestedBytes.value_or(0), 2 * gib);
        QCOMPARE(message.phase, Phase::Backward);

        const AllocConfSetting* setting = settingFrom(c, "capture.oomlens.json: alloc_conf");
        QVERIFY(setting);
        QCOMPARE(setting->raw, std::string("max_split_size_mb:512,garbage_collection_threshold:0.8"));
        QCOMPARE(setting->maxSplitSizeMb().value_or(0), int64_t(512));
    }

    // A message without the card's size (a CUDA runtime error) learns it from the sidecar's nvidia-smi.
    void capacityFromTheSidecarsNvidiaSmi()
    {
        QTemporaryDir dir;
        nlohmann::json sidecar
            = nlohmann::json::parse(test::readFile(sidecarData(QStringLiteral("capture.oomlens.json"))).toStdString());
        sidecar["exception"] = "torch.AcceleratorError: CUDA error: out of memory\nCUDA kernel errors might be "
                               "asynchronously reported at some other API call, so the stacktrace below might be "
                               "incorrect.\n";
        Case c;
        addFile(c, stage(dir, QStringLiteral("runtime"), QByteArray::fromStdString(sidecar.dump())));
        QCOMPARE(c.sidecars.size(), size_t(1));
        QCOMPARE(c.text.oomMessages.size(), size_t(1));
        OomFacts facts = oomFacts(c.text.oomMessages[0]);
        QVERIFY(!facts.total);
        addNvidiaSmi(facts, c.text.nvidiaSmi);
        QCOMPARE(facts.total.value_or(0), 24576 * mib);
    }

    void embeddedInUserMetadata()
    {
        Case c;
        const std::string path = sidecarData(QStringLiteral("embedded.pickle")).toStdString();
        addFile(c, path);
        QCOMPARE(c.snapshots.size(), size_t(1));
        QCOMPARE(c.inputs.size(), size_t(2));
        QCOMPARE(c.inputs[1].kind, InputKind::Sidecar);
        QCOMPARE(c.inputs[1].path, path + " (user_metadata)");
        QCOMPARE(c.sidecars.size(), size_t(1));
        QCOMPARE(c.sidecars[0].snapshotIndex, 0);
        QCOMPARE(c.sidecars[0].deviceName.value_or(""), std::string("NVIDIA GeForce RTX 3090 (embedded)"));
        QCOMPARE(c.sidecars[0].totalMemoryBytes.value_or(0), uint64_t(25438126080));
        QCOMPARE(c.text.oomMessages.size(), size_t(1));
        QCOMPARE(c.text.nvidiaSmi.size(), size_t(1));
    }

    // Beside and embedded describe the same failure: both are listed, their texts counted once.
    void besideAndEmbeddedFeedTextsOnce()
    {
        QTemporaryDir dir;
        const std::string path = stage(dir, QStringLiteral("both"),
            test::readFile(sidecarData(QStringLiteral("capture.oomlens.json"))), QStringLiteral("embedded.pickle"));
        Case c;
        addFile(c, path);
        QCOMPARE(c.sidecars.size(), size_t(2));
        QCOMPARE(c.text.oomMessages.size(), size_t(1));
        QCOMPARE(c.text.nvidiaSmi.size(), size_t(1));
        QCOMPARE(c.text.allocConfs.size(), size_t(1));
    }

    void malformed_data()
    {
        QTest::addColumn<QByteArray>("sidecar");
        QTest::addColumn<QString>("reason");
        QTest::newRow("truncated") << QByteArray("{\"device_name\": \"A100\", \"total_mem") << "not valid JSON";
        QTest::newRow("empty") << QByteArray("") << "not valid JSON";
        QTest::newRow("binary") << QByteArray("\x80\x04\x95\x00\xff", 5) << "not valid JSON";
        QTest::newRow("array") << QByteArray("[1, 2]") << "expected an object";
        QTest::newRow("unrelated object") << QByteArray("{\"hello\": 1}") << "none of the sidecar's keys";
        QTest::newRow("total as text") << QByteArray("{\"total_memory_bytes\": \"80 GB\"}")
                                       << "'total_memory_bytes' is string, expected a whole number";
        QTest::newRow("negative total") << QByteArray("{\"total_memory_bytes\": -1}") << "'total_memory_bytes' is -1";
        QTest::newRow("rank as list") << QByteArray("{\"rank\": [0]}") << "'rank' is array";
        QTest::newRow("nvidia_smi number") << QByteArray("{\"nvidia_smi\": 3}") << "'nvidia_smi' is number";
    }

    // One clear warning; the snapshot opens as if there were no sidecar.
    void malformed()
    {
        QFETCH(QByteArray, sidecar);
        QFETCH(QString, reason);
        QTemporaryDir dir;
        Case c;
        addFile(c, stage(dir, QStringLiteral("bad"), sidecar));
        QCOMPARE(c.snapshots.size(), size_t(1));
        QCOMPARE(c.inputs.size(), size_t(2));
        QVERIFY(!c.inputs[0].error);
        QCOMPARE(c.inputs[1].kind, InputKind::Sidecar);
        QVERIFY(c.inputs[1].error);
        const QString error = QString::fromStdString(*c.inputs[1].error);
        QVERIFY2(error.startsWith(QStringLiteral("capture sidecar ignored: ")), qPrintable(error));
        QVERIFY2(error.contains(reason), qPrintable(error));
        QVERIFY(c.sidecars.empty());
        QVERIFY(c.text.empty());
        // The warning goes out in diagnose --json too, whatever bytes the file held.
        QCOMPARE(caseToJson(c, CaseAnalysis {})["inputs"][1]["error"].get<std::string>(), *c.inputs[1].error);
        QVERIFY(!caseToJson(c, CaseAnalysis {}).dump().empty());
    }

    void nothingBesideNothingAdded()
    {
        QTemporaryDir dir;
        Case c;
        addFile(c, stage(dir, QStringLiteral("alone"), QByteArray()));
        QCOMPARE(c.inputs.size(), size_t(1));
        QVERIFY(c.sidecars.empty());
        // Stdin has no "beside".
        Case piped;
        const QByteArray bytes = test::readFile(sidecarData(QStringLiteral("capture.pickle")));
        addInput(piped, "-", std::string_view(bytes.constData(), size_t(bytes.size())));
        QCOMPARE(piped.inputs.size(), size_t(1));
        QVERIFY(piped.sidecars.empty());
    }

    // Opened by itself the sidecar is recognised by content, and linked once its snapshot arrives.
    void openedWithItsSnapshot()
    {
        const std::string snapshot = sidecarData(QStringLiteral("capture.pickle")).toStdString();
        const std::string sidecar = sidecarData(QStringLiteral("capture.oomlens.json")).toStdString();
        Case sidecarFirst;
        addFile(sidecarFirst, sidecar);
        QCOMPARE(sidecarFirst.inputs.size(), size_t(1));
        QCOMPARE(sidecarFirst.inputs[0].kind, InputKind::Sidecar);
        QCOMPARE(sidecarFirst.sidecars.size(), size_t(1));
        QCOMPARE(sidecarFirst.sidecars[0].snapshotIndex, -1);
        addFile(sidecarFirst, snapshot);
        QCOMPARE(sidecarFirst.inputs.size(), size_t(2));
        QCOMPARE(sidecarFirst.sidecars.size(), size_t(1));
        QCOMPARE(sidecarFirst.sidecars[0].snapshotIndex, 0);
        QCOMPARE(sidecarFirst.text.oomMessages.size(), size_t(1));

        Case snapshotFirst;
        addFile(snapshotFirst, snapshot);
        addFile(snapshotFirst, sidecar);
        QCOMPARE(snapshotFirst.sidecars.size(), size_t(1));
        QCOMPARE(snapshotFirst.sidecars[0].snapshotIndex, 0);
        QCOMPARE(snapshotFirst.text.oomMessages.size(), size_t(1));
        QCOMPARE(snapshotFirst.text.nvidiaSmi.size(), size_t(1));
    }

    // A structured log line that happens to carry an "exception" is text, not a sidecar.
    void genericJsonStaysText()
    {
        const std::string line = "{\"level\": \"error\", \"rank\": 0, \"exception\": \"torch.OutOfMemoryError: CUDA "
                                 "out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 23.69 GiB "
                                 "of which 1.20 GiB is free.\"}";
        QVERIFY(!looksLikeCaptureSidecar(line));
        Case c;
        addInput(c, "(pasted)", line);
        QCOMPARE(c.inputs.size(), size_t(1));
        QVERIFY(c.inputs[0].kind != InputKind::Sidecar);
        QVERIFY(c.sidecars.empty());
        QCOMPARE(c.text.oomMessages.size(), size_t(1));
        QVERIFY(looksLikeCaptureSidecar("{\"exception\": null, \"total_memory_bytes\": 1}"));
    }

    void compressedAndOtherNames()
    {
        QCOMPARE(sidecarPathsFor("/d/run.pickle"), std::vector<std::string> { "/d/run.oomlens.json" });
        QCOMPARE(sidecarPathsFor("/d/run.pickle.gz"),
            (std::vector<std::string> { "/d/run.pickle.oomlens.json", "/d/run.oomlens.json" }));
        QCOMPARE(sidecarPathsFor("run.pkl"), std::vector<std::string> { "run.oomlens.json" });
        QCOMPARE(sidecarPathsFor("/d.x/snapshot"), std::vector<std::string> { "/d.x/snapshot.oomlens.json" });
        QCOMPARE(sidecarPathsFor("/d/run.v2.pickle"), std::vector<std::string> { "/d/run.v2.oomlens.json" });
        QVERIFY(sidecarPathsFor("/d/run.oomlens.json").empty());

        QTemporaryDir dir;
        const QString gzipped = dir.filePath(QStringLiteral("rank3.pickle.gz"));
        test::runPython(QStringLiteral("import gzip, shutil, sys\n"
                                       "with open(sys.argv[1], 'rb') as a, gzip.open(sys.argv[2], 'wb') as b:\n"
                                       "    shutil.copyfileobj(a, b)\n"),
            { sidecarData(QStringLiteral("capture.pickle")), gzipped });
        QFile::copy(
            sidecarData(QStringLiteral("capture.oomlens.json")), dir.filePath(QStringLiteral("rank3.oomlens.json")));
        Case c;
        addFile(c, gzipped.toStdString());
        QCOMPARE(c.snapshots.size(), size_t(1));
        QCOMPARE(c.sidecars.size(), size_t(1));
        QCOMPARE(c.sidecars[0].snapshotIndex, 0);
    }

    void jsonInputsListTheSidecar()
    {
        Case c;
        addFile(c, sidecarData(QStringLiteral("capture.pickle")).toStdString());
        const auto out = caseToJson(c, CaseAnalysis {});
        QCOMPARE(out["inputs"].size(), size_t(2));
        QCOMPARE(out["inputs"][1]["kind"].get<std::string>(), std::string("sidecar"));
        QVERIFY(out["inputs"][1]["error"].is_null());
        QCOMPARE(out["inputs"][1]["sidecar"]["total_memory_bytes"].get<uint64_t>(), uint64_t(25438126080));
        QCOMPARE(out["inputs"][1]["sidecar"]["snapshot_index"].get<int>(), 0);
        QCOMPARE(out["oom_messages"].size(), size_t(1));
    }
};

QTEST_GUILESS_MAIN(TestSidecar)
#include "tst_sidecar.moc"
