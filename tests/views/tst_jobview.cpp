#include "app/cli/summarize.h"
#include "common/heldthreadpool.h"
#include "common/testutil.h"
#include "core/job/jobsummary.h"
#include "core/job/jobtext.h"
#include "views/casewidget.h"
#include "views/jobbars.h"
#include "views/jobview.h"
#include "views/mainwindow.h"

#include <QApplication>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFile>
#include <QFileInfo>
#include <QLabel>
#include <QListWidget>
#include <QMimeData>
#include <QPushButton>
#include <QSignalSpy>
#include <QStatusBar>
#include <QTableWidget>
#include <QTemporaryDir>
#include <QTest>
#include <QThreadPool>
#include <QUrl>
#include <qcustomplot.h>

#include <nlohmann/json.hpp>

using namespace oomlens;

// The Job tab driven as a user would, offscreen, on the job in tests/data/job (job.json is the
// truth: 8 ranks, ranks 5 and 6 run out of memory, rank 6 first; rank 3's number only in its
// capture sidecar): opened from the command line's way in and by a drop of the rank files,
// summarized off the GUI thread, the failing rank highlighted, a rank opened by double-click,
// the report's job section exported.
namespace {

QString jobDir()
{
    return test::testDataDir() + QStringLiteral("/job");
}

QStringList rankFiles()
{
    QStringList files;
    for (const QString& name : QDir(jobDir()).entryList({ QStringLiteral("*.pickle") }, QDir::Files, QDir::Name))
        files << QDir(jobDir()).filePath(name);
    return files;
}

nlohmann::json truth()
{
    return nlohmann::json::parse(test::readFile(jobDir() + QStringLiteral("/job.json")).toStdString());
}

bool waitForJob(JobView* job)
{
    return QTest::qWaitFor([&] { return !job->isBusy(); }, 120000);
}

// What Qt sends for a real drag of files onto the window's middle (as tst_dropandpaste).
bool dropFiles(MainWindow& window, const QStringList& paths, Qt::KeyboardModifiers modifiers = Qt::NoModifier)
{
    QMimeData mime;
    QList<QUrl> urls;
    for (const QString& path : paths)
        urls << QUrl::fromLocalFile(path);
    mime.setUrls(urls);
    const QPoint middle = window.rect().center();
    QDragEnterEvent enter(middle, Qt::CopyAction, &mime, Qt::LeftButton, modifiers);
    QApplication::sendEvent(&window, &enter);
    if (!enter.isAccepted())
        return false;
    QDropEvent drop(QPointF(middle), enter.dropAction(), &mime, Qt::LeftButton, modifiers);
    QApplication::sendEvent(&window, &drop);
    return drop.isAccepted();
}

JobView* openJob(MainWindow& window)
{
    window.resize(1400, 900);
    window.show();
    window.openFiles(rankFiles()); // `oomlens rank*.pickle` takes this way
    return window.currentJob();
}

} // namespace

class TestJobView : public QObject
{
    Q_OBJECT
private slots:
    void initTestCase()
    {
        QApplication::setOrganizationName(QStringLiteral("oomlens-tests"));
        QApplication::setApplicationName(QStringLiteral("tst_jobview"));
    }

    void failingRankIsHighlighted()
    {
        const auto expected = truth();
        MainWindow window;
        JobView* job = openJob(window);
        QVERIFY(job);
        QCOMPARE(window.caseCount(), 0); // a job, not a case of eight snapshots
        QVERIFY(job->isBusy()); // summarized on the thread pool: the window is still ours meanwhile
        QVERIFY(waitForJob(job));
        QVERIFY(!job->wasCancelled());

        const JobSummary& summary = job->summary();
        QCOMPARE(qsizetype(summary.ranks.size()), rankFiles().size());
        QVERIFY(summary.failing());
        const int failingRank = expected["failing_rank"].get<int>();
        QCOMPARE(summary.failing()->rank, failingRank);
        QVERIFY(!summary.failingIsClosestOnly());
        QVERIFY2(job->headline().startsWith(QStringLiteral("rank %1 (").arg(failingRank)), qPrintable(job->headline()));

        // The failing rank's row stands out (bold, shaded) and is selected; no other row is bold.
        QTableWidget* table = job->ranksTable();
        const int failingRow = int(*summary.failingRank);
        QCOMPARE(table->rowCount(), int(summary.ranks.size()));
        QCOMPARE(table->item(failingRow, JobView::RankColumn)->text(), QStringLiteral("rank %1").arg(failingRank));
        for (int row = 0; row < table->rowCount(); ++row) {
            const bool bold = table->item(row, JobView::RankColumn)->font().bold();
            QCOMPARE(bold, row == failingRow);
            QCOMPARE(table->item(row, JobView::PeakColumn)->background().style() != Qt::NoBrush, row == failingRow);
        }
        QCOMPARE(job->selectedRank(), failingRow);
        QCOMPARE(table->item(failingRow, JobView::OomColumn)->text(), QStringLiteral("yes, first"));
        for (const auto& oomRank : expected["oom_ranks"]) {
            const auto it = std::find_if(summary.ranks.begin(), summary.ranks.end(),
                [&](const RankSummary& rank) { return rank.rank == oomRank.get<int>(); });
            QVERIFY(it != summary.ranks.end());
            QVERIFY(table->item(int(it - summary.ranks.begin()), JobView::OomColumn)
                        ->text()
                        .startsWith(QStringLiteral("yes")));
        }

        // Imbalance, the card, groups and notes as core summarized them.
        auto* figures = job->findChild<QLabel*>(QStringLiteral("jobFigures"));
        QVERIFY(figures->text().contains(QStringLiteral("Imbalance %1x").arg(summary.imbalance, 0, 'f', 2)));
        QCOMPARE(job->bars()->capacityShown(), expected["capacity_bytes"].get<uint64_t>());
        QCOMPARE(job->groups()->count(), int(summary.groups.size()));
        QVERIFY(job->groups()->item(0)->text().startsWith(QString::fromStdString(summary.groups.front().label)));
        QVERIFY(job->notes()->count() >= int(summary.notes.size()));
        QCOMPARE(job->notes()->item(0)->text(), QString::fromStdString(summary.notes.front()));
        // One stacked bar per category, one column per rank.
        QCOMPARE(job->bars()->plot()->plottableCount(), categoryCount);

        // A click on another rank's column selects its row.
        QCustomPlot* plot = job->bars()->plot();
        const QPoint column(int(plot->xAxis->coordToPixel(JobBars::columnOf(0))),
            int(plot->yAxis->coordToPixel(double(summary.ranks[0].peakAllocatedBytes) / 2)));
        QTest::mouseClick(plot, Qt::LeftButton, {}, column);
        QCOMPARE(job->selectedRank(), 0);
    }

    void doubleClickOpensTheRank()
    {
        MainWindow window;
        JobView* job = openJob(window);
        QVERIFY(job);
        QVERIFY(waitForJob(job));
        const int failingRow = int(*job->summary().failingRank);
        QTableWidget* table = job->ranksTable();
        // Press, release, double-click: what a user's double-click sends.
        const QPoint cell = table->visualItemRect(table->item(failingRow, JobView::FileColumn)).center();
        QTest::mouseClick(table->viewport(), Qt::LeftButton, {}, cell);
        QTest::mouseDClick(table->viewport(), Qt::LeftButton, {}, cell);
        QVERIFY(QTest::qWaitFor([&] { return window.caseCount() == 1 && !window.isLoading(); }, 60000));
        CaseWidget* opened = window.currentCase();
        QVERIFY(opened);
        QCOMPARE(opened->loadedCase()->input.inputs.size(), size_t(1));
        QCOMPARE(QString::fromStdString(opened->loadedCase()->input.inputs.front().path),
            QString::fromStdString(job->summary().failing()->file));
        QVERIFY(opened->tabs()->isTabEnabled(CaseWidget::TimelineTab));
        QCOMPARE(window.tabCount(), 2); // the job stays open beside it

        // The button does the same for the selected rank.
        job->selectRank(0);
        job->findChild<QPushButton*>(QStringLiteral("openRank"))->click();
        QVERIFY(QTest::qWaitFor([&] { return window.caseCount() == 2 && !window.isLoading(); }, 60000));
        QCOMPARE(QString::fromStdString(window.currentCase()->loadedCase()->input.inputs.front().path),
            QString::fromStdString(job->summary().ranks[0].file));
    }

    void droppingRankFilesMakesAJob()
    {
        MainWindow window;
        window.resize(1200, 800);
        window.show();
        QVERIFY(QTest::qWaitForWindowExposed(&window));
        const QStringList three { QDir(jobDir()).filePath(QStringLiteral("rank0.pickle")),
            QDir(jobDir()).filePath(QStringLiteral("rank5.pickle")),
            QDir(jobDir()).filePath(QStringLiteral("rank6.pickle")) };
        QVERIFY(dropFiles(window, three));
        JobView* job = window.currentJob();
        QVERIFY(job);
        QCOMPARE(window.caseCount(), 0);
        QVERIFY2(window.statusBar()->currentMessage().contains(QStringLiteral("opened as one job")),
            qPrintable(window.statusBar()->currentMessage()));
        QVERIFY(waitForJob(job));
        QCOMPARE(job->summary().ranks.size(), size_t(3));
        QCOMPARE(job->summary().failing()->rank, 6);

        // The ranks with their traceback are still a job, as on the command line: the traceback
        // is read with the failing rank (opening/jobfiles.h's one rule).
        const QString traceback = QDir(jobDir()).filePath(QStringLiteral("rank6.oom.txt"));
        QVERIFY(dropFiles(window,
            { QDir(jobDir()).filePath(QStringLiteral("rank5.pickle")), traceback,
                QDir(jobDir()).filePath(QStringLiteral("rank6.pickle")) }));
        JobView* withTraceback = window.currentJob();
        QVERIFY(withTraceback && withTraceback != job);
        QCOMPARE(window.caseCount(), 0);
        QVERIFY(waitForJob(withTraceback));
        QCOMPARE(withTraceback->summary().ranks.size(), size_t(2));
        QCOMPARE(withTraceback->summary().failing()->rank, 6);
        QVERIFY(withTraceback->failingCase());
        const std::vector<CaseInput>& inputs = withTraceback->failingCase()->input.inputs;
        QCOMPARE(inputs.size(), size_t(2));
        QCOMPARE(QString::fromStdString(inputs.back().path), traceback);
        QVERIFY(!withTraceback->failingCase()->input.text.oomMessages.empty());

        // One snapshot with its OOM message is one case (the message joins the snapshot).
        QVERIFY(dropFiles(window,
            { QDir(jobDir()).filePath(QStringLiteral("rank6.pickle")),
                QDir(jobDir()).filePath(QStringLiteral("rank6.oom.txt")) },
            Qt::ControlModifier));
        QVERIFY(QTest::qWaitFor([&] { return window.caseCount() == 1 && !window.isLoading(); }, 60000));
        QCOMPARE(window.tabCount(), 3);
    }

    // A log given with the ranks that cannot be read is shown as a case's would be; the job and
    // the failing rank's diagnosis are still there.
    void aJobShowsTheInputsItCouldNotRead()
    {
        MainWindow window;
        const QString missing = QDir(jobDir()).filePath(QStringLiteral("train.log")); // not there
        window.openFiles({ QDir(jobDir()).filePath(QStringLiteral("rank5.pickle")),
            QDir(jobDir()).filePath(QStringLiteral("rank6.pickle")), missing });
        JobView* job = window.currentJob();
        QVERIFY(job);
        QVERIFY(waitForJob(job));
        QCOMPARE(job->summary().ranks.size(), size_t(2));
        QCOMPARE(job->failures().size(), size_t(1));
        QCOMPARE(QString::fromStdString(job->failures().front().path), missing);
        QVERIFY2(window.bannerText().startsWith(QStringLiteral("train.log: ")), qPrintable(window.bannerText()));
        QVERIFY(job->failingCase());
        QCOMPARE(job->failingCase()->analysis.snapshots.size(), size_t(1));
    }

    // A folder given to the app stands for its rank files, as `oomlens diagnose logs/` does.
    void aFolderOpensAsItsJob()
    {
        MainWindow window;
        window.openFiles({ jobDir() });
        JobView* job = window.currentJob();
        QVERIFY(job);
        QVERIFY(waitForJob(job));
        QCOMPARE(job->summary().ranks.size(), size_t(rankFiles().size()));
        QCOMPARE(job->summary().failing()->rank, 6);
    }

    void exportWritesTheJobSection()
    {
        MainWindow window;
        JobView* job = openJob(window);
        QVERIFY(job);
        QVERIFY(waitForJob(job));
        QVERIFY(job->failingCase());
        QTemporaryDir directory;
        const QString path = directory.filePath(QStringLiteral("job.html"));
        QVERIFY(window.exportReport(path));
        const QString html = QString::fromUtf8(test::readFile(path));
        QVERIFY(html.contains(QStringLiteral("<section id=\"job\">")));
        QVERIFY(html.contains(QStringLiteral("class=\"chart job-ranks\"")));
        QVERIFY(html.contains(QStringLiteral("<tr class=\"failing\"><td>6</td>")));
        QVERIFY(html.contains(QStringLiteral("id=\"diagnosis\""))); // the failing rank's own diagnosis follows
    }

    // Summaries written by `oomlens summarize` open as the job their snapshots make: the same
    // table, groups and notes; the failing rank's snapshot opened from the path in its summary,
    // or named as the file to copy when it is not here (the report is still written).
    void summariesOpenAsTheSameJob()
    {
        QTemporaryDir directory;
        const QString summaries = directory.filePath(QStringLiteral("summaries"));
        QCOMPARE(cli::runSummarize({ jobDir().toStdString(), "-o", summaries.toStdString() }), 0);
        QStringList files;
        for (const QString& name : QDir(summaries).entryList(QDir::Files, QDir::Name))
            files << QDir(summaries).filePath(name);
        QCOMPARE(files.size(), rankFiles().size());

        MainWindow window;
        window.resize(1400, 900);
        window.show();
        window.openFiles(rankFiles());
        JobView* direct = window.currentJob();
        QVERIFY(direct && waitForJob(direct));
        window.openFiles(files);
        JobView* merged = window.currentJob();
        QVERIFY(merged && merged != direct);
        QVERIFY(waitForJob(merged));
        const std::string directText = jobToText(direct->summary());
        const std::string mergedText = jobToText(merged->summary());
        QCOMPARE(mergedText.substr(mergedText.find('\n')), directText.substr(directText.find('\n')));
        QCOMPARE(merged->summary().fromSummaries, size_t(files.size()));
        QVERIFY(merged->failingCase());
        QCOMPARE(merged->failingCase()->analysis.snapshots.size(), size_t(1));
        QCOMPARE(merged->headline(), direct->headline());
        QVERIFY(merged->findChild<QLabel*>(QStringLiteral("jobFigures"))
                    ->text()
                    .contains(QStringLiteral("%1 read from summaries").arg(files.size())));

        // Summarized elsewhere, the snapshots not copied: the job is whole, the file to copy named.
        const QString cluster = directory.filePath(QStringLiteral("cluster"));
        QVERIFY(QDir().mkpath(cluster));
        for (const QString& file : rankFiles())
            QVERIFY(QFile::copy(file, cluster + QLatin1Char('/') + QFileInfo(file).fileName()));
        const QString far = directory.filePath(QStringLiteral("far"));
        QCOMPARE(cli::runSummarize({ cluster.toStdString(), "-o", far.toStdString() }), 0);
        QVERIFY(QDir(cluster).removeRecursively());
        window.openFiles({ QDir(far).filePath(QStringLiteral("rank6.oomlens-summary.json")),
            QDir(far).filePath(QStringLiteral("rank5.oomlens-summary.json")) });
        JobView* remote = window.currentJob();
        QVERIFY(remote && waitForJob(remote));
        QCOMPARE(remote->summary().failing()->rank, 6);
        QVERIFY(
            remote->notes()->item(0)->text().startsWith(QStringLiteral("the failing rank's snapshot is not here: copy ")
                + cluster + QStringLiteral("/rank6.pickle")));
        QVERIFY(remote->failingCase());
        QVERIFY(remote->failingCase()->analysis.snapshots.empty());
        const QString report = directory.filePath(QStringLiteral("far.html"));
        QVERIFY(window.exportReport(report));
        QVERIFY(QString::fromUtf8(test::readFile(report)).contains(QStringLiteral("<section id=\"job\">")));
    }

    void cancelStopsTheSummary()
    {
        MainWindow window;
        JobView* job = openJob(window);
        QVERIFY(job);
        job->cancel();
        QVERIFY(waitForJob(job));
        // Ranks already started finish; the job is not shown as summarized either way.
        QVERIFY(job->wasCancelled());
        QVERIFY(job->headline().startsWith(QStringLiteral("Cancelled")));
        QCOMPARE(job->ranksTable()->rowCount(), 0);
    }

    // A job started again before the first summary came back: the first is dropped, and only the
    // second is ever shown.
    void startingAgainDropsTheFirstSummary()
    {
        const QStringList all = rankFiles();
        QVERIFY(all.size() > 2);
        JobView view;
        QSignalSpy finished(&view, &JobView::finished);
        {
            test::HeldThreadPool held;
            view.start(all);
            view.start(all.mid(0, 2));
        }
        QVERIFY(waitForJob(&view));
        QVERIFY(!view.wasCancelled());
        QCOMPARE(view.summary().ranks.size(), size_t(2));
        QCOMPARE(view.ranksTable()->rowCount(), 2);
        QThreadPool::globalInstance()->waitForDone();
        QCoreApplication::processEvents();
        QCOMPARE(finished.count(), 1);
        QCOMPARE(view.summary().ranks.size(), size_t(2));
    }

    // Closing the Job tab while it is summarized: the summary is told to stop and reaches nobody.
    void closingWhileSummarizingIsSafe()
    {
        auto* view = new JobView;
        QSignalSpy progress(view, &JobView::progressChanged);
        view->start(rankFiles());
        QVERIFY(progress.wait(120000) || !view->isBusy());
        delete view;
        QThreadPool::globalInstance()->waitForDone();
        QCoreApplication::processEvents();
    }
};

QTEST_MAIN(TestJobView)
#include "tst_jobview.moc"
