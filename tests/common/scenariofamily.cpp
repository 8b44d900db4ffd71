#include "common/scenariofamily.h"

#include "common/analysisfixtures.h"
#include "common/testutil.h"
#include "core/caseanalysis.h"
#include "core/jsonexport.h"
#include "parsers/inputloader.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonArray>
#include <QJsonDocument>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <cstdint>

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

namespace {

// The categories the labels count, product.md §3 (unknown is the product's own: none of the
// simulation's bytes are unknown, so whatever lands there is a miss).
const char* const categories[] = { "parameters", "gradients", "optimizer_state", "activations", "temporaries", "inputs",
    "communication", "kv_cache", "unknown" };

// How far a band may be from the simulation's bytes. The simulation knows what every tensor is
// for; the product infers it from stacks and lifetimes, and a few kinds of tensor are honestly
// ambiguous (the fp32 loss logits between activations and temporaries, a capture's transient
// intermediates, the small pool's odds and ends). In these scenarios those make up less than 5% of
// the peak, and a band 5% of the peak off changes no diagnosis and no fit/no-fit verdict of a fix
// (the counterfactuals all leave at least that much room). The floor of 256 MiB covers the small
// runs, where a single logits tensor is a larger share of a small peak.
uint64_t bandTolerance(uint64_t peakBytes)
{
    return std::max<uint64_t>(peakBytes / 20, uint64_t(256) << 20);
}

QStringList bandMismatches(const nlohmann::ordered_json& product, const QJsonObject& truth, uint64_t tolerance)
{
    QStringList wrong;
    for (const char* category : categories) {
        const auto want = static_cast<uint64_t>(truth.value(QLatin1String(category)).toDouble());
        const uint64_t got = product.contains(category) ? product[category].get<uint64_t>() : 0;
        const uint64_t diff = got > want ? got - want : want - got;
        if (diff > tolerance)
            wrong << QStringLiteral("%1 want %2 MiB got %3 MiB")
                         .arg(QLatin1String(category))
                         .arg(want >> 20)
                         .arg(got >> 20);
    }
    return wrong;
}

// A fix that turns activation checkpointing on: the ladder's checkpointing step, a title that says
// so, or a snippet that is the switch.
bool enablesCheckpointing(const Fix& fix)
{
    static const QRegularExpression title(
        QStringLiteral(
            "(enable|use|turn on|add|apply).{0,30}(activation|gradient) checkpointing|^(activation|gradient) "
            "checkpointing"),
        QRegularExpression::CaseInsensitiveOption);
    static const QRegularExpression snippet(
        QStringLiteral("gradient_checkpointing_enable\\(|gradient_checkpointing\\s*="
                       "\\s*True|checkpoint_wrapper\\(|enable_activation_checkpointing"
                       "\\s*[:=]\\s*[Tt]rue|torch\\.utils\\.checkpoint\\.checkpoint\\(|"
                       "--recompute-(granularity|activations)"));
    const QString name = QString::fromStdString(fix.title);
    if (name.contains(QStringLiteral("offload"), Qt::CaseInsensitive))
        return false; // CPU offload of the checkpointed inputs is what is left to offer
    return fix.kind == FixKind::Checkpointing || title.match(name).hasMatch()
        || snippet.match(QString::fromStdString(fix.snippet)).hasMatch();
}

} // namespace

void scenarioBandRows(const ScenarioFamily& family)
{
    QTest::addColumn<QString>("name");
    for (const QString& name : scenarioNames(family.scenariosDir))
        QTest::newRow(qPrintable(QStringLiteral("bands:") + name)) << name;
}

// The bands of the JSON's categories_at_peak against the simulation's bytes at that peak (and
// categories_at_oom against the bytes at the OOM, once the JSON carries it), within
// bandTolerance(); the total must be the simulation's peak within 1% (the reconstruction).
void checkScenarioBands(const ScenarioFamily& family, const QString& name)
{
    const QJsonObject label = family.scenarioLabel(name);
    const Case input = scenarioCase(family.scenario(name), false);
    const auto doc = caseToJson(input, analyzeCase(input));
    QVERIFY(!doc["snapshots"].empty());
    const auto& snapshot = doc["snapshots"][0];
    const auto peak = static_cast<uint64_t>(label.value(QStringLiteral("peak_allocated_bytes")).toDouble());
    const auto got = snapshot["peak_allocated_bytes"].get<uint64_t>();
    QVERIFY2((got > peak ? got - peak : peak - got) <= peak / 100,
        qPrintable(QStringLiteral("peak want %1 got %2").arg(peak).arg(got)));
    const uint64_t tolerance = bandTolerance(peak);
    QStringList wrong = bandMismatches(
        snapshot["categories_at_peak"], label.value(QStringLiteral("bytes_at_peak")).toObject(), tolerance);
    if (snapshot.contains("categories_at_oom") && snapshot["categories_at_oom"].is_object()) {
        for (const QString& miss : bandMismatches(
                 snapshot["categories_at_oom"], label.value(QStringLiteral("bytes_at_oom")).toObject(), tolerance))
            wrong << QStringLiteral("at oom: ") + miss;
    }
    expectFailureIfListed(family.expectedFailures);
    QVERIFY2(wrong.isEmpty(), qPrintable(wrong.join(QStringLiteral("; "))));
}

void checkpointingRows(const ScenarioFamily& family)
{
    QTest::addColumn<QString>("name");
    for (const QString& name : scenarioNames(family.scenariosDir)) {
        if (family.scenarioLabel(name).value(QStringLiteral("checkpointing")).toBool())
            QTest::newRow(qPrintable(QStringLiteral("ckpt:") + name)) << name;
    }
}

// Activation checkpointing is on in these runs: no fix of any diagnosis may propose it.
void checkCheckpointingNotProposed(const ScenarioFamily& family, const QString& name)
{
    const Case input = scenarioCase(family.scenario(name), true);
    const CaseAnalysis analysis = analyzeCase(input);
    QVERIFY(!analysis.diagnoses.empty());
    QStringList proposals;
    for (const auto& diagnosis : analysis.diagnoses) {
        for (const auto& fix : diagnosis.fixes) {
            if (enablesCheckpointing(fix))
                proposals << QString::fromStdString(fix.title);
        }
    }
    expectFailureIfListed(family.expectedFailures);
    QVERIFY2(proposals.isEmpty(), qPrintable(proposals.join(QStringLiteral(" | "))));
}

void checkGeneratorReproduces(const ScenarioFamily& family, const QString& generatorScript)
{
    QTemporaryDir out;
    QVERIFY(out.isValid());
    QProcess generator;
    generator.setProcessChannelMode(QProcess::MergedChannels);
    QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
    env.insert(QStringLiteral("PYTHONDONTWRITEBYTECODE"), QStringLiteral("1")); // nothing written into the source tree
    generator.setProcessEnvironment(env);
    generator.start(QStringLiteral(OOMLENS_PYTHON), { generatorScript, QStringLiteral("--out"), out.path() });
    QVERIFY2(generator.waitForFinished(240000), "the generator did not finish in 4 minutes");
    const QByteArray log = generator.readAll();
    QVERIFY2(generator.exitStatus() == QProcess::NormalExit && generator.exitCode() == 0, log.right(2000).constData());
    const QDir committed(family.scenariosDir);
    const QStringList files = committed.entryList(QDir::Files, QDir::Name);
    QCOMPARE(QDir(out.path()).entryList(QDir::Files, QDir::Name), files);
    for (const QString& file : files)
        QVERIFY2(readFile(committed.filePath(file)) == readFile(out.filePath(file)), qPrintable(file));
}

} // namespace oomlens::test
