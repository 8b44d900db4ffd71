#pragma once

// What the scenario-family suites (tst_diagfamilyb, tst_diagfamilyc) share: reading a family's
// labels, the top diagnosis of a case, the message labels' byte fields, and the one map of rows
// expected to fail today.

#include "core/case.h"

#include <QJsonObject>
#include <QString>
#include <QStringList>

#include <map>
#include <optional>
#include <utility>

namespace oomlens::test {

QJsonObject readJsonObject(const QString& path);
// The scenarios of a family folder: every <name>.json label, by name.
QStringList scenarioNames(const QString& familyDir);
QStringList jsonStrings(const QJsonValue& value);

struct TopDiagnosis
{
    QString id = QStringLiteral("(none)");
    double confidence = 0.0;
};
TopDiagnosis topDiagnosis(const Case& input);

// The byte figures a message label may carry, each with the parsed field it is compared with.
using MessageByteField = std::pair<const char*, std::optional<uint64_t> OomMessage::*>;
extern const MessageByteField messageByteFields[6];

// Marks the current data row as an expected failure when `rows` lists it (row name -> why). A
// listed row that passes is an XPASS, which fails the suite: fixed rows get removed.
void expectFailureIfListed(const std::map<QString, const char*>& rows);

} // namespace oomlens::test
