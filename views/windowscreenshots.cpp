#include "views/windowscreenshots.h"

#include "views/allocatorstatewidget.h"
#include "views/casewidget.h"
#include "views/compareview.h"
#include "views/jobview.h"
#include "views/mainwindow.h"
#include "views/overviewpage.h"
#include "views/timelinewidget.h"

#include <QApplication>
#include <QDeadlineTimer>
#include <QDir>
#include <QTabWidget>
#include <QThread>

namespace oomlens {

namespace {

void waitWhileBusy(QWidget* tab)
{
    // Both views compute on the thread pool; picture them once their result is on screen.
    const auto busy = [tab] {
        if (auto* job = qobject_cast<JobView*>(tab))
            return job->isBusy();
        if (auto* compare = qobject_cast<CompareView*>(tab))
            return compare->isBusy();
        return false;
    };
    QDeadlineTimer deadline(120000);
    while (busy() && !deadline.hasExpired()) {
        QThread::msleep(5);
        QApplication::processEvents();
    }
}

} // namespace

QStringList writeWindowScreenshots(MainWindow& window, const QString& directory)
{
    QDir().mkpath(directory);
    QStringList written;
    auto grab = [&](const QString& name) {
        QApplication::processEvents();
        const QString path = QDir(directory).filePath(name);
        if (window.grab().save(path))
            written << path;
    };
    if (auto* job = window.currentJob()) {
        waitWhileBusy(job);
        grab(QStringLiteral("job.png"));
        return written;
    }
    if (CompareView* compare = qobject_cast<CompareView*>(window.currentTab())) {
        waitWhileBusy(compare);
        grab(QStringLiteral("compare.png"));
        return written;
    }
    CaseWidget* current = window.currentCase();
    if (!current) {
        grab(QStringLiteral("empty.png"));
        return written;
    }
    current->showPage(CaseWidget::OverviewTab);
    current->overview()->ensureFilled();
    grab(QStringLiteral("overview.png"));
    if (current->tabs()->isTabEnabled(CaseWidget::TimelineTab)) {
        current->showPage(CaseWidget::TimelineTab);
        current->timeline()->resetZoom();
        grab(QStringLiteral("timeline.png"));
        current->detailTabs()->setCurrentIndex(1);
        // The allocator state is built on the thread pool; picture it once it is on screen.
        QDeadlineTimer deadline(10000);
        while (current->allocatorState()->isBusy() && !deadline.hasExpired()) {
            QThread::msleep(5);
            QApplication::processEvents();
        }
        grab(QStringLiteral("allocator.png"));
        current->detailTabs()->setCurrentIndex(0);
        current->showPage(CaseWidget::EventsTab);
        grab(QStringLiteral("events.png"));
        current->showPage(CaseWidget::TimelineTab);
        if (current->timeline()->exportImage(QDir(directory).filePath(QStringLiteral("timeline-chart.svg"))))
            written << QDir(directory).filePath(QStringLiteral("timeline-chart.svg"));
    }
    current->showPage(CaseWidget::WhatIfTab);
    grab(QStringLiteral("whatif.png"));
    if (current->tabs()->isTabEnabled(CaseWidget::ProfilerTab)) {
        current->showPage(CaseWidget::ProfilerTab);
        grab(QStringLiteral("profiler.png"));
    }
    return written;
}

} // namespace oomlens
