// The real H100 recordings of issue 14's annotation features (PyTorch 2.11): record_function
// ranges recorded with global_record_annotations=True and _set_memory_metadata("step=N") on every
// entry, and the same run's torch.cuda.memory_snapshot() list (segments only, no history).
#include "common/testutil.h"
#include "core/analysis/annotationspans.h"
#include "core/caseanalysis.h"
#include "core/presentation/historywords.h"
#include "parsers/inputloader.h"

#include <QTest>

#include <algorithm>
#include <set>

using namespace oomlens;

namespace {

CaseAnalysis openReal(const char* name, Case& input)
{
    addFile(input, QString(test::testDataDir() + QStringLiteral("/real/extra/") + QLatin1String(name)).toStdString());
    return analyzeCase(input);
}

} // namespace

class TestRealFeatures : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void annotationSpansAndStepMetadata()
    {
        Case input;
        const CaseAnalysis analysis = openReal("features.pickle.gz", input);
        QVERIFY(input.inputs.at(0).error == std::nullopt);
        const SnapshotAnalysis& snapshot = analysis.snapshots.at(0);
        const DeviceAnalysis& device = *snapshot.primary();
        QCOMPARE(snapshot.snapshot->annotations.size(), size_t(36));

        const std::vector<AnnotationSpan> spans = annotationSpans(*snapshot.snapshot, device);
        std::set<std::string> names;
        for (const AnnotationSpan& span : spans) {
            if (!span.mark)
                names.insert(span.name);
        }
        for (const char* expected : { "forward", "backward", "optimizer", "Optimizer.step#AdamW.step" })
            QVERIFY2(names.count(expected), expected);
        // Every START found its END: the run was not cut.
        QVERIFY(std::all_of(spans.begin(), spans.end(), [](const AnnotationSpan& s) { return s.closed || s.mark; }));
        // The optimizer step nests inside the script's own "optimizer" range.
        const auto step = std::find_if(
            spans.begin(), spans.end(), [](const AnnotationSpan& s) { return s.name == "Optimizer.step#AdamW.step"; });
        QVERIFY(step != spans.end() && step->depth >= 1);

        std::set<std::string> metadata;
        for (const TraceEvent& e : snapshot.snapshot->trace(device.device)->events) {
            if (e.userMetadata.isValid())
                metadata.insert(std::string(snapshot.snapshot->strings->get(e.userMetadata)));
        }
        QCOMPARE(metadata, (std::set<std::string> { "step=0", "step=1", "step=2" }));
        QCOMPARE(traceHistory(*snapshot.snapshot, device).coverage, TraceHistory::Coverage::Complete);
    }

    void segmentsOnlyListSaysWhatIsMissing()
    {
        Case input;
        const CaseAnalysis analysis = openReal("features_segments_only.pickle.gz", input);
        const SnapshotAnalysis& snapshot = analysis.snapshots.at(0);
        QCOMPARE(snapshot.snapshot->era, Snapshot::Era::SegmentList);
        QCOMPARE(snapshot.snapshot->segments.size(), size_t(44));
        const DeviceAnalysis& device = *snapshot.primary();
        const TraceHistory history = traceHistory(*snapshot.snapshot, device);
        QVERIFY(history.segmentsOnly());
        QCOMPARE(history.reservedBytes, uint64_t(958398464));
        QCOMPARE(history.liveBlocks, size_t(3));
        const std::vector<std::string> statement = historyStatement(*snapshot.snapshot, history);
        QVERIFY(!statement.empty());
        QVERIFY(statement.front().find("state at the dump only") != std::string::npos);
        QVERIFY(!historyAdvice(history).empty());
    }
};

QTEST_GUILESS_MAIN(TestRealFeatures)
#include "tst_realfeatures.moc"
