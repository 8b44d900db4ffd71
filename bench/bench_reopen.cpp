// A long session in the app: one case opened, shown and closed again N times in one window
// (MainWindow::openFiles, the timeline page painted, the tab's close button), offscreen. Prints the
// resident memory after each close, so that memory held by a closed case shows as growth from the
// first rounds to the last; built with the asan preset it also runs under LeakSanitizer.
//
//   bench_reopen FILE [--times N]            (default 100)
//
// "after close" is measured once the closed tab's widgets are deleted, the loader's threads are
// idle, the background releases (core/backgroundrelease.h) are done and malloc_trim has returned glibc's free memory;
// caches filled by the first open (fonts, styles, Qt's) stay, so the figure to read is the growth between round 10 and
// round N.
#include "bench/processusage.h"
#include "core/backgroundrelease.h"
#include "views/casewidget.h"
#include "views/mainwindow.h"

#include <QApplication>
#include <QDeadlineTimer>
#include <QStandardPaths>
#include <QTabWidget>
#include <QThreadPool>

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

using namespace oomlens;
using oomlens::bench::currentRssMiB;
using oomlens::bench::peakRssMiB;

namespace {

// Runs the event loop until `done` holds or the time is up (what QTest::qWaitFor does).
template <typename Done> bool waitFor(Done done, int timeoutMs)
{
    const QDeadlineTimer deadline(timeoutMs);
    while (!done()) {
        if (deadline.hasExpired())
            return false;
        QApplication::processEvents(QEventLoop::AllEvents | QEventLoop::WaitForMoreEvents, 20);
    }
    return true;
}

} // namespace

int main(int argc, char** argv)
{
    qputenv("QT_QPA_PLATFORM", "offscreen");
    QStandardPaths::setTestModeEnabled(true); // the recent-files list and settings stay out of the user's
    QApplication app(argc, argv);
    if (argc < 2) {
        std::fprintf(stderr, "usage: bench_reopen FILE [--times N]\n");
        return 2;
    }
    const QString file = QString::fromLocal8Bit(argv[1]);
    int times = 100;
    for (int i = 2; i + 1 < argc; ++i) {
        if (std::string(argv[i]) == "--times")
            times = std::max(1, std::atoi(argv[++i]));
    }

    MainWindow window;
    window.resize(1400, 900);
    window.show();
    auto* tabs = window.findChild<QTabWidget*>();
    if (!tabs) {
        std::fprintf(stderr, "no case tabs in the main window\n");
        return 1;
    }
    std::printf("file: %s, %d rounds; RSS before the first open: %.1f MiB\n", argv[1], times, currentRssMiB());
    std::printf("%6s %12s %14s %14s\n", "round", "open ms", "RSS open MiB", "RSS closed MiB");
    std::vector<double> closed;
    for (int round = 1; round <= times; ++round) {
        const auto start = std::chrono::steady_clock::now();
        const int before = tabs->count();
        window.openFiles({ file });
        if (!waitFor([&] { return !window.isLoading() && tabs->count() > before; }, 120000)) {
            std::fprintf(stderr, "round %d: the case did not open\n", round);
            return 1;
        }
        if (CaseWidget* view = window.currentCase())
            view->showPage(CaseWidget::TimelineTab);
        QApplication::processEvents();
        window.grab(); // paint every visible view once, as the screen would
        const double openMs
            = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
        const double openRss = currentRssMiB();
        emit tabs->tabCloseRequested(tabs->count() - 1);
        QApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete);
        QApplication::processEvents();
        QThreadPool::globalInstance()->waitForDone();
        QApplication::sendPostedEvents(nullptr, QEvent::DeferredDelete);
        waitForBackgroundReleases(); // the mapping and the decoder's tables are dropped off-thread
        // Freed memory glibc keeps in its arenas for reuse is not held by the case: give it back
        // first, so that what remains is what the closed case (or anything else) still holds.
        malloc_trim(0);
        closed.push_back(currentRssMiB());
        if (round <= 3 || round % 10 == 0 || round == times)
            std::printf("%6d %12.0f %14.1f %14.1f\n", round, openMs, openRss, closed.back());
    }
    const double at10 = closed[std::min<size_t>(9, closed.size() - 1)];
    std::printf("RSS after close: round 1 %.1f MiB, round 10 %.1f MiB, round %d %.1f MiB (growth 10 -> %d: %.1f MiB, "
                "%.2f MiB per round); peak %.1f MiB\n",
        closed.front(), at10, times, closed.back(), times, closed.back() - at10,
        times > 10 ? (closed.back() - at10) / (times - 10) : 0.0, peakRssMiB());
    return 0;
}
