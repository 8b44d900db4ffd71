#include "common/testutil.h"
#include "views/allocatorstatewidget.h"
#include "views/casewidget.h"
#include "views/categorycolors.h"
#include "views/diagnosiscard.h"
#include "views/eventsview.h"
#include "views/liveallocationsview.h"
#include "views/mainwindow.h"
#include "views/models/allocationsmodel.h"
#include "views/overviewpage.h"
#include "views/timelinewidget.h"
#include "views/viewutil.h"

#include "parsers/inputloader.h"

#include <QAbstractButton>
#include <QApplication>
#include <QClipboard>
#include <QLabel>
#include <QSignalSpy>
#include <QTabWidget>
#include <QTableView>
#include <QTemporaryDir>
#include <QTest>
#include <qcustomplot.h>

using namespace oomlens;

namespace {

QString scenario(const QString& name)
{
    return test::testDataDir() + QStringLiteral("/scenarios/") + name;
}

// Every piece of text a user could read in the window: labels, buttons, tab titles.
QStringList visibleTexts(QWidget* root)
{
    QStringList texts;
    for (QLabel* label : root->findChildren<QLabel*>()) {
        if (label->isVisibleTo(root))
            texts << label->text();
    }
    for (QAbstractButton* button : root->findChildren<QAbstractButton*>()) {
        if (button->isVisibleTo(root))
            texts << button->text();
    }
    return texts;
}

bool showsText(QWidget* root, const QString& text)
{
    const QStringList texts = visibleTexts(root);
    return std::any_of(texts.begin(), texts.end(), [&](const QString& t) { return t.contains(text); });
}

bool waitForLoads(MainWindow& window)
{
    return QTest::qWaitFor([&] { return !window.isLoading(); }, 60000);
}

// Opens the files as one case in a window big enough for every view and waits until it is loaded.
bool openInWindow(MainWindow& window, const QStringList& files, QSize size = QSize(1400, 900))
{
    window.resize(size);
    window.show();
    window.openFiles(files);
    return waitForLoads(window);
}

// The current case's timeline, on screen and zoomed out to the whole trace.
TimelineWidget* showTimeline(MainWindow& window)
{
    CaseWidget* view = window.currentCase();
    view->showPage(CaseWidget::TimelineTab);
    view->timeline()->resetZoom();
    return view->timeline();
}

} // namespace

class TestMainWindow : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QApplication::setOrganizationName(QStringLiteral("oomlens-tests"));
        QApplication::setApplicationName(QStringLiteral("tst_mainwindow"));
    }

    void emptyStateSaysWhatToDo()
    {
        MainWindow window;
        window.show();
        QCOMPARE(window.caseCount(), 0);
        QVERIFY(showsText(&window, QStringLiteral("Ctrl+V")));
        QVERIFY(showsText(&window, QStringLiteral("Open files")));
    }

    void pastedOomMessageShowsItsDiagnosis()
    {
        const QByteArray message = test::readFile(scenario(QStringLiteral("first_backward.oom.txt")));
        Case expectedCase;
        addInput(expectedCase, "(pasted)", message.toStdString());
        const CaseAnalysis expected = analyzeCase(expectedCase);
        QVERIFY2(!expected.diagnoses.empty(), "the fixture must produce a diagnosis");
        const QString title = QString::fromStdString(expected.diagnoses.front().title);

        MainWindow window;
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        QApplication::clipboard()->setText(QString::fromUtf8(message));
        QTest::keyClick(&window, Qt::Key_V, Qt::ControlModifier);
        QVERIFY(window.isLoading() || window.caseCount() == 1);
        QVERIFY(waitForLoads(window));
        QCOMPARE(window.caseCount(), 1);
        QVERIFY2(showsText(&window, title), qPrintable(QStringLiteral("diagnosis title not on screen: ") + title));
        QVERIFY(showsText(&window, QStringLiteral("Requested")));
        QVERIFY(window.bannerText().isEmpty());
        // Text alone has no timeline.
        QVERIFY(!window.currentCase()->tabs()->isTabEnabled(CaseWidget::TimelineTab));
    }

    void badInputGetsOneErrorAndLeavesOtherCasesAlone()
    {
        MainWindow window;
        window.show();
        window.openFiles({ scenario(QStringLiteral("fragmentation.oom.txt")) });
        QVERIFY(waitForLoads(window));
        QCOMPARE(window.caseCount(), 1);
        const AnalyzedCasePtr before = window.currentCase()->loadedCase();

        QApplication::clipboard()->setText(QStringLiteral("hello, this is not an error message at all"));
        window.pasteFromClipboard(true);
        QVERIFY(waitForLoads(window));
        QCOMPARE(window.caseCount(), 1);
        QCOMPARE(window.currentCase()->loadedCase(), before);
        QVERIFY(window.bannerText().startsWith(QStringLiteral("pasted text: ")));
        QCOMPARE(window.bannerText().count(QLatin1Char('\n')), 0);

        window.openFiles({ QStringLiteral("/nonexistent/snapshot.pickle") });
        QVERIFY(waitForLoads(window));
        QCOMPARE(window.caseCount(), 1);
        QVERIFY(window.bannerText().contains(QStringLiteral("snapshot.pickle")));
    }

    void addingToACaseKeepsOneTab()
    {
        MainWindow window;
        window.show();
        window.openFiles({ scenario(QStringLiteral("leak.oom.txt")) });
        QVERIFY(waitForLoads(window));
        window.load(window.currentCase(),
            { LoadRequest::file(scenario(QStringLiteral("leak.summary.txt")).toStdString()) }, {});
        QVERIFY(waitForLoads(window));
        QCOMPARE(window.caseCount(), 1);
        const AnalyzedCasePtr loaded = window.currentCase()->loadedCase();
        QCOMPARE(loaded->input.inputs.size(), size_t(2));
        QCOMPARE(loaded->input.text.summaries.size(), size_t(1));
    }

    void newerLoadSupersedesOlderOne()
    {
        MainWindow window;
        window.show();
        window.openFiles({ scenario(QStringLiteral("capacity.oom.txt")) });
        QVERIFY(waitForLoads(window));
        CaseWidget* target = window.currentCase();
        window.load(target, { LoadRequest::file(scenario(QStringLiteral("capacity.pickle")).toStdString()) }, {});
        window.load(target, { LoadRequest::file(scenario(QStringLiteral("capacity.summary.txt")).toStdString()) }, {});
        QVERIFY(waitForLoads(window));
        QTest::qWait(50); // a stale result arriving late must still be ignored
        const AnalyzedCasePtr loaded = target->loadedCase();
        QCOMPARE(loaded->input.inputs.size(), size_t(2));
        QVERIFY(loaded->input.snapshots.empty());
        QCOMPARE(loaded->input.text.summaries.size(), size_t(1));
    }

    void cancelledLoadProducesNothing()
    {
        std::atomic_bool cancel = true;
        const LoadOutcome outcome
            = CaseLoader::load(nullptr, { LoadRequest::file(scenario(QStringLiteral("leak.pickle")).toStdString()) },
                QStringLiteral("x"), cancel, {});
        QVERIFY(outcome.cancelled);
        QVERIFY(!outcome.loaded);
    }

    void snapshotViewsFollowTheCursor()
    {
        MainWindow window;
        QVERIFY(openInWindow(window,
            { scenario(QStringLiteral("first_backward.pickle")), scenario(QStringLiteral("first_backward.oom.txt")) }));
        CaseWidget* view = window.currentCase();
        QVERIFY(view->tabs()->isTabEnabled(CaseWidget::TimelineTab));
        const auto data = view->timeline()->timeline();
        QVERIFY(data && data->eventCount() > 10);

        QSignalSpy moved(view, &CaseWidget::cursorChanged);
        const int64_t event = data->eventCount() / 3;
        view->timeline()->setCursorEvent(event);
        QCOMPARE(view->cursorEvent(), event);
        QCOMPARE(moved.count(), 1);
        QCOMPARE(view->liveAllocations()->model()->moment(), event);
        QCOMPARE(view->liveAllocations()->model()->totalBytes(), data->allocatedAt(event));
        QCOMPARE(view->events()->selectedEvent(), event);
        // Computed off the GUI thread: it arrives a little later.
        QTRY_COMPARE(view->allocatorState()->state().event, event);

        // Picking a row in the event list moves everything else.
        view->events()->setEvent(event + 1);
        emit view->events()->cursorRequested(event + 1);
        QCOMPARE(view->timeline()->cursorEvent(), event + 1);

        // Linked evidence on a diagnosis card jumps to its event on the timeline.
        view->showPage(CaseWidget::OverviewTab);
        bool clicked = false;
        for (DiagnosisCard* card : view->overview()->cards()) {
            for (const Evidence& evidence : card->diagnosis().evidence) {
                if (evidence.link && !clicked) {
                    emit card->evidenceActivated(*evidence.link);
                    QCOMPARE(view->tabs()->currentIndex(), int(CaseWidget::TimelineTab));
                    QCOMPARE(view->cursorEvent(), evidence.link->eventIndex);
                    clicked = true;
                }
            }
        }
        QVERIFY2(clicked, "the first_backward scenario should link its evidence to an event");
    }

    void timelineKeepsThePeakAtAnyZoom()
    {
        MainWindow window;
        QVERIFY(openInWindow(window, { scenario(QStringLiteral("longest_batch.pickle")) }, QSize(1200, 800)));
        TimelineWidget* timeline = showTimeline(window);
        const auto data = timeline->timeline();
        const int width = timeline->plot()->axisRect()->width();
        QVERIFY(timeline->plottedPointCount() <= 2 * width + 4);
        const double top = timeline->plot()->yAxis->range().upper;
        QVERIFY2(top >= double(data->device()->peakAllocatedBytes), "the peak must never be clipped");

        const int64_t peak = data->device()->peakEvent;
        timeline->zoomToEvents(std::max<int64_t>(0, peak - 5), peak + 5);
        QVERIFY(timeline->plot()->yAxis->range().upper >= double(data->device()->peakAllocatedBytes));
        const auto [first, last] = timeline->visibleEvents();
        QVERIFY(first <= peak && peak <= last);

        QVERIFY(timeline->describe(peak, 1).contains(QStringLiteral("Event #%1").arg(peak)));

        QTemporaryDir directory;
        QVERIFY(timeline->exportImage(directory.filePath(QStringLiteral("chart.svg"))));
        QVERIFY(test::readFile(directory.filePath(QStringLiteral("chart.svg"))).contains("<svg"));
        QVERIFY(timeline->exportImage(directory.filePath(QStringLiteral("chart.png"))));
        QVERIFY(test::readFile(directory.filePath(QStringLiteral("chart.png"))).startsWith("\x89PNG"));
    }

    void overviewSaysWhyThereIsNoDiagnosis_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("says");
        QTest::addColumn<QString>("neverSays");
        QTest::newRow("memory_summary alone") << QStringLiteral("optimizer_step2.summary.txt")
                                              << QStringLiteral("a memory_summary() gives the allocator's counters")
                                              << QStringLiteral("memory_summary() output of the failing run");
        QTest::newRow("snapshot without an OOM")
            << QStringLiteral("healthy.pickle") << QStringLiteral("nothing failed in this snapshot")
            << QStringLiteral("a memory snapshot");
    }

    void overviewSaysWhyThereIsNoDiagnosis()
    {
        QFETCH(QString, file);
        QFETCH(QString, says);
        QFETCH(QString, neverSays);
        MainWindow window;
        QVERIFY(openInWindow(window, { scenario(file) }));
        QVERIFY(window.currentCase()->loadedCase()->analysis.diagnoses.empty());
        QVERIFY2(showsText(window.currentCase(), says), qPrintable(visibleTexts(window.currentCase()).join(u'\n')));
        QVERIFY(!showsText(window.currentCase(), neverSays));
    }

    void snapshotOverviewShowsWhatFilledThePeak()
    {
        MainWindow window;
        QVERIFY(openInWindow(window, { scenario(QStringLiteral("optimizer_step2.pickle")) }));
        const DeviceAnalysis* device = window.currentCase()->loadedCase()->analysis.snapshots.front().primary();
        QVERIFY(device);
        QString line;
        for (const QString& text : visibleTexts(window.currentCase())) {
            if (text.contains(QStringLiteral("At the peak:")))
                line = text;
        }
        QVERIFY(!line.isEmpty());
        for (size_t c = 0; c < device->categoriesAtPeak.size(); ++c) {
            if (device->categoriesAtPeak[c] > 0) {
                QVERIFY2(line.contains(QStringLiteral("%1&nbsp;<b>%2</b>")
                                           .arg(categoryText(Category(c)), bytesText(device->categoriesAtPeak[c]))),
                    qPrintable(line));
            }
        }
    }

    void tablesFitTheirLongestValues()
    {
        MainWindow window;
        QVERIFY(openInWindow(window, { scenario(QStringLiteral("optimizer_step2.pickle")) }));
        CaseWidget* view = window.currentCase();
        view->showPage(CaseWidget::TimelineTab);
        auto* table = view->liveAllocations()->findChild<QTableView*>();
        QVERIFY(table);
        const QFontMetrics metrics = table->fontMetrics();
        QVERIFY(table->columnWidth(AllocationsModel::AllocatedAtColumn)
            > metrics.horizontalAdvance(QStringLiteral("before the trace")));
        QVERIFY(table->columnWidth(AllocationsModel::CategoryColumn)
            > metrics.horizontalAdvance(QStringLiteral("Optimizer state")) + 16);
    }

    void stepLabelsKeepThePlotStillWhileZooming()
    {
        MainWindow window;
        QVERIFY(openInWindow(window, { scenario(QStringLiteral("optimizer_step2.pickle")) }));
        TimelineWidget* timeline = showTimeline(window);
        const auto data = timeline->timeline();
        QVERIFY(data->stepStarts().size() >= 2);
        timeline->plot()->replot();
        const int top = timeline->plot()->axisRect()->top();
        // Between two step starts no step label is in view.
        const int64_t inside = (data->stepStarts()[0].event + data->stepStarts()[1].event) / 2;
        timeline->zoomToEvents(inside, inside + 2);
        timeline->plot()->replot();
        QCOMPARE(timeline->plot()->axisRect()->top(), top);
    }

    void overviewOpensWithTheFailureInOneLine_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QStringList>("says");
        QTest::newRow("OOM message") << QStringLiteral("first_backward.oom.txt")
                                     << QStringList { QStringLiteral("Tried to allocate <b>") };
        QTest::newRow("snapshot with an oom event")
            << QStringLiteral("first_backward.pickle")
            << QStringList { QStringLiteral("Tried to allocate <b>256.00 MiB</b>"),
                   QStringLiteral("failed in backward") };
        QTest::newRow("no failure") << QStringLiteral("healthy.pickle") << QStringList {};
    }

    void overviewOpensWithTheFailureInOneLine()
    {
        QFETCH(QString, file);
        QFETCH(QStringList, says);
        MainWindow window;
        QVERIFY(openInWindow(window, { scenario(file) }));
        auto* glance = window.currentCase()->overview()->findChild<QLabel*>(QStringLiteral("glance"));
        if (says.isEmpty()) {
            QVERIFY(!glance);
            return;
        }
        QVERIFY(glance);
        for (const QString& text : says)
            QVERIFY2(glance->text().contains(text), qPrintable(glance->text()));
    }

    void exportedChartCarriesItsLegend()
    {
        MainWindow window;
        QVERIFY(openInWindow(window, { scenario(QStringLiteral("first_backward.pickle")) }));
        TimelineWidget* timeline = window.currentCase()->timeline();
        QTemporaryDir directory;
        const QString png = directory.filePath(QStringLiteral("chart.png"));
        QVERIFY(timeline->exportImage(png));
        const QImage image(png);
        QVERIFY(!image.isNull());
        // The top strip holds a swatch of every band colour, above the plot.
        const int strip = image.height() / 12;
        for (Category category : { Category::Parameters, Category::Activations, Category::OptimizerState }) {
            const QRgb wanted = colors::category(category).rgb();
            bool found = false;
            for (int y = 0; y < strip && !found; ++y) {
                for (int x = 0; x < image.width() && !found; ++x)
                    found = image.pixel(x, y) == wanted;
            }
            QVERIFY2(found, qPrintable(categoryText(category)));
        }
        const QString svg = directory.filePath(QStringLiteral("chart.svg"));
        QVERIFY(timeline->exportImage(svg));
        const QByteArray text = test::readFile(svg);
        QVERIFY(text.contains("Optimizer state"));
        QVERIFY(text.contains("Reserved"));
    }

    void screenshotsOfEveryView()
    {
        MainWindow window;
        QVERIFY(openInWindow(window,
            { scenario(QStringLiteral("fragmentation.pickle")), scenario(QStringLiteral("fragmentation.oom.txt")) }));
        QTemporaryDir directory;
        const QStringList written = window.writeScreenshots(directory.path());
        QCOMPARE(written.size(), 6); // overview, timeline, allocator, events, the chart's SVG, what-if
        for (const QString& path : written)
            QVERIFY(QFileInfo(path).size() > 1000);
    }

    void realCorpusSnapshotOpens()
    {
        OOMLENS_REQUIRE_SHARED();
        const QString path
            = test::corpusDir() + QStringLiteral("/snapshots/Constructor-Sun__code_location__memory_snapshot.pickle");
        MainWindow window;
        QVERIFY(openInWindow(window, { path }));
        QCOMPARE(window.caseCount(), 1);
        QVERIFY2(window.bannerText().isEmpty(), qPrintable(window.bannerText()));
        CaseWidget* view = window.currentCase();
        const auto data = view->timeline()->timeline();
        QVERIFY(data && data->eventCount() > 0);
        // This snapshot holds a real oom event: the "At OOM" moment shows what was live then.
        QVERIFY(!data->device()->ooms.empty());
        const int64_t oom = data->device()->ooms.front().eventIndex;
        view->setCursorEvent(oom);
        QCOMPARE(view->liveAllocations()->model()->moment(), oom);
        QCOMPARE(view->events()->selectedEvent(), oom);
        QVERIFY(view->liveAllocations()->model()->rowCount() > 0);
    }
};

QTEST_MAIN(TestMainWindow)
#include "tst_mainwindow.moc"
