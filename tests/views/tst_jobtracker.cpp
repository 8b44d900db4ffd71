#include "views/jobtracker.h"

#include <QRegularExpression>
#include <QSemaphore>
#include <QSignalSpy>
#include <QTest>
#include <QThread>
#include <QThreadPool>

#include <atomic>
#include <memory>
#include <optional>
#include <stdexcept>

using namespace oomlens;

// The views' one way to work off the GUI thread: results come back on it only for a job still
// wanted, never to a receiver that is gone; cancel reaches the work; in-between results and
// progress come before the result and not at all for a dropped job.
namespace {

// What a widget does with its tracker: holds it as a member and records what reaches it.
struct Receiver
{
    QList<int> delivered;
    JobTracker jobs;
};

// A job that returns `value` once `gate` lets it (each job takes one permit).
auto gatedJob(std::shared_ptr<QSemaphore> gate, int value)
{
    return [gate, value](const JobContext&) {
        gate->acquire();
        return value;
    };
}

bool waitIdle(const JobTracker& jobs)
{
    return QTest::qWaitFor([&] { return !jobs.isRunning(); }, 20000);
}

} // namespace

class TestJobTracker : public QObject
{
    Q_OBJECT
private slots:
    void resultComesBackOnTheGuiThread()
    {
        Receiver receiver;
        QThread* deliveredOn = nullptr;
        receiver.jobs.start([](const JobContext&) { return 42; },
            [&](int value) {
                deliveredOn = QThread::currentThread();
                receiver.delivered << value;
            });
        QVERIFY(receiver.jobs.isRunning());
        QVERIFY(waitIdle(receiver.jobs));
        QCOMPARE(receiver.delivered, QList<int>({ 42 }));
        QCOMPARE(deliveredOn, QThread::currentThread());
    }

    // The older job ends after the newer one delivered: its result is stale and never shown.
    void resultOfASupersededJobIsNeverDelivered()
    {
        Receiver receiver;
        auto gate = std::make_shared<QSemaphore>();
        std::atomic_bool olderSawCancel = false;
        receiver.jobs.replace(
            [gate, &olderSawCancel](const JobContext& job) {
                gate->acquire();
                olderSawCancel = job.cancelled();
                return 1;
            },
            [&](int value) { receiver.delivered << value; });
        receiver.jobs.replace(gatedJob(gate, 2), [&](int value) { receiver.delivered << value; });
        QCOMPARE(receiver.jobs.runningCount(), 2); // the dropped job is still on the pool
        gate->release(2);
        QVERIFY(waitIdle(receiver.jobs));
        QCOMPARE(receiver.delivered, QList<int>({ 2 }));
        QVERIFY(olderSawCancel);
    }

    // A dropped job that finishes first is not shown either, and ends without blocking the next.
    void droppedJobFinishingFirstIsNotDelivered()
    {
        Receiver receiver;
        auto older = std::make_shared<QSemaphore>();
        auto newer = std::make_shared<QSemaphore>();
        const int first = receiver.jobs.start(gatedJob(older, 1), [&](int value) { receiver.delivered << value; });
        receiver.jobs.start(gatedJob(newer, 2), [&](int value) { receiver.delivered << value; });
        receiver.jobs.drop(first);
        QVERIFY(!receiver.jobs.isWanted(first));
        older->release();
        QVERIFY(QTest::qWaitFor([&] { return receiver.jobs.runningCount() == 1; }, 20000));
        QVERIFY(receiver.delivered.isEmpty());
        newer->release();
        QVERIFY(waitIdle(receiver.jobs));
        QCOMPARE(receiver.delivered, QList<int>({ 2 }));
    }

    void cancelReachesTheWorkAndTheResultSaysSo()
    {
        Receiver receiver;
        auto started = std::make_shared<QSemaphore>();
        std::optional<JobEnd> ended;
        QString result;
        const int id = receiver.jobs.start(
            [started](const JobContext& job) {
                started->release();
                while (!job.cancelled())
                    QThread::msleep(1);
                return QStringLiteral("stopped early");
            },
            [&](const QString& value, const JobEnd& end) {
                result = value;
                ended = end;
            });
        started->acquire();
        receiver.jobs.cancel(id);
        QVERIFY(waitIdle(receiver.jobs));
        QCOMPARE(result, QStringLiteral("stopped early"));
        QVERIFY(ended);
        QCOMPARE(ended->id, id);
        QVERIFY(ended->cancelled);
    }

    void postsAndProgressComeInOrderBeforeTheResult()
    {
        Receiver receiver;
        QStringList order;
        connect(&receiver.jobs, &JobTracker::progressChanged, this,
            [&](int, int done, int total) { order << QStringLiteral("progress %1/%2").arg(done).arg(total); });
        receiver.jobs.start(
            [&order](const JobContext& job) {
                job.post([&order] { order << QStringLiteral("first stage"); });
                job.progress(1, 1);
                return 3;
            },
            [&](int value) { order << QStringLiteral("result %1").arg(value); });
        QVERIFY(waitIdle(receiver.jobs));
        QCOMPARE(order,
            QStringList({ QStringLiteral("first stage"), QStringLiteral("progress 1/1"), QStringLiteral("result 3") }));
    }

    void progressIsThrottledButTheLastStepArrives()
    {
        Receiver receiver;
        QSignalSpy progress(&receiver.jobs, &JobTracker::progressChanged);
        receiver.jobs.start(
            [](const JobContext& job) {
                for (int done = 0; done <= 1000; ++done)
                    job.progress(done, 1000, QStringLiteral("Reading…"));
                return 0;
            },
            [](int) {});
        QVERIFY(waitIdle(receiver.jobs));
        QVERIFY(progress.count() >= 1);
        QVERIFY2(progress.count() < 1001, qPrintable(QString::number(progress.count())));
        QCOMPARE(progress.last().at(1).toInt(), 1000);
        QCOMPARE(progress.last().at(3).toString(), QStringLiteral("Reading…"));
    }

    void aDroppedJobPostsNothing()
    {
        Receiver receiver;
        auto gate = std::make_shared<QSemaphore>();
        bool posted = false;
        QSignalSpy progress(&receiver.jobs, &JobTracker::progressChanged);
        QSignalSpy idle(&receiver.jobs, &JobTracker::idle);
        const int id = receiver.jobs.start(
            [gate, &posted](const JobContext& job) {
                gate->acquire();
                job.post([&posted] { posted = true; });
                job.progress(1, 1);
                return 0;
            },
            [&](int value) { receiver.delivered << value; });
        receiver.jobs.drop(id);
        gate->release();
        QVERIFY(idle.wait(20000));
        QVERIFY(!posted);
        QCOMPARE(progress.count(), 0);
        QVERIFY(receiver.delivered.isEmpty());
    }

    // The receiver goes while its job runs: the job is told to stop, and nothing it hands back
    // (a posted call, progress, the result) reaches the destroyed receiver; the work's own data
    // is freed by the worker (LeakSanitizer checks at exit in the asan-gui build).
    void destroyingTheReceiverWhileAJobRunsIsSafe()
    {
        auto gate = std::make_shared<QSemaphore>();
        auto started = std::make_shared<QSemaphore>();
        auto sawCancel = std::make_shared<std::atomic_bool>(false);
        auto reached = std::make_shared<int>(0);
        auto* receiver = new Receiver;
        receiver->jobs.start(
            [gate, started, sawCancel, reached](const JobContext& job) {
                started->release();
                gate->acquire();
                *sawCancel = job.cancelled();
                job.post([reached] { ++*reached; });
                job.progress(1, 1);
                return std::make_shared<std::vector<char>>(1 << 20); // freed by whoever holds it last
            },
            [receiver, reached](const std::shared_ptr<std::vector<char>>&) {
                ++*reached;
                receiver->delivered << 1; // a use after free, if it ever ran
            });
        started->acquire();
        delete receiver;
        gate->release();
        QThreadPool::globalInstance()->waitForDone();
        QCoreApplication::processEvents();
        QVERIFY(*sawCancel);
        QCOMPARE(*reached, 0);
    }

    void workThatThrowsDeliversNothing()
    {
        Receiver receiver;
        QSignalSpy idle(&receiver.jobs, &JobTracker::idle);
        QTest::ignoreMessage(QtWarningMsg, QRegularExpression(QStringLiteral("job \\d+ failed.*no such rank")));
        receiver.jobs.start([](const JobContext&) -> int { throw std::runtime_error("no such rank"); },
            [&](int value) { receiver.delivered << value; });
        QVERIFY(idle.wait(20000));
        QVERIFY(receiver.delivered.isEmpty());
        QVERIFY(!receiver.jobs.isRunning());
    }

    void waitForAllWaitsForTheWork()
    {
        Receiver receiver;
        std::atomic_int done = 0;
        for (int i = 0; i < 3; ++i) {
            receiver.jobs.start(
                [&done](const JobContext&) {
                    QThread::msleep(20);
                    return ++done;
                },
                [&](int value) { receiver.delivered << value; });
        }
        receiver.jobs.waitForAll();
        QCOMPARE(done.load(), 3);
        QVERIFY(receiver.delivered.isEmpty()); // delivered with the next pass of the event loop
        QVERIFY(waitIdle(receiver.jobs));
        QCOMPARE(receiver.delivered.size(), 3);
    }
};

QTEST_MAIN(TestJobTracker)
#include "tst_jobtracker.moc"
