#include "common/loadedcasefixture.h"
#include "views/casewidget.h"
#include "views/pinnedhostview.h"

#include <QApplication>
#include <QLabel>
#include <QTabWidget>
#include <QTest>
#include <qcustomplot.h>

using namespace oomlens;

// The app's "Pinned host memory" tab: the host allocator's own plot (record_pinned_host_memory),
// enabled only for a snapshot that recorded it, and never drawn on the GPU's timeline.
class TestPinnedHostView : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void tabShowsTheHostTimeline()
    {
        CaseWidget widget;
        widget.resize(1000, 700);
        widget.setCase(test::loadTestCase(QStringLiteral("hostmemory/pinned_host.pickle")));
        QVERIFY(widget.tabs()->isTabEnabled(CaseWidget::PinnedHostTab));
        QCOMPARE(widget.tabs()->tabText(CaseWidget::PinnedHostTab), QStringLiteral("Pinned host memory"));
        PinnedHostView* view = widget.pinnedHost();
        QVERIFY(view->hasTimeline());
        QCOMPARE(view->plot()->graphCount(), 2);
        QCOMPARE(view->plot()->graph(0)->name(), QStringLiteral("Handed out"));
        QCOMPARE(view->plot()->graph(0)->data()->size(), 12); // 11 entries, then held to the GPU's OOM
        // The peak of what was handed out: staging buffer and two batches, 256 MiB.
        double peak = 0;
        for (const auto& point : *view->plot()->graph(0)->data())
            peak = std::max(peak, point.value);
        QCOMPARE(peak, 256.0 * 1024 * 1024);
        QCOMPARE(view->plot()->itemCount(), 1); // the GPU's OOM marker
        QVERIFY(view->summary()->text().contains(QStringLiteral("Host RAM, not GPU memory")));
        QVERIFY(view->summary()->text().contains(
            QStringLiteral("At the GPU's OOM: 256.00 MiB pinned, 128.00 MiB handed out")));
        widget.showPage(CaseWidget::PinnedHostTab);
        widget.show();
        QVERIFY(QTest::qWaitForWindowExposed(&widget));
        QCOMPARE(widget.tabs()->currentWidget(), static_cast<QWidget*>(view));
    }

    void disabledWithoutHostMemory()
    {
        CaseWidget widget;
        widget.setCase(test::loadTestCase(QStringLiteral("snapshots/newest.pickle.gz")));
        QVERIFY(!widget.tabs()->isTabEnabled(CaseWidget::PinnedHostTab));
        QVERIFY(!widget.pinnedHost()->hasTimeline());
        QCOMPARE(widget.pinnedHost()->plot()->graphCount(), 0);
        QVERIFY(
            widget.tabs()->tabToolTip(CaseWidget::PinnedHostTab).contains(QStringLiteral("record_pinned_host_memory")));
    }
};

QTEST_MAIN(TestPinnedHostView)
#include "tst_pinnedhostview.moc"
