// The views of private pools and torch.compile regions on the real H100 recordings: the live
// table names each block's pool and compiled region, the allocator state hatches and totals the
// private pools, the timeline draws their reserved bytes as a band of its own.
#include "common/testutil.h"
#include "core/caseanalysis.h"
#include "parsers/inputloader.h"
#include "views/allocatorstatewidget.h"
#include "views/models/allocationsmodel.h"
#include "views/timelinewidget.h"

#include <QAbstractItemModelTester>
#include <QTest>
#include <qcustomplot.h>

using namespace oomlens;

namespace {

std::shared_ptr<const TimelineData> realTimeline(const char* name)
{
    Case input;
    addFile(input, QString(test::testDataDir() + QStringLiteral("/real/extra/") + QLatin1String(name)).toStdString());
    auto analysis = std::make_shared<const SnapshotAnalysis>(analyzeSnapshot(input.snapshots.at(0)));
    return std::make_shared<const TimelineData>(analysis, analysis->primaryDevice);
}

QStringList columnValues(const AllocationsModel& model, int column)
{
    QStringList values;
    for (int row = 0; row < model.rowCount(); ++row)
        values << model.index(row, column).data().toString();
    return values;
}

} // namespace

class TestPoolViews : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void liveTableNamesThePool()
    {
        const auto data = realTimeline("graph_pools.pickle.gz");
        AllocationsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setMoment(data, data->eventCount() - 1); // the dump
        const QStringList pools = columnValues(model, AllocationsModel::PoolColumn);
        QVERIFY(pools.contains(QStringLiteral("CUDA graph pool (1, 0)")));
        QVERIFY(pools.contains(QStringLiteral("default")));
        QCOMPARE(model.headerData(AllocationsModel::PoolColumn, Qt::Horizontal).toString(), QStringLiteral("Pool"));
        // The filter finds a graph's blocks by their pool.
        int graphRows = 0;
        for (int row = 0; row < model.rowCount(); ++row)
            graphRows += model.index(row, 0)
                             .data(AllocationsModel::FilterRole)
                             .toString()
                             .contains(QStringLiteral("CUDA graph"));
        QCOMPARE(graphRows, int(pools.count(QStringLiteral("CUDA graph pool (1, 0)"))));
    }

    void liveTableNamesTheCompiledRegion()
    {
        const auto data = realTimeline("compiled.pickle.gz");
        AllocationsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        // The moment the most compiled-region allocations are live: right after the first compiled alloc's peak.
        int64_t best = -1;
        size_t bestCount = 0;
        for (int64_t e = 0; e < data->eventCount(); e += 50) {
            model.setMoment(data, e);
            const size_t count = size_t(columnValues(model, AllocationsModel::CompiledColumn)
                                            .count(QStringLiteral("Torch-Compiled Region: 0/0")));
            if (count > bestCount) {
                bestCount = count;
                best = e;
            }
        }
        QVERIFY(best >= 0);
        model.setMoment(data, best);
        for (int row = 0; row < model.rowCount(); ++row) {
            if (model.index(row, AllocationsModel::CompiledColumn).data().toString().isEmpty())
                continue;
            const QString location = model.index(row, AllocationsModel::LocationColumn).data().toString();
            QVERIFY2(!location.contains(QStringLiteral("torchinductor_")), qPrintable(location));
            const QString tip = model.index(row, 0).data(Qt::ToolTipRole).toString();
            QVERIFY2(tip.contains(QStringLiteral("Compiled: Torch-Compiled Region: 0/0")), qPrintable(tip));
        }
    }

    // record_function spans and _set_memory_metadata("step=N") are searchable in the live table.
    void liveTableFindsAnnotations()
    {
        const auto data = realTimeline("features.pickle.gz");
        AllocationsModel model;
        model.setMoment(data, data->device()->peakEvent);
        QVERIFY(model.rowCount() > 0);
        int inStep = 0, inSpan = 0;
        for (int row = 0; row < model.rowCount(); ++row) {
            const QString text = model.index(row, 0).data(AllocationsModel::FilterRole).toString();
            inStep += text.contains(QStringLiteral("step="));
            inSpan += text.contains(QStringLiteral("forward ")) || text.contains(QStringLiteral("backward "))
                || text.contains(QStringLiteral("optimizer "));
        }
        QVERIFY(inStep > 0);
        QVERIFY(inSpan > 0);
    }

    void allocatorStateTotalsPrivatePools()
    {
        const auto data = realTimeline("graph_pools.pickle.gz");
        AllocatorStateWidget widget;
        widget.setTimeline(data);
        widget.setEvent(data->eventCount() - 1);
        QVERIFY(
            QTest::qWaitFor([&] { return !widget.isBusy() && widget.state().event == data->eventCount() - 1; }, 20000));
        const QString summary = widget.summaryText();
        QVERIFY2(summary.contains(QStringLiteral("Private pools")), qPrintable(summary));
        QVERIFY2(summary.contains(QStringLiteral("27 segments")), qPrintable(summary));
    }

    void timelineDrawsThePoolBand()
    {
        const auto data = realTimeline("graph_pools.pickle.gz");
        TimelineWidget widget;
        widget.resize(900, 400);
        widget.setTimeline(data);
        auto* plot = widget.findChild<QCustomPlot*>();
        QVERIFY(plot);
        QCPGraph* band = nullptr;
        for (int i = 0; i < plot->graphCount(); ++i) {
            if (plot->graph(i)->name() == QStringLiteral("Private pools"))
                band = plot->graph(i);
        }
        QVERIFY(band);
        QVERIFY(band->data()->size() > 0);
        double highest = 0;
        for (auto it = band->data()->constBegin(); it != band->data()->constEnd(); ++it)
            highest = std::max(highest, it->value);
        QCOMPARE(uint64_t(highest), uint64_t(585105408)); // the graph pool's 27 segments at the dump

        // An eager run has no band.
        widget.setTimeline(realTimeline("features.pickle.gz"));
        QCOMPARE(band->data()->size(), 0);
    }
};

QTEST_MAIN(TestPoolViews)
#include "tst_poolviews.moc"
