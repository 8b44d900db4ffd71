#include "common/testutil.h"
#include "core/caseanalysis.h"
#include "core/diagnosis/diagnosistext.h"
#include "core/units.h"
#include "parsers/inputloader.h"

#include <QDir>
#include <QTest>

#include <algorithm>

using namespace oomlens;

namespace {

CaseAnalysis analyzeCorpusFile(const QString& name)
{
    Case input;
    const QString path = test::corpusDir() + QStringLiteral("/snapshots/") + name;
    addFile(input, path.toStdString());
    return analyzeCase(input);
}

bool anyFix(const std::vector<Diagnosis>& diagnoses, const std::string& id)
{
    return std::any_of(diagnoses.begin(), diagnoses.end(), [&](const Diagnosis& d) {
        return std::any_of(d.fixes.begin(), d.fixes.end(), [&](const Fix& f) { return f.id() == id; });
    });
}

} // namespace

// The real snapshots of shared/corpus: a diagnosis only where the run failed, and nothing absurd there.
class TestDiagRealSnapshots : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void noDiagnosisWithoutAnOom()
    {
        OOMLENS_REQUIRE_SHARED();
        const QStringList files
            = QDir(test::corpusDir() + QStringLiteral("/snapshots"))
                  .entryList(
                      { QStringLiteral("*.pickle"), QStringLiteral("*.pkl"), QStringLiteral("*.json") }, QDir::Files);
        QVERIFY(files.size() >= 40);
        int failed = 0;
        for (const QString& file : files) {
            const CaseAnalysis analysis = analyzeCorpusFile(file);
            const bool oom = std::any_of(
                analysis.headroom.begin(), analysis.headroom.end(), [](const SnapshotHeadroom& h) { return h.failed; });
            failed += oom ? 1 : 0;
            if (!oom)
                QVERIFY2(analysis.diagnoses.empty(),
                    qPrintable(file + QStringLiteral(": ")
                        + QString::fromStdString(diagnosesToText(analysis.diagnoses, false))));
            else
                QVERIFY2(!analysis.diagnoses.empty(), qPrintable(file));
        }
        QCOMPARE(failed, 2); // Constructor-Sun and Nesta-gitU hold the corpus's only oom events
    }

    // DataParallel on three GPUs with expandable segments already on: 78 GiB of forward
    // activations on device 1, not the state training keeps (so not capacity). No expandable-segments advice, no
    // optimizer-state fixes for a band that is empty, and a block count read from the repeating forward.
    void constructorSun()
    {
        OOMLENS_REQUIRE_SHARED();
        const CaseAnalysis analysis
            = analyzeCorpusFile(QStringLiteral("Constructor-Sun__code_location__memory_snapshot.pickle"));
        QVERIFY(!analysis.diagnoses.empty());
        const std::string text = diagnosesToText(analysis.diagnoses, false);
        QVERIFY2(
            analysis.diagnoses.front().id != DiagnosisId::Capacity, text.c_str()); // the weights and state are small
        QCOMPARE(analysis.diagnoses.front().id, DiagnosisId::WorkingSet);
        QVERIFY2(!anyFix(analysis.diagnoses, "expandable_segments"), text.c_str());
        QVERIFY2(!anyFix(analysis.diagnoses, "optimizer_8bit"), text.c_str());
        QVERIFY2(text.find("repeated blocks:") != std::string::npos, text.c_str());
        QVERIFY2(text.find("it would fit") != std::string::npos, text.c_str());
    }

    // Lightning runs training_step inside optimizer.step(): the forward's 21.5 GiB must not be read
    // as Adam state (124 MiB of parameters cannot have 21 GiB of moments).
    void nestaLightningClosure()
    {
        OOMLENS_REQUIRE_SHARED();
        const CaseAnalysis analysis
            = analyzeCorpusFile(QStringLiteral("Nesta-gitU__discrete_diffusion__memory_snapshot.json"));
        QVERIFY(!analysis.diagnoses.empty());
        const std::string text = diagnosesToText(analysis.diagnoses, false);
        const DeviceAnalysis* device = analysis.snapshots.front().primary();
        QVERIFY(device);
        QVERIFY(!device->ooms.empty());
        const CategoryBytes& live = device->ooms.back().liveByCategory;
        QVERIFY(live[size_t(Category::Activations)] > 20 * GiB);
        QCOMPARE(live[size_t(Category::OptimizerState)], uint64_t(0));
        QVERIFY2(!anyFix(analysis.diagnoses, "optimizer_8bit"), text.c_str());
        QVERIFY2(analysis.diagnoses.front().fixes.front().id() == "micro_batch", text.c_str());
        QVERIFY2(text.find("optimizer_step2") == std::string::npos, text.c_str());
    }
};

QTEST_GUILESS_MAIN(TestDiagRealSnapshots)
#include "tst_diagrealsnapshots.moc"
