#include "common/tracebuilder.h"
#include "views/eventsview.h"
#include "views/liveallocationsview.h"
#include "views/models/allocationsmodel.h"
#include "views/models/calltreemodel.h"
#include "views/models/eventsmodel.h"
#include "views/plots/timelinedata.h"

#include <QAbstractItemModelTester>
#include <QLineEdit>
#include <QSignalSpy>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTest>

#include <algorithm>

using namespace oomlens;

namespace {

constexpr uint64_t MiB = 1024 * 1024;

// Two model paths under one training loop, the optimizer under another line of it; the
// attention buffer is freed after the peak.
const char* fixture = "alloc attn 100MiB stack=model.py:attention:10;model.py:forward:5;train.py:main:1\n"
                      "alloc mlp 50MiB stack=model.py:mlp:20;model.py:forward:5;train.py:main:1\n"
                      "alloc state 30MiB stack=torch/optim/adam.py:step:3;train.py:main:2\n"
                      "free attn bwd\n"
                      "alloc g 10MiB grad\n"
                      "oom 1GiB free=1MiB bwd\n";

std::shared_ptr<const TimelineData> timeline()
{
    std::string error;
    auto snapshot = test::buildSnapshot(fixture, &error);
    if (!snapshot)
        qFatal("bad fixture: %s", error.c_str());
    auto analysis = std::make_shared<const SnapshotAnalysis>(analyzeSnapshot(snapshot));
    return std::make_shared<const TimelineData>(analysis, 0);
}

QString function(const QAbstractItemModel* model, const QModelIndex& index)
{
    return model->index(index.row(), CallTreeModel::FunctionColumn, index.parent()).data().toString();
}

uint64_t bytes(const QAbstractItemModel* model, const QModelIndex& index)
{
    return model->index(index.row(), 0, index.parent()).data(CallTreeModel::BytesRole).toULongLong();
}

} // namespace

class TestLiveViews : public QObject
{
    Q_OBJECT
private slots:
    void callTreeGroupsLiveBytesByCaller()
    {
        const auto data = timeline();
        const int64_t peak = data->device()->peakEvent;
        QCOMPARE(data->device()->peakAllocatedBytes, 180 * MiB);

        CallTreeModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        const auto snapshot = std::shared_ptr<const Snapshot>(data, &data->snapshot());
        model.setTree(snapshot, callTree(*snapshot, *data->device(), peak));
        QCOMPARE(model.totalBytes(), 180 * MiB);

        // Outermost callers at the top, largest first: main:1 (150 MiB) before main:2 (30 MiB).
        QCOMPARE(model.rowCount(), 2);
        const QModelIndex main1 = model.index(0, 0);
        QCOMPARE(function(&model, main1), QStringLiteral("main"));
        QCOMPARE(model.index(0, CallTreeModel::LocationColumn).data().toString(), QStringLiteral("train.py:1"));
        QCOMPARE(bytes(&model, main1), 150 * MiB);
        QCOMPARE(model.index(0, CallTreeModel::ShareColumn).data().toString(), QStringLiteral("83.3%"));
        QCOMPARE(bytes(&model, model.index(1, 0)), 30 * MiB);

        const QModelIndex forward = model.index(0, 0, main1);
        QCOMPARE(function(&model, forward), QStringLiteral("forward"));
        QCOMPARE(model.rowCount(forward), 2);
        QCOMPARE(function(&model, model.index(0, 0, forward)), QStringLiteral("attention"));
        QCOMPARE(bytes(&model, model.index(0, 0, forward)), 100 * MiB);
        QCOMPARE(function(&model, model.index(1, 0, forward)), QStringLiteral("mlp"));
        QCOMPARE(model.index(1, 0, forward).parent(), forward);
        QCOMPARE(forward.parent(), main1);
        QCOMPARE(model.rowCount(model.index(0, 0, forward)), 0);

        // After the attention buffer is freed it is gone from the tree.
        const int64_t after = data->device()->allocations.back().allocEvent;
        model.setTree(snapshot, callTree(*snapshot, *data->device(), after));
        QCOMPARE(model.rowCount(model.index(0, 0, model.index(0, 0))), 1);
        model.clear();
        QCOMPARE(model.rowCount(), 0);
    }

    void liveTableFollowsCursorPeakOrOom()
    {
        const auto data = timeline();
        const int64_t peak = data->device()->peakEvent;
        const int64_t oom = data->device()->ooms.front().eventIndex;
        LiveAllocationsView view;
        QAbstractItemModelTester tester(view.model(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        view.setTimeline(data);
        const int64_t attention = data->device()->allocations[0].allocEvent;
        const int64_t mlp = data->device()->allocations[1].allocEvent;
        view.setEvent(attention);
        QCOMPARE(view.shownEvent(), attention);
        QCOMPARE(view.model()->totalBytes(), 100 * MiB);

        view.setMoment(LiveAllocationsView::Moment::Peak);
        QCOMPARE(view.model()->moment(), peak);
        QCOMPARE(view.model()->totalBytes(), 180 * MiB);
        view.setEvent(mlp); // the cursor moves; the peak view stays put
        QCOMPARE(view.model()->moment(), peak);

        view.setMoment(LiveAllocationsView::Moment::Oom);
        QCOMPARE(view.model()->moment(), oom);
        QCOMPARE(view.model()->totalBytes(), data->allocatedAt(oom));

        view.setMoment(LiveAllocationsView::Moment::Cursor);
        QCOMPARE(view.model()->moment(), mlp);
        QCOMPARE(view.model()->totalBytes(), 150 * MiB);
    }

    void searchLooksThroughEveryFrame()
    {
        const auto data = timeline();
        LiveAllocationsView view;
        view.setTimeline(data);
        view.setMoment(LiveAllocationsView::Moment::Peak);
        QCOMPARE(view.proxy()->rowCount(), 3);
        // An outer frame, not the top one: both model allocations match.
        view.setFilterText(QStringLiteral("FORWARD"));
        QCOMPARE(view.proxy()->rowCount(), 2);
        // A file path.
        view.setFilterText(QStringLiteral("optim/adam"));
        QCOMPARE(view.proxy()->rowCount(), 1);
        QCOMPARE(view.proxy()->index(0, AllocationsModel::SizeColumn).data(AllocationsModel::BytesRole).toULongLong(),
            30 * MiB);

        // The call tree keeps the callers of a matching frame so its path stays readable.
        view.setDisplay(LiveAllocationsView::Display::CallTree);
        QAbstractItemModelTester tester(view.treeProxy(), QAbstractItemModelTester::FailureReportingMode::QtTest);
        view.setFilterText(QStringLiteral("attention"));
        const QAbstractItemModel* tree = view.treeProxy();
        QCOMPARE(tree->rowCount(), 1);
        const QModelIndex main = tree->index(0, 0);
        QCOMPARE(function(tree, main), QStringLiteral("main"));
        QCOMPARE(tree->rowCount(main), 1);
        const QModelIndex forward = tree->index(0, 0, main);
        QCOMPARE(tree->rowCount(forward), 1);
        QCOMPARE(function(tree, tree->index(0, 0, forward)), QStringLiteral("attention"));

        view.setFilterText(QString());
        QCOMPARE(view.proxy()->rowCount(), 3);
        QCOMPARE(view.treeProxy()->rowCount(), 2);
    }

    void eventsFilterByActionAndStack_data()
    {
        QTest::addColumn<unsigned>("actions");
        QTest::addColumn<QString>("text");
        QTest::newRow("all") << unsigned(EventsModel::AllActions) << QString();
        QTest::newRow("allocs") << unsigned(EventsModel::Allocs) << QString();
        QTest::newRow("frees") << unsigned(EventsModel::Frees) << QString();
        QTest::newRow("segments") << unsigned(EventsModel::Segments) << QString();
        QTest::newRow("oom") << unsigned(EventsModel::Ooms) << QString();
        QTest::newRow("model frames") << unsigned(EventsModel::AllActions) << QStringLiteral("model.py");
        QTest::newRow("allocs in mlp") << unsigned(EventsModel::Allocs) << QStringLiteral("MLP");
        QTest::newRow("nothing") << unsigned(EventsModel::AllActions) << QStringLiteral("no such frame");
    }

    void eventsFilterByActionAndStack()
    {
        QFETCH(unsigned, actions);
        QFETCH(QString, text);
        const auto data = timeline();
        EventsModel model;
        QAbstractItemModelTester tester(&model, QAbstractItemModelTester::FailureReportingMode::QtTest);
        model.setTimeline(data);
        model.setFilter(actions, text);

        // The same question asked the slow way, event by event.
        const Snapshot& snapshot = data->snapshot();
        std::vector<int64_t> expected;
        for (size_t i = 0; i < data->trace()->events.size(); ++i) {
            const TraceEvent& event = data->trace()->events[i];
            if (!(EventsModel::groupOf(event.action) & actions))
                continue;
            bool matches = text.isEmpty();
            for (FrameId id : snapshot.frames->stack(event.stack)) {
                const Frame& frame = snapshot.frames->frame(id);
                const QString words = QString::fromStdString(std::string(snapshot.strings->get(frame.name)))
                    + QLatin1Char(' ') + QString::fromStdString(std::string(snapshot.strings->get(frame.filename)));
                matches = matches || words.contains(text, Qt::CaseInsensitive);
            }
            if (matches)
                expected.push_back(int64_t(i));
        }
        QCOMPARE(model.rowCount(), int(expected.size()));
        for (int row = 0; row < model.rowCount(); ++row) {
            QCOMPARE(model.eventAt(row), expected[size_t(row)]);
            QCOMPARE(
                model.index(row, EventsModel::IndexColumn).data().toString(), QString::number(expected[size_t(row)]));
            QCOMPARE(model.index(row, 0).data(EventsModel::EventRole).toLongLong(), expected[size_t(row)]);
        }
        if (!expected.empty())
            QCOMPARE(model.rowAtOrBefore(expected.back() + 1000), int(expected.size()) - 1);
        QCOMPARE(model.rowAtOrBefore(-1), -1);
    }

    // Searching by a named span (record_function, annotation, ProfilerStep) selects the events
    // inside it, whatever their stacks say.
    void eventsSearchSelectsANamedSpan()
    {
        test::TraceBuilder builder;
        QVERIFY2(builder.add("alloc a 10MiB fwd\n"
                             "annotate ProfilerStep#1 stage=START\n"
                             "alloc b 10MiB fwd\n"
                             "annotate Optimizer.step#AdamW.step stage=START\n"
                             "alloc c 10MiB opt\n"
                             "annotate Optimizer.step#AdamW.step stage=END\n"
                             "annotate ProfilerStep#1 stage=END\n"
                             "alloc d 10MiB fwd\n"),
            builder.error().c_str());
        auto analysis = std::make_shared<const SnapshotAnalysis>(analyzeSnapshot(builder.build()));
        auto data = std::make_shared<const TimelineData>(analysis, 0);
        EventsModel model;
        model.setTimeline(data);
        const auto shown = [&] {
            std::vector<int64_t> events;
            for (int row = 0; row < model.rowCount(); ++row)
                events.push_back(model.eventAt(row));
            return events;
        };
        const auto has = [](const std::vector<int64_t>& events, int64_t event) {
            return std::find(events.begin(), events.end(), event) != events.end();
        };

        model.setFilter(EventsModel::AllActions, QStringLiteral("adamw"));
        const std::vector<int64_t> optimizer = shown();
        QVERIFY(has(optimizer, builder.allocEvent("c")));
        QVERIFY(!has(optimizer, builder.allocEvent("b")));
        QVERIFY(!has(optimizer, builder.allocEvent("d")));

        model.setFilter(EventsModel::Allocs, QStringLiteral("ProfilerStep#1"));
        const std::vector<int64_t> step = shown();
        QCOMPARE(step, (std::vector<int64_t> { builder.allocEvent("b"), builder.allocEvent("c") }));

        // Neither a span's name nor a frame: nothing.
        model.setFilter(EventsModel::Allocs, QStringLiteral("no such span or frame"));
        QCOMPARE(model.rowCount(), 0);
    }

    // Newest PyTorch records pool_id on each entry: the events view shows it.
    void eventsShowTheEntrysPool()
    {
        auto snapshot = test::buildSnapshot("entrypools\nalloc w 64MiB load\nalloc g 32MiB fwd pool=1,0\n");
        QVERIFY(snapshot);
        auto analysis = std::make_shared<const SnapshotAnalysis>(analyzeSnapshot(snapshot));
        auto data = std::make_shared<const TimelineData>(analysis, 0);
        EventsModel model;
        model.setTimeline(data);
        QCOMPARE(model.headerData(EventsModel::PoolColumn, Qt::Horizontal).toString(), QStringLiteral("Pool"));
        QStringList pools;
        for (int row = 0; row < model.rowCount(); ++row)
            pools << model.index(row, EventsModel::PoolColumn).data().toString();
        // segment_alloc + alloc for each: w in the default pool, g in the graph's.
        QCOMPARE(pools,
            (QStringList { QStringLiteral("default"), QStringLiteral("default"),
                QStringLiteral("CUDA graph pool (1, 0)"), QStringLiteral("CUDA graph pool (1, 0)") }));
    }

    void eventsViewKeepsTheCursorWhileFiltering()
    {
        const auto data = timeline();
        EventsView view;
        view.setTimeline(data);
        const int64_t oom = data->device()->ooms.front().eventIndex;
        view.setEvent(oom);
        QCOMPARE(view.selectedEvent(), oom);
        view.setFilter(EventsModel::Allocs, QString());
        // The OOM is hidden; the last allocation before it is selected instead.
        const int64_t selected = view.selectedEvent();
        QVERIFY(selected >= 0 && selected < oom);
        QCOMPARE(data->trace()->events[size_t(selected)].action, TraceAction::Alloc);
        QSignalSpy requested(&view, &EventsView::cursorRequested);
        view.table()->selectionModel()->setCurrentIndex(view.model()->index(0, 0), QItemSelectionModel::ClearAndSelect);
        QCOMPARE(requested.count(), 1);
        QCOMPARE(requested.front().front().toLongLong(), view.model()->eventAt(0));
        view.setFilter(EventsModel::AllActions, QString());
        QCOMPARE(view.model()->rowCount(), int(data->eventCount()));
    }
};

QTEST_MAIN(TestLiveViews)
#include "tst_liveviews.moc"
