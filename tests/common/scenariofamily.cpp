#include "common/scenariofamily.h"

#include "common/testutil.h"
#include "core/caseanalysis.h"

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
        top.id = QString::fromStdString(analysis.diagnoses.front().id);
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

} // namespace oomlens::test
