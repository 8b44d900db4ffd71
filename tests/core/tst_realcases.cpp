// The real cases of tests/data/real: snapshots, OOM messages and summaries recorded on a CUDA GPU
// (make_cases.py and tests/tools/gpu), with the truth reasoned from each run in expected.json, not
// from the rules. One row per case from the snapshot alone and one with its OOM text and summary;
// the failing phase is checked against what the script knew when it failed.
//
// Rows that fail today are listed in expectedFailures(); a listed row that starts passing is an
// XPASS, which fails the suite, so whoever fixes a rule removes its rows. The data is in the
// repository, so nothing here is skipped.
#include "common/analysisfixtures.h"
#include "common/scenariofamily.h"
#include "common/testutil.h"
#include "core/caseanalysis.h"
#include "core/phase.h"
#include "parsers/inputloader.h"

#include <QDir>
#include <QFile>
#include <QJsonObject>
#include <QTest>

#include <map>
#include <regex>

using namespace oomlens;

namespace {

// Row name -> why it fails today. The one place to shrink as the rules improve.
const std::map<QString, const char*>& expectedFailures()
{
    static const std::map<QString, const char*> rows {
        { QStringLiteral("alone:heldout/sgd_momentum_step"),
            "held out: SGD keeps momentum only when it is set, and the snapshot ends while the first buffers "
            "are made: only the traceback's line (the grads' clone in _multi_tensor_sgd) shows momentum is on, so "
            "167.9 M params x 12 B (1.03x the limit) is capacity with the text, not alone" },
    };
    return rows;
}

QString realDir()
{
    return test::testDataDir() + QStringLiteral("/real");
}

QJsonObject expectations()
{
    QJsonObject all = test::readJsonObject(realDir() + QStringLiteral("/expected.json"));
    all.remove(QStringLiteral("_doc"));
    return all;
}

// A case as a user opens it: the snapshot (the capture helper's sidecar is found beside it), and
// with withText its OOM message and summary.
Case realCase(const QString& key, bool withText)
{
    const QString base = realDir() + QLatin1Char('/') + key;
    Case input;
    addFile(input, QString(base + QStringLiteral(".pickle.gz")).toStdString());
    if (withText) {
        for (const char* suffix : { ".oom.txt", ".summary.txt" }) {
            if (QFile::exists(base + QLatin1String(suffix)))
                addFile(input, QString(base + QLatin1String(suffix)).toStdString());
        }
    }
    return input;
}

bool hasText(const QString& key)
{
    return QFile::exists(realDir() + QLatin1Char('/') + key + QStringLiteral(".oom.txt"));
}

QJsonObject scriptLabel(const QString& key)
{
    const QString path = realDir() + QLatin1Char('/') + key + QStringLiteral(".json");
    return QFile::exists(path) ? test::readJsonObject(path) : QJsonObject {};
}

} // namespace

class TestRealCases : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void everyCaseIsThere()
    {
        const QJsonObject all = expectations();
        QVERIFY(all.size() >= 20);
        for (const QString& key : all.keys())
            QVERIFY2(QFile::exists(realDir() + QLatin1Char('/') + key + QStringLiteral(".pickle.gz")), qPrintable(key));
    }

    void diagnosis_data()
    {
        QTest::addColumn<QString>("key");
        QTest::addColumn<bool>("withText");
        for (const QString& key : expectations().keys()) {
            QTest::newRow(qPrintable(QStringLiteral("alone:") + key)) << key << false;
            if (hasText(key))
                QTest::newRow(qPrintable(QStringLiteral("text:") + key)) << key << true;
        }
    }

    // The top diagnosis names the cause in expected.json; a run that did not fail gets none.
    void diagnosis()
    {
        QFETCH(QString, key);
        QFETCH(bool, withText);
        const QJsonObject truth = expectations().value(key).toObject();
        QJsonValue top = truth.value(QStringLiteral("top"));
        if (!withText && truth.contains(QStringLiteral("snapshot_alone")))
            top = truth.value(QStringLiteral("snapshot_alone"));
        const Case input = realCase(key, withText);
        for (const auto& in : input.inputs)
            QVERIFY2(!in.error, in.error ? in.error->c_str() : "");
        QCOMPARE(input.snapshots.size(), size_t(1));
        const test::TopDiagnosis got = test::topDiagnosis(input);
        if (top.toString() == QStringLiteral("any"))
            return;
        test::expectFailureIfListed(expectedFailures());
        if (top.isNull()) {
            QVERIFY2(got.id == QStringLiteral("(none)"),
                qPrintable(QStringLiteral("the run did not fail, yet %1 at %2").arg(got.id).arg(got.confidence)));
            return;
        }
        QVERIFY2(got.id == top.toString(),
            qPrintable(QStringLiteral("truth %1, top %2 at %3").arg(top.toString(), got.id).arg(got.confidence)));
    }

    // A leak's sites are named by the code that keeps the tensors. In heldout2/hook_leak some are
    // made on the autograd engine's thread, whose C++-only stack (stacks='all') starts with the
    // recorder's own frames (gather_with_cpp), which once named the site.
    void leakSiteIsTheCodeThatKeeps()
    {
        const CaseAnalysis analysis = analyzeCase(realCase(QStringLiteral("heldout2/hook_leak"), false));
        QVERIFY(!analysis.diagnoses.empty());
        std::string sites;
        for (const Evidence& line : analysis.diagnoses.front().evidence) {
            if (line.text.rfind("made since the first of those points", 0) == 0)
                sites = line.text;
        }
        // "forward (/path/to/make_cases.py:67)": the user frame, in the label every diagnosis uses.
        QVERIFY2(std::regex_search(sites, std::regex(R"(forward \([^)]*make_cases\.py:[0-9]+\))")), sites.c_str());
        QVERIFY2(sites.find("gather_with_cpp") == std::string::npos, sites.c_str());
    }

    void failingPhase_data()
    {
        QTest::addColumn<QString>("key");
        for (const QString& key : expectations().keys()) {
            if (scriptLabel(key).value(QStringLiteral("oom")).toBool())
                QTest::newRow(qPrintable(QStringLiteral("phase:") + key)) << key;
        }
    }

    // The snapshot's oom event sits in the phase and step the script was in when it failed.
    void failingPhase()
    {
        QFETCH(QString, key);
        const QJsonObject label = scriptLabel(key);
        const QString phase = label.value(QStringLiteral("phase")).toString();
        if (expectations().value(key).toObject().value(QStringLiteral("phase")).toString() == QStringLiteral("any"))
            QSKIP("no training phase: the script allocates plain buffers");
        const Case input = realCase(key, false);
        const SnapshotAnalysis analysis = analyzeSnapshot(input.snapshots.front());
        const DeviceAnalysis* device = analysis.primary();
        QVERIFY(device);
        QVERIFY2(!device->ooms.empty(), "no oom event");
        const OomAnalysis& oom = device->ooms.back();
        test::expectFailureIfListed(expectedFailures());
        QVERIFY2(QString::fromLatin1(phaseName(oom.phase)) == phase,
            qPrintable(QStringLiteral("script failed in %1, oomlens says %2")
                           .arg(phase, QString::fromLatin1(phaseName(oom.phase)))));
    }
};

QTEST_GUILESS_MAIN(TestRealCases)
#include "tst_realcases.moc"
