#include "common/analysisfixtures.h"
#include "common/testutil.h"
#include "common/tracebuilder.h"
#include "core/analysis/snapshotanalysis.h"
#include "core/diagnosis/diagnosistext.h"
#include "core/diagnosis/snapshotdiagnosis.h"
#include "core/units.h"
#include "parsers/snapshotreader.h"

#include <QTest>

using namespace oomlens;

class TestDiagSnapshot : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void scenarios_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<QString>("truth");
        // Every failing scenario of family A; its label names the diagnosis that should rank first.
        for (const auto& [name, expected] : test::failingScenarioLabels())
            QTest::newRow(qPrintable(name)) << name << expected;
    }

    // Each generated scenario, diagnosed from its snapshot alone, names its cause first.
    void scenarios()
    {
        QFETCH(QString, name);
        QFETCH(QString, truth);
        const SnapshotAnalysis analysis = test::analyzeScenario(name);
        const auto diagnoses = diagnoseSnapshot(analysis, {});
        if (qEnvironmentVariableIsSet("OOMLENS_DEBUG_DIAG"))
            qDebug().noquote() << QString::fromStdString(diagnosesToText(diagnoses, false));
        QVERIFY(!diagnoses.empty());
        QCOMPARE(test::diagnosisName(diagnoses.front().id), truth);
        QVERIFY2(diagnoses.front().confidence >= 0.6, "measured evidence deserves a confident call");
        bool linked = false;
        for (const auto& evidence : diagnoses.front().evidence)
            linked |= evidence.link.has_value() && evidence.link->eventIndex >= 0;
        QVERIFY2(linked, "evidence must point at the moment in the trace");
        OOMLENS_COMPARE_GOLDEN(
            QStringLiteral("diagnosis/scenario_") + name + QStringLiteral(".txt"), diagnosesToText(diagnoses));
    }

    void healthyRunGetsNoDiagnosis()
    {
        const SnapshotAnalysis analysis = test::analyzeScenario(QStringLiteral("healthy"));
        QVERIFY(diagnoseSnapshot(analysis, {}).empty());
    }
};

QTEST_GUILESS_MAIN(TestDiagSnapshot)
#include "tst_diagsnapshot.moc"
