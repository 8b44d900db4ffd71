// A long session in the app: one case opened, shown, painted and closed again many times in one
// window, offscreen, through the window's real open path (MainWindow::openFiles, the loader's
// threads, the tab's close button). Memory must stay bounded (common/longsession.h says how the
// bound is derived from the case); in the asan build the rounds run under LeakSanitizer instead.
//
// The full 100 rounds take about 22 s in the release build; under ASan CI runs 6 (LeakSanitizer's
// check at exit needs no more); OOMLENS_LONG_SESSION_ROUNDS sets another count.
#include "common/longsession.h"
#include "core/backgroundrelease.h"
#include "views/casewidget.h"
#include "views/mainwindow.h"

#include <QApplication>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QThreadPool>

#include <malloc.h>

using namespace oomlens;

class TestLongSession : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QApplication::setOrganizationName(QStringLiteral("oomlens-tests"));
        QApplication::setApplicationName(QStringLiteral("tst_longsession"));
    }

    void reopenedCaseKeepsMemoryBounded()
    {
        QTemporaryDir dir;
        // 100k events with an OOM and compiled frames: every view and the whole diagnosis have
        // something to hold, and the case (31 MiB budget) is well above Qt's own caches' churn.
        const test::GeneratedSnapshot snapshot = test::generateSnapshot(dir.path(), QStringLiteral("long.pickle"),
            { QStringLiteral("--events"), QStringLiteral("100000"), QStringLiteral("--oom"),
                QStringLiteral("--compiled") });
        QVERIFY2(!snapshot.path.isEmpty(), "bench/gen_snapshot.py did not write the case");

        const bool measure = test::residentMemoryIsMeaningful();
        const int rounds = test::longSessionCount("OOMLENS_LONG_SESSION_ROUNDS", measure ? 100 : 6);
        const int warmUp = std::min(10, rounds / 3);

        MainWindow window;
        window.resize(1400, 900);
        window.show();
        auto* tabs = window.findChild<QTabWidget*>();
        QVERIFY(tabs);
        test::MemoryBound bound;
        bound.toleranceMiB = snapshot.budgetMiB();
        for (int round = 1; round <= rounds; ++round) {
            window.openFiles({ snapshot.path });
            QVERIFY2(QTest::qWaitFor([&] { return !window.isLoading() && window.caseCount() == 1; }, 120000),
                qPrintable(QStringLiteral("round %1: the case did not open").arg(round)));
            CaseWidget* view = window.currentCase();
            QVERIFY(view);
            view->showPage(CaseWidget::TimelineTab);
            QApplication::processEvents();
            window.grab(); // paint every visible view once, as the screen would

            emit tabs->tabCloseRequested(tabs->currentIndex());
            QCOMPARE(window.caseCount(), 0);
            // What the close leaves to others: deferred deletes, the loader's pool, the releases
            // on their own thread; then glibc's free lists back to the kernel, so that what stays
            // resident is what something still holds.
            QApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete);
            QApplication::processEvents();
            QThreadPool::globalInstance()->waitForDone();
            QApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete);
            waitForBackgroundReleases();
            malloc_trim(0);
            const double closed = test::residentMiB();
            if (round == warmUp)
                bound.warmMiB = closed;
            bound.endMiB = closed;
            if (round <= 2 || round % 10 == 0 || round == rounds)
                qInfo("round %d: RSS after close %.1f MiB", round, closed);
        }
        if (!measure) {
            // Not a QSKIP: a suite that skips all is reported as skipped, whatever LeakSanitizer
            // then says at exit.
            qInfo("AddressSanitizer build: its quarantine keeps freed memory resident, so the RSS bound is checked "
                  "in the release build; the %d rounds ran, LeakSanitizer checks them at exit",
                rounds);
            return;
        }
        const QString summary = bound.describe(warmUp, rounds);
        qInfo("%s", qPrintable(summary));
        QVERIFY2(bound.holds(), qPrintable(summary));
    }
};

QTEST_MAIN(TestLongSession)
#include "tst_longsession.moc"
