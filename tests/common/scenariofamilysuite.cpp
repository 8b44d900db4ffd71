#include "common/scenariofamilysuite.h"

#include <QFile>
#include <QJsonObject>
#include <QTest>

#include <utility>

namespace oomlens::test {

ScenarioFamilySuite::ScenarioFamilySuite(const ScenarioFamily& family, QString generatorScript)
    : m_family(family)
    , m_generatorScript(std::move(generatorScript))
{ }

void ScenarioFamilySuite::generatorReproducesTheData()
{
    checkGeneratorReproduces(m_family, m_generatorScript);
}

void ScenarioFamilySuite::scenariosRead_data()
{
    scenarioRows(m_family);
}

void ScenarioFamilySuite::scenariosRead()
{
    QFETCH(QString, name);
    checkScenarioRead(m_family, name);
}

void ScenarioFamilySuite::scenarioDiagnosis_data()
{
    scenarioDiagnosisRows(m_family);
}

void ScenarioFamilySuite::scenarioDiagnosis()
{
    QFETCH(QString, name);
    QFETCH(bool, withText);
    checkScenarioDiagnosis(m_family, name, withText);
}

void ScenarioFamilySuite::bands_data()
{
    scenarioBandRows(m_family);
}

void ScenarioFamilySuite::bands()
{
    QFETCH(QString, name);
    checkScenarioBands(m_family, name);
}

void ScenarioFamilySuite::checkpointingNotProposed_data()
{
    checkpointingRows(m_family);
}

void ScenarioFamilySuite::checkpointingNotProposed()
{
    QFETCH(QString, name);
    checkCheckpointingNotProposed(m_family, name);
}

void countLabels(const ScenarioFamily& family, FamilyCensus& census)
{
    census.names = scenarioNames(family.scenariosDir);
    for (const QString& name : census.names) {
        const QJsonObject label = family.scenarioLabel(name);
        ++census.perCase[label.value(QStringLiteral("case")).toString()];
        if (label.value(QStringLiteral("control")).toBool())
            ++census.controls;
        QVERIFY2(QFile::exists(family.scenario(name) + QStringLiteral(".pickle")), qPrintable(name));
        QVERIFY2(QFile::exists(family.scenario(name) + QStringLiteral(".oom.txt")), qPrintable(name));
        QVERIFY2(!label.value(QStringLiteral("phase")).toString().isEmpty(), qPrintable(name));
        QVERIFY2(label.value(QStringLiteral("step")).isDouble(), qPrintable(name));
        QVERIFY2(label.value(QStringLiteral("capacity_bytes")).toDouble() > 0, qPrintable(name));
        QVERIFY2(label.value(QStringLiteral("checkpointing")).isBool(), qPrintable(name));
        QVERIFY2(label.value(QStringLiteral("bytes_at_oom")).isObject(), qPrintable(name));
        QVERIFY2(label.value(QStringLiteral("bytes_at_peak")).isObject(), qPrintable(name));
        QVERIFY2(label.value(QStringLiteral("pending_free_bytes_at_oom")).isDouble(), qPrintable(name));
        QVERIFY2(label.value(QStringLiteral("private_pool_bytes_at_oom")).isDouble(), qPrintable(name));
    }
}

} // namespace oomlens::test
