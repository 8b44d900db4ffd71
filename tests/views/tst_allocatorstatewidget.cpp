#include "common/heldthreadpool.h"
#include "common/tracebuilder.h"
#include "views/allocatorstatewidget.h"

#include <QLabel>
#include <QSignalSpy>
#include <QTest>
#include <QThreadPool>

#include <sstream>

using namespace oomlens;

namespace {

// Layers that allocate and free through a few segments, so every moment has a different state.
std::shared_ptr<const TimelineData> timeline(int layers, const char* big)
{
    std::ostringstream out;
    out << "before w " << big << " load\n";
    for (int i = 0; i < layers; ++i) {
        out << "alloc a" << i << ' ' << (1 + i % 5) << "MiB fwd\n";
        out << "alloc t" << i << " 512KiB fwd\nfree t" << i << " fwd\n";
    }
    for (int i = layers; i-- > 0;)
        out << "free a" << i << " bwd\n";
    std::string error;
    auto snapshot = test::buildSnapshot(out.str(), &error);
    if (!snapshot)
        qFatal("bad fixture: %s", error.c_str());
    auto analysis = std::make_shared<const SnapshotAnalysis>(analyzeSnapshot(snapshot));
    return std::make_shared<const TimelineData>(analysis, 0);
}

bool waitIdle(const AllocatorStateWidget& widget)
{
    return QTest::qWaitFor([&] { return !widget.isBusy(); }, 20000);
}

} // namespace

class TestAllocatorStateWidget : public QObject
{
    Q_OBJECT
private slots:
    void computesOffTheGuiThread()
    {
        AllocatorStateWidget widget;
        const auto data = timeline(300, "64MiB");
        widget.setTimeline(data);
        // setTimeline asks for the peak; nothing is on screen until the job hands it in.
        QVERIFY(widget.isBusy());
        QCOMPARE(widget.requestedEvent(), data->device()->peakEvent);
        QVERIFY(widget.summaryText().contains(QStringLiteral("Rebuilding")));
        QVERIFY(waitIdle(widget));
        QCOMPARE(widget.state().event, data->device()->peakEvent);
        const AllocatorState direct = allocatorStateAt(data->snapshot(), *data->device(), data->device()->peakEvent);
        QCOMPARE(widget.state().reservedBytes, direct.reservedBytes);
        QCOMPARE(widget.state().activeBytes, direct.activeBytes);
        QCOMPARE(widget.state().segments.size(), direct.segments.size());
    }

    void latestCursorWins()
    {
        AllocatorStateWidget widget;
        const auto data = timeline(400, "64MiB");
        QSignalSpy shown(&widget, &AllocatorStateWidget::stateShown);
        widget.setTimeline(data);
        // A drag: many cursor positions while the first job runs. Only the last is computed
        // after it; the ones in between are never queued.
        int64_t last = 0;
        for (int64_t event = 10; event < data->eventCount(); event += 97)
            widget.setEvent(last = event);
        QCOMPARE(widget.requestedEvent(), last);
        QVERIFY(waitIdle(widget));
        QCOMPARE(shown.count(), 2);
        QCOMPARE(shown.at(0).at(0).toLongLong(), data->device()->peakEvent);
        QCOMPARE(shown.at(1).at(0).toLongLong(), last);
        QCOMPARE(widget.state().event, last);
        const AllocatorState direct = allocatorStateAt(data->snapshot(), *data->device(), last);
        QCOMPARE(widget.state().reservedBytes, direct.reservedBytes);
        QCOMPARE(widget.state().activeBytes, direct.activeBytes);
        // The widget says which moment it shows, and no longer that it is updating.
        const QString text = widget.findChild<QLabel*>()->text();
        QVERIFY2(text.contains(QStringLiteral("after event #%1</b>").arg(last)), qPrintable(text));
        QVERIFY(!text.contains(QStringLiteral("updating")));
    }

    void resultForAReplacedTimelineIsDropped()
    {
        AllocatorStateWidget widget;
        const auto first = timeline(400, "64MiB");
        const auto second = timeline(50, "2GiB");
        QSignalSpy shown(&widget, &AllocatorStateWidget::stateShown);
        widget.setTimeline(first);
        QVERIFY(widget.isBusy());
        widget.setTimeline(second); // the first job is still running
        widget.setEvent(7);
        QVERIFY(waitIdle(widget));
        QCOMPARE(shown.count(), 1);
        QCOMPARE(widget.state().event, 7);
        const AllocatorState direct = allocatorStateAt(second->snapshot(), *second->device(), 7);
        QCOMPARE(widget.state().reservedBytes, direct.reservedBytes);
        QVERIFY(widget.state().reservedBytes >= uint64_t(2) << 30);
    }

    // The first timeline's job has not even started when the second replaces it: it is dropped,
    // and the one request that waited for it is the only state shown.
    void aReplacedJobIsNeverShown()
    {
        AllocatorStateWidget widget;
        const auto first = timeline(50, "64MiB");
        const auto second = timeline(50, "2GiB");
        QSignalSpy shown(&widget, &AllocatorStateWidget::stateShown);
        test::HeldThreadPool held;
        widget.setTimeline(first);
        widget.setTimeline(second);
        widget.setEvent(9);
        held.release();
        QVERIFY(waitIdle(widget));
        QCOMPARE(shown.count(), 1);
        QCOMPARE(widget.state().event, 9);
        QCOMPARE(
            widget.state().reservedBytes, allocatorStateAt(second->snapshot(), *second->device(), 9).reservedBytes);
    }

    // Closing the timeline's tab while the state is rebuilt: the job holds its own timeline and
    // its result reaches nobody, whether it was waiting in the pool or already running.
    void destroyedWhileComputing()
    {
        const auto data = timeline(400, "64MiB");
        {
            test::HeldThreadPool held;
            auto* waiting = new AllocatorStateWidget;
            waiting->setTimeline(data);
            QVERIFY(waiting->isBusy());
            delete waiting;
        }
        auto* running = new AllocatorStateWidget;
        running->setTimeline(data);
        QVERIFY(running->isBusy());
        delete running;
        QThreadPool::globalInstance()->waitForDone();
        QCoreApplication::processEvents();
        QCOMPARE(data.use_count(), 1); // the jobs let go of it
    }

    void noSnapshotSaysSo()
    {
        AllocatorStateWidget widget;
        widget.setTimeline(nullptr);
        widget.setEvent(3);
        QVERIFY(!widget.isBusy());
        QCOMPARE(widget.summaryText(), QStringLiteral("No snapshot"));
    }
};

QTEST_MAIN(TestAllocatorStateWidget)
#include "tst_allocatorstatewidget.moc"
