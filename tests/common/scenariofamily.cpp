#include "common/scenariofamily.h"

#include "common/analysisfixtures.h"
#include "common/testutil.h"
#include "core/caseanalysis.h"
#include "parsers/inputloader.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QTest>

namespace oomlens::test {

QJsonObject readJsonObject(const QString& path)
{
    return QJsonDocument::fromJson(readFile(path)).object();
}

QStringList scenarioNames(const QString& familyDir)
{
    QStringList names;
    for (const QString& file : QDir(familyDir).entryList({ QStringLiteral("*.json") }, QDir::Files, QDir::Name))
        names << QFileInfo(file).completeBaseName();
    return names;
}

QStringList jsonStrings(const QJsonValue& value)
{
    QStringList out;
    for (const auto& item : value.toArray())
        out << item.toString();
    return out;
}

TopDiagnosis topDiagnosis(const Case& input)
{
    const CaseAnalysis analysis = analyzeCase(input);
    TopDiagnosis top;
    if (!analysis.diagnoses.empty()) {
        top.id = diagnosisName(analysis.diagnoses.front().id);
        top.confidence = analysis.diagnoses.front().confidence;
    }
    return top;
}

const MessageByteField messageByteFields[6] = {
    { "requested_bytes", &OomMessage::requestedBytes },
    { "total_bytes", &OomMessage::totalBytes },
    { "free_bytes", &OomMessage::freeBytes },
    { "allocated_bytes", &OomMessage::allocatedBytes },
    { "reserved_bytes", &OomMessage::reservedBytes },
    { "allowed_bytes", &OomMessage::allowedBytes },
};

void expectFailureIfListed(const std::map<QString, const char*>& rows)
{
    const auto found = rows.find(QString::fromLatin1(QTest::currentDataTag()));
    if (found != rows.end())
        QEXPECT_FAIL(QTest::currentDataTag(), found->second, Continue);
}

QJsonObject ScenarioFamily::scenarioLabel(const QString& name) const
{
    return readJsonObject(scenario(name) + QStringLiteral(".json"));
}

QJsonObject ScenarioFamily::messageLabels() const
{
    return readJsonObject(messagesDir + QStringLiteral("/labels.json"));
}

Case ScenarioFamily::messageCase(const QString& file) const
{
    Case input;
    addFile(input, QString(messagesDir + QLatin1Char('/') + file).toStdString());
    return input;
}

void scenarioRows(const ScenarioFamily& family)
{
    QTest::addColumn<QString>("name");
    for (const QString& name : scenarioNames(family.scenariosDir))
        QTest::newRow(qPrintable(name)) << name;
}

void checkScenarioRead(const ScenarioFamily& family, const QString& name)
{
    const Case input = scenarioCase(family.scenario(name), true);
    for (const auto& in : input.inputs)
        QVERIFY2(!in.error, in.error ? in.error->c_str() : "");
    QCOMPARE(input.snapshots.size(), size_t(1));
    QVERIFY(!input.text.oomMessages.empty());
}

void scenarioDiagnosisRows(const ScenarioFamily& family)
{
    QTest::addColumn<QString>("name");
    QTest::addColumn<bool>("withText");
    for (const QString& name : scenarioNames(family.scenariosDir)) {
        QTest::newRow(qPrintable(QStringLiteral("alone:") + name)) << name << false;
        QTest::newRow(qPrintable(QStringLiteral("text:") + name)) << name << true;
    }
}

void checkScenarioDiagnosis(const ScenarioFamily& family, const QString& name, bool withText)
{
    const QJsonObject label = family.scenarioLabel(name);
    const QString truth = label.value(QStringLiteral("case")).toString();
    QStringList allowed = jsonStrings(label.value(QStringLiteral("also_acceptable")));
    if (!withText)
        allowed << jsonStrings(label.value(QStringLiteral("also_acceptable_without_text")));
    const TopDiagnosis top = topDiagnosis(scenarioCase(family.scenario(name), withText));
    QVERIFY2(top.id != QStringLiteral("(none)"), "no diagnosis at all");
    const bool right = top.id == truth || allowed.contains(top.id);
    expectFailureIfListed(family.expectedFailures);
    QVERIFY2(right, qPrintable(QStringLiteral("truth %1, top %2 at %3").arg(truth, top.id).arg(top.confidence)));
}

void messageDiagnosisRows(const ScenarioFamily& family)
{
    QTest::addColumn<QString>("file");
    for (const QString& file : family.messageLabels().keys())
        QTest::newRow(qPrintable(QStringLiteral("msg:") + file)) << file;
}

void checkMessageDiagnosis(const ScenarioFamily& family, const QString& file)
{
    const QJsonObject label = family.messageLabels().value(file).toObject();
    const QString truth = label.value(QStringLiteral("case")).toString();
    const TopDiagnosis top = topDiagnosis(family.messageCase(file));
    const bool right = top.id == truth || jsonStrings(label.value(QStringLiteral("also_acceptable"))).contains(top.id);
    expectFailureIfListed(family.expectedFailures);
    QVERIFY2(right, qPrintable(QStringLiteral("truth %1, top %2 at %3").arg(truth, top.id).arg(top.confidence)));
}

void messagePhaseRows(const ScenarioFamily& family)
{
    QTest::addColumn<QString>("file");
    QTest::addColumn<QString>("phase");
    const QJsonObject labels = family.messageLabels();
    for (const QString& file : labels.keys()) {
        const QString phase = labels.value(file).toObject().value(QStringLiteral("phase")).toString();
        if (!phase.isEmpty())
            QTest::newRow(qPrintable(QStringLiteral("phase:") + file)) << file << phase;
    }
}

void checkMessagePhase(const ScenarioFamily& family, const QString& file, const QString& phase)
{
    const QString found = QString::fromLatin1(phaseName(family.messageCase(file).text.failingPhase()).data());
    expectFailureIfListed(family.expectedFailures);
    QCOMPARE(found, phase);
}

void messageNumbersRows(const ScenarioFamily& family)
{
    QTest::addColumn<QString>("file");
    const QJsonObject labels = family.messageLabels();
    for (const QString& file : labels.keys()) {
        const QJsonObject label = labels.value(file).toObject();
        for (const auto& field : messageByteFields) {
            if (label.contains(QLatin1String(field.first))) {
                QTest::newRow(qPrintable(QStringLiteral("numbers:") + file)) << file;
                break;
            }
        }
    }
}

void checkMessageNumbers(const ScenarioFamily& family, const QString& file)
{
    const QJsonObject label = family.messageLabels().value(file).toObject();
    const Case input = family.messageCase(file);
    QStringList wrong;
    const OomMessage* message = input.text.oomMessages.empty() ? nullptr : &input.text.oomMessages.front();
    for (const auto& [key, member] : messageByteFields) {
        const QJsonValue want = label.value(QLatin1String(key));
        if (want.isUndefined())
            continue;
        const auto expected = static_cast<uint64_t>(want.toDouble());
        const auto got = message ? message->*member : std::nullopt;
        if (!got || *got != expected)
            wrong << QStringLiteral("%1 want %2 got %3")
                         .arg(QLatin1String(key))
                         .arg(expected)
                         .arg(got ? QString::number(*got) : QStringLiteral("nothing"));
    }
    expectFailureIfListed(family.expectedFailures);
    QVERIFY2(wrong.isEmpty(), qPrintable(wrong.join(QStringLiteral("; "))));
}

} // namespace oomlens::test
