// Family B (tests/data/scenarios_b, tests/data/text_b): scenarios and pasted messages written
// independently of the diagnosis rules (tests/tools/familyb). Each scenario is one row, run
// from the snapshot alone and with its OOM text; each message is one row for its top diagnosis,
// one for its phase and one for its numbers.
//
// Rows that fail today are listed in expectedFailures() below (issue 10). QtTest reports a listed
// row that starts passing as XPASS, which fails the suite: whoever fixes a rule removes its rows.
#include "common/scenariofamily.h"
#include "common/testutil.h"

#include <QFile>
#include <QJsonObject>
#include <QTest>

#include <map>

using namespace oomlens;

namespace {

// Row name -> the issue-10 class it belongs to. The one place to list a row that fails; empty since
// every family-B row passes (a new failing row is added here with its class).
const std::map<QString, const char*>& expectedFailures()
{
    static const std::map<QString, const char*> rows {};
    return rows;
}

const test::ScenarioFamily& family()
{
    static const test::ScenarioFamily family { test::testDataDir() + QStringLiteral("/scenarios_b"),
        test::testDataDir() + QStringLiteral("/text_b"), expectedFailures() };
    return family;
}

} // namespace

class TestDiagFamilyB : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void everyClassIsCovered()
    {
        // The yardstick itself: every diagnosis of issue 10 has scenarios, each readable.
        std::map<QString, int> perCase;
        for (const QString& name : test::scenarioNames(family().scenariosDir)) {
            const QJsonObject label = family().scenarioLabel(name);
            ++perCase[label.value(QStringLiteral("case")).toString()];
            QVERIFY2(QFile::exists(family().scenario(name) + QStringLiteral(".pickle")), qPrintable(name));
            QVERIFY2(QFile::exists(family().scenario(name) + QStringLiteral(".oom.txt")), qPrintable(name));
        }
        for (const char* id : { "fragmentation", "first_backward", "optimizer_step2", "longest_batch",
                 "eval_accumulation", "leak", "capacity", "other_process", "memory_fraction_cap", "large_allocation" })
            QVERIFY2(perCase[QLatin1String(id)] >= 2, id);
        const QJsonObject messages = family().messageLabels();
        QVERIFY(messages.size() >= 30);
    }

    void scenariosRead_data() { test::scenarioRows(family()); }

    // Reading is not part of issue 10: every input of every scenario must load, as one snapshot
    // and at least one OOM message.
    void scenariosRead()
    {
        QFETCH(QString, name);
        test::checkScenarioRead(family(), name);
    }

    void scenarioDiagnosis_data() { test::scenarioDiagnosisRows(family()); }

    // Every scenario yields a diagnosis, and the top one is the label's case (or one it allows),
    // from the snapshot alone and with the OOM text and summary added.
    void scenarioDiagnosis()
    {
        QFETCH(QString, name);
        QFETCH(bool, withText);
        test::checkScenarioDiagnosis(family(), name, withText);
    }

    void messageDiagnosis_data() { test::messageDiagnosisRows(family()); }

    void messageDiagnosis()
    {
        QFETCH(QString, file);
        test::checkMessageDiagnosis(family(), file);
    }

    void messagePhase_data() { test::messagePhaseRows(family()); }

    // The failing phase is found wherever the pasted text shows it.
    void messagePhase()
    {
        QFETCH(QString, file);
        QFETCH(QString, phase);
        test::checkMessagePhase(family(), file, phase);
    }

    void messageNumbers_data() { test::messageNumbersRows(family()); }

    // Every number the message prints is parsed to the byte.
    void messageNumbers()
    {
        QFETCH(QString, file);
        test::checkMessageNumbers(family(), file);
    }
};

QTEST_GUILESS_MAIN(TestDiagFamilyB)
#include "tst_diagfamilyb.moc"
