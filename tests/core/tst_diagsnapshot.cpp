#include "common/analysisfixtures.h"
#include "common/testutil.h"
#include "common/tracebuilder.h"
#include "core/analysis/snapshotanalysis.h"
#include "core/diagnosis/diagnosistext.h"
#include "core/diagnosis/snapshotdiagnosis.h"
#include "core/units.h"
#include "parsers/snapshotreader.h"

#include <QTest>

#include <nlohmann/json.hpp>

using namespace oomlens;

class TestDiagSnapshot : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void scenarios_data()
    {
        QTest::addColumn<QString>("name");
        for (const char* name : { "first_backward", "optimizer_step2", "longest_batch", "eval_accumulation", "leak",
                 "fragmentation", "capacity", "large_allocation" })
            QTest::newRow(name) << QString::fromLatin1(name);
    }

    // Each generated scenario, diagnosed from its snapshot alone, names its own case first.
    void scenarios()
    {
        QFETCH(QString, name);
        const SnapshotAnalysis analysis = test::analyzeScenario(name);
        const auto diagnoses = diagnoseSnapshot(analysis, {});
        if (qEnvironmentVariableIsSet("OOMLENS_DEBUG_DIAG"))
            qDebug().noquote() << QString::fromStdString(diagnosesToText(diagnoses, false));
        QVERIFY(!diagnoses.empty());
        QCOMPARE(QString::fromStdString(diagnoses.front().id), name);
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
