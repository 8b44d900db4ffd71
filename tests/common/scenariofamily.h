#pragma once

// What the scenario-family suites (tst_diagfamilyb to tst_diagfamilye) share: reading a family's
// labels, the top diagnosis of a case, the message labels' byte fields, the one map of rows
// expected to fail today, and the data rows and checks every family runs.

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

// A family: its scenarios (<name>.json, .pickle, .oom.txt), its pasted messages (labels.json and
// the files it names) and the rows expected to fail today (row name -> why).
struct ScenarioFamily
{
    QString scenariosDir;
    QString messagesDir;
    const std::map<QString, const char*>& expectedFailures;

    QString scenario(const QString& name) const { return scenariosDir + QLatin1Char('/') + name; }
    QJsonObject scenarioLabel(const QString& name) const;
    QJsonObject messageLabels() const;
    Case messageCase(const QString& file) const;
};

// The data rows and the body of each check, for the suites' slots of the same names.
void scenarioRows(const ScenarioFamily& family); // "name"
// Every input of the scenario loads, as one snapshot and at least one OOM message.
void checkScenarioRead(const ScenarioFamily& family, const QString& name);
void scenarioDiagnosisRows(const ScenarioFamily& family); // "name", "withText": alone: and text: rows
// A diagnosis, and the top one is the label's case or one it allows.
void checkScenarioDiagnosis(const ScenarioFamily& family, const QString& name, bool withText);
void messageDiagnosisRows(const ScenarioFamily& family); // "file": msg: rows
void checkMessageDiagnosis(const ScenarioFamily& family, const QString& file);
void messagePhaseRows(const ScenarioFamily& family); // "file", "phase": phase: rows, labelled ones only
void checkMessagePhase(const ScenarioFamily& family, const QString& file, const QString& phase);
void messageNumbersRows(const ScenarioFamily& family); // "file": numbers: rows, with a byte figure
// Every byte figure of the label is parsed to the byte.
void checkMessageNumbers(const ScenarioFamily& family, const QString& file);
// The family's data is what its generator writes: run it into a temporary folder and compare every
// file byte for byte (the generator re-checks each label's physics as it writes).
void checkGeneratorReproduces(const ScenarioFamily& family, const QString& generatorScript);
// The simulated families (D, E) label every scenario's bytes by band and whether checkpointing is on.
void scenarioBandRows(const ScenarioFamily& family); // "name": bands: rows
// categories_at_peak (and at the OOM) within 5% of the peak (256 MiB at least) of the label's bytes.
void checkScenarioBands(const ScenarioFamily& family, const QString& name);
void checkpointingRows(const ScenarioFamily& family); // "name": ckpt: rows, where checkpointing is on
// No fix of any diagnosis proposes turning checkpointing on.
void checkCheckpointingNotProposed(const ScenarioFamily& family, const QString& name);

} // namespace oomlens::test
