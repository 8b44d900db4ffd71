#include "common/loadedcasefixture.h"
#include "views/casewidget.h"
#include "views/profilertimelineview.h"

#include <QApplication>
#include <QComboBox>
#include <QLabel>
#include <QTabWidget>
#include <QTableWidget>
#include <QTest>
#include <qcustomplot.h>

using namespace oomlens;

namespace {

// An export_memory_timeline_raw written by hand: parameters before profiling, an activation that
// peaks at 200 us, an autograd detail at the end.
const std::string raw = R"([[-1, 1, 4096, 0], [100, 2, 8192, 4], [200, 2, 2048, 5], [250, 4, -8192, 4],
  [300, 2, 256, 6]])";

AnalyzedCasePtr loaded(bool withSnapshot)
{
    Case input;
    if (withSnapshot)
        addFile(input, QString(test::testDataDir() + QStringLiteral("/snapshots/newest.pickle.gz")).toStdString());
    addInput(input, "memory.raw.json", raw);
    CaseAnalysis analysis = analyzeCase(input);
    return std::make_shared<const AnalyzedCase>(AnalyzedCase { std::move(input), std::move(analysis), std::string() });
}

} // namespace

// The app's "Profiler memory" tab: torch.profiler's timeline in oomlens's categories, PyTorch's
// names in the summary, and beside a snapshot the two categorisations side by side.
class TestProfilerTimelineView : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void openedAloneShowsTheTab()
    {
        CaseWidget widget;
        widget.resize(1000, 700);
        widget.setCase(loaded(false));
        QVERIFY(widget.tabs()->isTabEnabled(CaseWidget::ProfilerTab));
        QCOMPARE(widget.tabs()->tabText(CaseWidget::ProfilerTab), QStringLiteral("Profiler memory"));
        // Nothing else to show: the case opens on it.
        QCOMPARE(widget.tabs()->currentIndex(), int(CaseWidget::ProfilerTab));
        ProfilerTimelineView* view = widget.profiler();
        QVERIFY(view->hasTimelines());
        QCOMPARE(view->plot()->plottableCount(), 1); // the stacked bands
        QCOMPARE(view->plot()->itemCount(), 1); // the peak marker
        const QString summary = view->summary()->text();
        QVERIFY2(summary.contains(QStringLiteral("peak 14.00 KiB")), qPrintable(summary));
        QVERIFY(summary.contains(QStringLiteral("ACTIVATION 8.00 KiB (Activations)")));
        QVERIFY(summary.contains(QStringLiteral("GRADIENT 2.00 KiB (Gradients)")));
        QVERIFY(view->comparisonTable()->isHidden()); // no snapshot to compare with
        QVERIFY(view->fileBox()->isHidden());
        widget.show();
        QVERIFY(QTest::qWaitForWindowExposed(&widget));
    }

    void besideASnapshot()
    {
        CaseWidget widget;
        widget.setCase(loaded(true));
        QVERIFY(widget.tabs()->isTabEnabled(CaseWidget::ProfilerTab));
        QVERIFY(widget.tabs()->isTabEnabled(CaseWidget::TimelineTab));
        QTableWidget* table = widget.profiler()->comparisonTable();
        QVERIFY(!table->isHidden());
        QVERIFY(table->rowCount() >= 2);
        QCOMPARE(table->item(table->rowCount() - 1, 0)->text(), QStringLiteral("Total"));
        QCOMPARE(table->item(table->rowCount() - 1, 2)->text(), QStringLiteral("14.00 KiB"));
        bool activations = false;
        for (int row = 0; row < table->rowCount(); ++row) {
            if (table->item(row, 0)->text() == QStringLiteral("Activations")) {
                activations = true;
                QCOMPARE(table->item(row, 3)->text(), QStringLiteral("ACTIVATION"));
            }
        }
        QVERIFY(activations);
    }

    void disabledWithoutATimeline()
    {
        CaseWidget widget;
        widget.setCase(test::loadTestCase(QStringLiteral("snapshots/newest.pickle.gz")));
        QVERIFY(!widget.tabs()->isTabEnabled(CaseWidget::ProfilerTab));
        QVERIFY(widget.tabs()->tabToolTip(CaseWidget::ProfilerTab).contains(QStringLiteral("export_memory_timeline")));
        QVERIFY(!widget.profiler()->hasTimelines());
    }
};

QTEST_MAIN(TestProfilerTimelineView)
#include "tst_profilertimelineview.moc"
