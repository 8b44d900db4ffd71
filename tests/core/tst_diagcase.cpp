#include "common/analysisfixtures.h"
#include "common/testutil.h"
#include "core/caseanalysis.h"
#include "core/diagnosis/diagnosistext.h"
#include "core/units.h"
#include "parsers/inputloader.h"

#include <QFile>
#include <QTest>

#include <algorithm>

using namespace oomlens;

namespace {

// A bundled family-A scenario by name, as scenarioCase() wants it (the path without extension).
QString scenarioBase(const QString& name)
{
    return test::testDataDir() + QStringLiteral("/scenarios/") + name;
}

} // namespace

class TestDiagCase : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void scenarioWithItsText_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QString>("truth");
        for (const auto& [name, expected] : test::failingScenarioLabels())
            QTest::newRow(qPrintable(name)) << name << expected;
    }

    // Text and snapshot together: the cause still leads, and the message is linked.
    void scenarioWithItsText()
    {
        QFETCH(QString, name);
        QFETCH(QString, truth);
        const Case input = test::scenarioCase(scenarioBase(name), true);
        for (const auto& in : input.inputs)
            QVERIFY2(!in.error, in.error ? in.error->c_str() : "");
        QVERIFY(!input.text.oomMessages.empty());
        const CaseAnalysis analysis = analyzeCase(input);
        QVERIFY(!analysis.diagnoses.empty());
        QCOMPARE(test::diagnosisName(analysis.diagnoses.front().id), truth);
        const bool linked = std::any_of(analysis.links.begin(), analysis.links.end(),
            [](const std::string& note) { return note.find("oom event") != std::string::npos; });
        QVERIFY2(linked, analysis.links.empty() ? "no link notes" : analysis.links.front().c_str());
        QCOMPARE(analysis.headroom.size(), size_t(1));
        QVERIFY(analysis.headroom.front().failed);
        QVERIFY(analysis.headroom.front().capacityBytes.has_value()); // the message's total capacity
        std::string text = diagnosesToText(analysis.diagnoses, false);
        for (const auto& note : analysis.links)
            text += "link: " + note + "\n";
        OOMLENS_COMPARE_GOLDEN(QStringLiteral("diagnosis/case_") + name + QStringLiteral(".txt"), text);
    }

    void textAloneStaysModest()
    {
        // Without the snapshot, the same failures are judged from the message: never more sure
        // than the measured diagnosis, and phase cases stay at or below 0.6.
        for (const DiagnosisId id :
            { DiagnosisId::FirstBackward, DiagnosisId::EvalAccumulation, DiagnosisId::OptimizerStep2 }) {
            const QString name = test::diagnosisName(id);
            Case input;
            const QString path
                = test::testDataDir() + QStringLiteral("/scenarios/") + name + QStringLiteral(".oom.txt");
            addFile(input, path.toStdString());
            const CaseAnalysis fromText = analyzeCase(input);
            const CaseAnalysis measured = analyzeCase(test::scenarioCase(scenarioBase(name), false));
            QVERIFY(!fromText.diagnoses.empty());
            for (const auto& d : fromText.diagnoses) {
                if (d.id == DiagnosisId::FirstBackward || d.id == DiagnosisId::EvalAccumulation
                    || d.id == DiagnosisId::OptimizerStep2)
                    QVERIFY(d.confidence <= 0.6);
            }
            const Diagnosis* same = test::findDiagnosis(measured.diagnoses, id);
            QVERIFY(same);
            if (const Diagnosis* guess = test::findDiagnosis(fromText.diagnoses, id))
                QVERIFY(guess->confidence < same->confidence);
        }
    }

    void healthySnapshotReportsPeakAndHeadroom()
    {
        Case input = test::scenarioCase(scenarioBase(QStringLiteral("healthy")), true);
        NvidiaSmiTable table;
        table.gpus.push_back({ 0, "test card", std::nullopt, 1792 * MiB });
        input.text.nvidiaSmi.push_back(table);
        const CaseAnalysis analysis = analyzeCase(input);
        QVERIFY(analysis.diagnoses.empty());
        QCOMPARE(analysis.headroom.size(), size_t(1));
        const SnapshotHeadroom& headroom = analysis.headroom.front();
        QVERIFY(!headroom.failed);
        QVERIFY(headroom.peakAllocatedBytes > 0);
        QVERIFY(headroom.peakReservedBytes >= headroom.peakAllocatedBytes);
        QCOMPARE(headroom.capacityBytes, std::optional<uint64_t>(1792 * MiB));
        QCOMPARE(*headroom.headroomBytes,
            static_cast<int64_t>(1792 * MiB) - static_cast<int64_t>(headroom.peakReservedBytes));
    }

    void messageFromAnotherDeviceIsNotLinked()
    {
        Case input = test::scenarioCase(scenarioBase(QStringLiteral("fragmentation")), true);
        QVERIFY(!input.text.oomMessages.empty());
        for (auto& message : input.text.oomMessages)
            message.device = 3;
        const CaseAnalysis analysis = analyzeCase(input);
        const bool disagreement = std::any_of(analysis.links.begin(), analysis.links.end(),
            [](const std::string& note) { return note.find("device 3") != std::string::npos; });
        QVERIFY(disagreement);
        QCOMPARE(analysis.diagnoses.front().id, DiagnosisId::Fragmentation);
    }
};

QTEST_GUILESS_MAIN(TestDiagCase)
#include "tst_diagcase.moc"
