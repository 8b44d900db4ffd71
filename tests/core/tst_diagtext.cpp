#include "common/analysisfixtures.h"
#include "common/testutil.h"
#include "core/diagnosis/catalogue.h"
#include "core/diagnosis/diagnosistext.h"
#include "core/diagnosis/textdiagnosis.h"
#include "core/units.h"

#include <QTest>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cmath>

using namespace oomlens;
using nlohmann::json;

namespace {

// "9.80 GiB" -> bytes, the way the parser reads PyTorch's format_size output.
uint64_t bytesOf(const std::string& text)
{
    const size_t space = text.find(' ');
    const double value = std::stod(text.substr(0, space));
    const std::string unit = space == std::string::npos ? "bytes" : text.substr(space + 1);
    double scale = 1;
    if (unit == "KiB")
        scale = KiB;
    else if (unit == "MiB")
        scale = MiB;
    else if (unit == "GiB")
        scale = GiB;
    return static_cast<uint64_t>(std::llround(value * scale));
}

std::optional<uint64_t> optionalBytes(const json& object, const char* key)
{
    if (!object.contains(key))
        return std::nullopt;
    return bytesOf(object[key].get<std::string>());
}

// A fixture's backend or template by its JSON name; a name the code does not know is a broken fixture.
template <typename FromName> auto named(FromName fromName, const std::string& name)
{
    const auto value = fromName(name);
    if (!value)
        qFatal("unknown name in a fixture: \"%s\"", name.c_str());
    return *value;
}

OomMessage messageFrom(const json& m)
{
    OomMessage message;
    message.backend = named(backendFromName, m.value("backend", "cuda"));
    message.templateId = named(oomTemplateFromName, m.value("template", ""));
    message.device = m.value("device", 0);
    message.requestedBytes = optionalBytes(m, "requested");
    message.totalBytes = optionalBytes(m, "total");
    message.freeBytes = optionalBytes(m, "free");
    message.allocatedBytes = optionalBytes(m, "allocated");
    message.reservedBytes = optionalBytes(m, "reserved");
    message.reservedUnallocatedBytes = optionalBytes(m, "reserved_unallocated");
    message.allowedBytes = optionalBytes(m, "allowed");
    message.otherAllocationsBytes = optionalBytes(m, "other_allocations");
    message.probable = m.value("probable", false);
    message.phase = phaseFromName(m.value("phase", "unknown"));
    message.sourceLine = m.value("line", 0);
    for (const auto& p : m.value("processes", json::array())) {
        ProcessUsage usage;
        if (p.contains("pid"))
            usage.pid = p["pid"].get<int64_t>();
        usage.bytes = bytesOf(p["bytes"].get<std::string>());
        usage.self = p.value("self", false);
        message.processes.push_back(usage);
    }
    if (m.contains("phase_evidence") || m.contains("frames")) {
        TracebackInfo traceback;
        traceback.phase = message.phase;
        traceback.phaseEvidence = m.value("phase_evidence", "");
        for (const auto& function : m.value("frames", json::array()))
            traceback.frames.push_back({ "train.py", 1, function.get<std::string>(), {} });
        message.traceback = traceback;
    }
    return message;
}

TextFindings findingsFrom(const json& fixture)
{
    TextFindings findings;
    for (const auto& earlier : fixture.value("earlier", json::array()))
        findings.oomMessages.push_back(messageFrom(earlier));
    findings.oomMessages.push_back(messageFrom(fixture["message"]));
    if (fixture.contains("alloc_conf")) {
        AllocConfSetting setting;
        setting.raw = fixture["alloc_conf"].get<std::string>();
        const size_t colon = setting.raw.find(':');
        setting.options[setting.raw.substr(0, colon)] = setting.raw.substr(colon + 1);
        setting.source = "export";
        setting.sourceLine = 2;
        findings.allocConfs.push_back(setting);
    }
    if (fixture.contains("summary")) {
        const json& s = fixture["summary"];
        MemorySummary summary;
        summary.rows["non_releasable_memory"].current = bytesOf(s["non_releasable"].get<std::string>());
        summary.rows["gpu_reserved_memory"].current = bytesOf(s["reserved"].get<std::string>());
        summary.allocRetries = s.value("alloc_retries", 0);
        findings.summaries.push_back(summary);
    }
    if (fixture.contains("nvidia_smi")) {
        const json& s = fixture["nvidia_smi"];
        NvidiaSmiTable table;
        table.gpus.push_back({ 0, "NVIDIA GeForce RTX 4090", std::nullopt, bytesOf(s["total"].get<std::string>()) });
        for (const auto& p : s["processes"])
            table.processes.push_back(
                { 0, p["pid"].get<int64_t>(), "C", "python", bytesOf(p["bytes"].get<std::string>()) });
        findings.nvidiaSmi.push_back(table);
    }
    return findings;
}

json loadFixtures()
{
    return json::parse(test::readFile(test::testDataDir() + QStringLiteral("/diag/messages.json")).toStdString());
}

bool hasId(const std::vector<Diagnosis>& diagnoses, const std::string& name)
{
    return std::any_of(
        diagnoses.begin(), diagnoses.end(), [&](const Diagnosis& d) { return diagnosisIdName(d.id) == name; });
}

} // namespace

class TestDiagText : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void fixtures_data()
    {
        QTest::addColumn<QString>("name");
        for (const auto& fixture : loadFixtures()) {
            const QString name = QString::fromStdString(fixture["name"].get<std::string>());
            QTest::newRow(qPrintable(name)) << name;
        }
    }

    void fixtures()
    {
        QFETCH(QString, name);
        json fixture;
        for (const auto& f : loadFixtures()) {
            if (QString::fromStdString(f["name"].get<std::string>()) == name)
                fixture = f;
        }
        const auto diagnoses = diagnoseText(findingsFrom(fixture));
        QVERIFY(!diagnoses.empty());
        if (fixture.contains("expect_top"))
            QCOMPARE(test::diagnosisName(diagnoses.front().id),
                QString::fromStdString(fixture["expect_top"].get<std::string>()));
        for (const auto& id : fixture.value("expect", json::array()))
            QVERIFY2(hasId(diagnoses, id.get<std::string>()), id.get<std::string>().c_str());
        for (const auto& d : diagnoses) {
            const std::string id = diagnosisIdText(d.id);
            QVERIFY2(!catalogueTitle(d.id).empty(), id.c_str());
            QVERIFY(d.confidence > 0 && d.confidence <= 0.97);
            QVERIFY2(!d.evidence.empty(), id.c_str());
            QVERIFY2(!d.fixes.empty(), id.c_str());
            // Text alone is thin evidence for a phase case.
            if (d.id == DiagnosisId::FirstBackward || d.id == DiagnosisId::OptimizerStep2
                || d.id == DiagnosisId::EvalAccumulation)
                QVERIFY(d.confidence <= 0.6);
        }
        OOMLENS_COMPARE_GOLDEN(
            QStringLiteral("diagnosis/") + name + QStringLiteral(".txt"), diagnosesToText(diagnoses));
    }

    void expandableSegmentsNeverRecommendedWhenOn()
    {
        for (const auto& fixture : loadFixtures()) {
            if (!fixture.contains("alloc_conf"))
                continue;
            const auto diagnoses = diagnoseText(findingsFrom(fixture));
            for (const auto& d : diagnoses) {
                for (const auto& fix : d.fixes)
                    QVERIFY2(fix.kind != FixKind::ExpandableSegments, diagnosisIdText(d.id).c_str());
            }
        }
    }

    void messageHintIsNotEvidenceOfExpandableSegments()
    {
        // T3's own text says "try setting expandable_segments:True"; that must not count as on.
        json fixture = json::parse(
            R"json({"message": {"backend": "cuda", "template": "T3", "requested": "2.00 GiB", "total": "23.65 GiB",
            "free": "300.00 MiB", "allocated": "17.00 GiB", "reserved_unallocated": "6.00 GiB"}})json");
        const auto diagnoses = diagnoseText(findingsFrom(fixture));
        const Diagnosis* fragmentation = test::findDiagnosis(diagnoses, DiagnosisId::Fragmentation);
        QVERIFY(fragmentation);
        QCOMPARE(QString::fromStdString(fragmentation->fixes.front().id()), QStringLiteral("expandable_segments"));
        QCOMPARE(*fragmentation->fixes.front().projectedSavingBytes, static_cast<int64_t>(6 * GiB));
        QCOMPARE(*fragmentation->fixes.front().fitsAfter, true);
        QVERIFY(fragmentation->confidence >= 0.8);
    }

    void fragmentationExcludedForCudaMallocAsync()
    {
        json fixture = json::parse(
            R"json({"message": {"backend": "cuda", "template": "T3", "requested": "2.00 GiB", "total": "23.65 GiB",
            "free": "300.00 MiB", "allocated": "17.00 GiB", "reserved_unallocated": "6.00 GiB"}, "alloc_conf": "backend:cudaMallocAsync"})json");
        QVERIFY(!test::findDiagnosis(diagnoseText(findingsFrom(fixture)), DiagnosisId::Fragmentation));
    }

    void probableErrorsGetLowerConfidence()
    {
        json sure = json::parse(
            R"json({"message": {"backend": "cuda", "template": "T3", "phase": "backward", "phase_evidence": "loss.backward()"}})json");
        json probable = sure;
        probable["message"]["probable"] = true;
        const auto a = diagnoseText(findingsFrom(sure));
        const auto b = diagnoseText(findingsFrom(probable));
        QVERIFY(
            test::findDiagnosis(a, DiagnosisId::FirstBackward) && test::findDiagnosis(b, DiagnosisId::FirstBackward));
        QVERIFY(test::findDiagnosis(b, DiagnosisId::FirstBackward)->confidence
            < test::findDiagnosis(a, DiagnosisId::FirstBackward)->confidence);
    }

    void evidenceCarriesTheNumbers()
    {
        json fixture = json::parse(
            R"json({"message": {"backend": "cuda", "template": "T4", "requested": "50.00 MiB", "total": "9.64 GiB",
            "free": "22.12 MiB", "allocated": "2.31 GiB", "reserved_unallocated": "34.15 MiB",
            "processes": [{"pid": 932170, "bytes": "6.88 GiB"}, {"self": true, "bytes": "2.60 GiB"}]}})json");
        const auto diagnoses = diagnoseText(findingsFrom(fixture));
        const Diagnosis* other = test::findDiagnosis(diagnoses, DiagnosisId::OtherProcess);
        QVERIFY(other);
        QVERIFY(other->evidence.front().text.find("932170") != std::string::npos);
        QVERIFY(other->evidence.front().text.find("6.88 GiB") != std::string::npos);
        QCOMPARE(QString::fromStdString(other->fixes.front().id()), QStringLiteral("stop_other_process"));
        QCOMPARE(other->fixes.front().fitsAfter, std::optional<bool>(true));
    }

    void earlierMessagesAddEvidenceButTheLastLeads()
    {
        for (const auto& fixture : loadFixtures()) {
            if (fixture["name"] != "several_messages_last_leads")
                continue;
            const auto diagnoses = diagnoseText(findingsFrom(fixture));
            const Diagnosis* large = test::findDiagnosis(diagnoses, DiagnosisId::LargeAllocation);
            QVERIFY(large); // only the earlier 8 GiB request was large
            QVERIFY(large->evidence.front().text.rfind("earlier OOM at line 120", 0) == 0);
            QVERIFY(large->confidence < diagnoses.front().confidence);
        }
    }

    // The loop logs batch shapes, not sequence lengths: 8 x 384-512 tokens, then 8 x 4096 fails
    // (32768 tokens, 8x the most before). Activations grow with the tokens: the longest batch.
    void batchShapeInTheLogIsTheLongestBatch()
    {
        OomMessage message;
        message.backend = Backend::Cuda;
        message.templateId = OomTemplate::T3;
        message.requestedBytes = 6 * GiB;
        message.totalBytes = 24 * GiB;
        message.freeBytes = 3 * GiB;
        message.allocatedBytes = 19 * GiB;
        message.reservedUnallocatedBytes = 200 * MiB;
        message.phase = Phase::Forward;
        int64_t step = 4400;
        std::vector<MemoryLogPoint> log;
        const auto logged = [&](uint64_t bytes, const char* batch) {
            MemoryLogPoint point;
            point.step = step += 10;
            point.bytes = bytes;
            point.batch = batch;
            log.push_back(point);
        };
        for (const char* batch : { "8x384", "8x512", "8x448" })
            logged(14 * GiB, batch);
        logged(15 * GiB, "8x4096");
        message.memoryLog = MemoryLog(log);
        TextFindings findings;
        findings.oomMessages.push_back(message);
        const auto diagnoses = diagnoseText(findings);
        QVERIFY(!diagnoses.empty());
        const Diagnosis* longest = test::findDiagnosis(diagnoses, DiagnosisId::LongestBatch);
        QVERIFY(longest);
        QCOMPARE(diagnoses.front().id, DiagnosisId::LongestBatch);
        QVERIFY2(longest->evidence.front().text.find("a batch of 8x4096 (32768 tokens), 8x the most logged before it "
                                                     "(4096)")
                != std::string::npos,
            longest->evidence.front().text.c_str());

        // The same shapes throughout: nothing reads as a longer batch.
        log.back().batch = "8x512";
        findings.oomMessages.front().memoryLog = MemoryLog(log);
        QVERIFY(!test::findDiagnosis(diagnoseText(findings), DiagnosisId::LongestBatch));
    }

    void noMessageNoDiagnosis() { QVERIFY(diagnoseText(TextFindings {}).empty()); }
};

QTEST_GUILESS_MAIN(TestDiagText)
#include "tst_diagtext.moc"
