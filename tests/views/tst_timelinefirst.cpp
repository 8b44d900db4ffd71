// A big snapshot opens with its timeline first: the loader hands over the snapshot's analysis and
// the timeline's series before the diagnosis stage runs, the window shows them at once, and the
// overview fills in when the rest arrives, on the very same case. The threshold that makes a file
// "big" is lowered to 0 here so that a small fixture takes the staged path.
#include "common/testutil.h"
#include "views/caseloader.h"
#include "views/casewidget.h"
#include "views/mainwindow.h"
#include "views/plots/timelinedata.h"
#include "views/timelinewidget.h"

#include <QApplication>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTest>

using namespace oomlens;

namespace {

QString scenario(const QString& name)
{
    return test::testDataDir() + QStringLiteral("/scenarios/") + name;
}

// A failing run: its diagnosis is not empty, so "not diagnosed yet" can be told from "done".
QList<LoadRequest> failingRun()
{
    return { LoadRequest::file(scenario(QStringLiteral("first_backward.pickle")).toStdString()),
        LoadRequest::file(scenario(QStringLiteral("first_backward.oom.txt")).toStdString()) };
}

} // namespace

class TestTimelineFirst : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QApplication::setOrganizationName(QStringLiteral("oomlens-tests"));
        QApplication::setApplicationName(QStringLiteral("tst_timelinefirst"));
    }

    // The timeline's data is built on a thread of its own while the diagnosis runs (the two only
    // read the snapshots' analysis): it is handed over once, before the load returns, built for
    // the primary device of the case the load then completes. Nothing but the handed-over data
    // and the snapshots' analysis may be read in the callback: the diagnosis is being written.
    void loaderHandsOverTheTimelineWhileDiagnosing()
    {
        std::atomic_bool cancel = false;
        std::atomic_int calls = 0;
        TimelineFirst handedOver;
        bool returned = false;
        const LoadOutcome outcome = CaseLoader::load(
            nullptr, failingRun(), QStringLiteral("run"), cancel, {}, {},
            [&](const TimelineFirst& first) {
                ++calls;
                handedOver = first;
                handedOver.partial = returned ? nullptr : first.partial;
            },
            0);
        returned = true;
        QCOMPARE(calls.load(), 1);
        QVERIFY2(handedOver.partial, "the timeline must be handed over before the load returns");
        QVERIFY(handedOver.timeline);
        QVERIFY(handedOver.timeline->eventCount() > 10);
        QCOMPARE(handedOver.timeline->device(), handedOver.partial->analysis.snapshots.front().primary());
        const AnalyzedCasePtr partial = handedOver.partial;
        QVERIFY(outcome.loaded);
        QCOMPARE(outcome.loaded.get(), partial.get());
        QVERIFY(!outcome.loaded->analysis.diagnoses.empty());

        // Staged or not, the analysis is the same.
        const LoadOutcome whole = CaseLoader::load(nullptr, failingRun(), QStringLiteral("run"), cancel, {});
        QCOMPARE(whole.loaded->analysis.diagnoses.size(), outcome.loaded->analysis.diagnoses.size());
        for (size_t i = 0; i < whole.loaded->analysis.diagnoses.size(); ++i) {
            QVERIFY(whole.loaded->analysis.diagnoses[i].id == outcome.loaded->analysis.diagnoses[i].id);
            QCOMPARE(whole.loaded->analysis.diagnoses[i].confidence, outcome.loaded->analysis.diagnoses[i].confidence);
        }
        QVERIFY(whole.loaded->analysis.links == outcome.loaded->analysis.links);
    }

    void smallFilesArriveWhole()
    {
        std::atomic_bool cancel = false;
        int calls = 0;
        const LoadOutcome outcome = CaseLoader::load(
            nullptr, failingRun(), QStringLiteral("run"), cancel, {}, {}, [&](const TimelineFirst&) { ++calls; });
        QVERIFY(outcome.loaded);
        QCOMPARE(calls, 0);
    }

    // The signals come in order, and the case handed over first is the one finished() brings.
    // (What the diagnosis holds at the hand-over is checked above, in the worker's own call: here
    // the GUI thread may only read the snapshots until finished().)
    void signalsComeTimelineFirst()
    {
        CaseLoader loader;
        loader.setTimelineFirstFrom(0);
        QStringList order;
        const AnalyzedCase* early = nullptr;
        const AnalyzedCase* whole = nullptr;
        connect(&loader, &CaseLoader::timelineReady, this, [&](int, const TimelineFirst& first) {
            order << QStringLiteral("timeline");
            early = first.partial.get();
        });
        connect(&loader, &CaseLoader::finished, this, [&](int, const LoadOutcome& outcome) {
            order << QStringLiteral("finished");
            whole = outcome.loaded.get();
        });
        loader.start(nullptr, failingRun(), QStringLiteral("run"));
        QVERIFY(QTest::qWaitFor([&] { return order.contains(QStringLiteral("finished")); }, 60000));
        QCOMPARE(order, QStringList({ QStringLiteral("timeline"), QStringLiteral("finished") }));
        QVERIFY(early && early == whole);
    }

    // In the window: the case opens on its timeline with the overview waiting, then the overview
    // fills in and the timeline first shown is kept, not rebuilt.
    void windowShowsTheTimelineThenTheOverview()
    {
        MainWindow window;
        window.loader()->setTimelineFirstFrom(0);
        window.resize(1400, 900);
        window.show();
        struct Seen
        {
            bool called = false;
            int cases = 0;
            bool awaiting = false;
            bool onTimeline = false;
            bool overviewEnabled = true;
            std::shared_ptr<const TimelineData> data;
        } seen;
        // Connected after the window's own slot, so this sees the window right after it acted.
        connect(window.loader(), &CaseLoader::timelineReady, this, [&](int, const TimelineFirst&) {
            seen.called = true;
            seen.cases = window.caseCount();
            if (CaseWidget* view = window.currentCase()) {
                seen.awaiting = view->awaitingDiagnosis();
                seen.onTimeline = view->tabs()->currentIndex() == CaseWidget::TimelineTab;
                seen.overviewEnabled = view->tabs()->isTabEnabled(CaseWidget::OverviewTab);
                seen.data = view->timeline()->timeline();
            }
        });
        window.load(nullptr, failingRun(), QStringLiteral("run"));
        QVERIFY(QTest::qWaitFor([&] { return !window.isLoading(); }, 60000));

        QVERIFY(seen.called);
        QCOMPARE(seen.cases, 1);
        QVERIFY(seen.awaiting);
        QVERIFY(seen.onTimeline);
        QVERIFY(!seen.overviewEnabled);
        QVERIFY(seen.data && seen.data->eventCount() > 10);

        QCOMPARE(window.caseCount(), 1);
        CaseWidget* view = window.currentCase();
        QVERIFY(!view->awaitingDiagnosis());
        QVERIFY(view->tabs()->isTabEnabled(CaseWidget::OverviewTab));
        QCOMPARE(view->tabs()->tabText(CaseWidget::OverviewTab), QStringLiteral("Overview"));
        QVERIFY(view->loadedCase() && !view->loadedCase()->analysis.diagnoses.empty());
        QCOMPARE(view->timeline()->timeline().get(), seen.data.get());
        QCOMPARE(view->timeline()->timeline()->device(), view->loadedCase()->analysis.snapshots.front().primary());
    }

    // Cancelled while diagnosing: the early tab goes with its load.
    void cancelledAfterTheTimelineLeavesNoHalfCase()
    {
        MainWindow window;
        window.loader()->setTimelineFirstFrom(0);
        window.show();
        bool called = false;
        connect(window.loader(), &CaseLoader::timelineReady, this, [&](int jobId, const TimelineFirst&) {
            called = true;
            window.loader()->cancel(jobId);
        });
        window.load(nullptr, failingRun(), QStringLiteral("run"));
        QVERIFY(QTest::qWaitFor([&] { return !window.isLoading(); }, 60000));
        QVERIFY(called);
        QTest::qWait(0); // the removed tab's deleteLater
        QCOMPARE(window.caseCount(), 0);
    }
};

QTEST_MAIN(TestTimelineFirst)
#include "tst_timelinefirst.moc"
