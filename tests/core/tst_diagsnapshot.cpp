#include "common/analysisfixtures.h"
#include "common/testutil.h"
#include "common/tracebuilder.h"
#include "core/analysis/snapshotanalysis.h"
#include "core/diagnosis/diagnosistext.h"
#include "core/diagnosis/snapshotdiagnosis.h"
#include "core/units.h"
#include "parsers/snapshotreader.h"

#include <QDir>
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
        QTest::addColumn<QString>("truth");
        // Every failing scenario of family A; its label names the diagnosis that should rank first.
        const QDir dir(test::testDataDir() + QStringLiteral("/scenarios"));
        for (const QString& file : dir.entryList({ QStringLiteral("*.json") }, QDir::Files, QDir::Name)) {
            const QByteArray bytes = test::readFile(dir.filePath(file));
            const auto label = nlohmann::json::parse(bytes.constData(), bytes.constData() + bytes.size());
            if (!label.value("oom", false))
                continue;
            const QString name = file.chopped(5);
            QTest::newRow(qPrintable(name))
                << name << QString::fromStdString(label.value("diagnosis", label.value("case", "")));
        }
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
        QCOMPARE(QString::fromStdString(diagnoses.front().id), truth);
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
