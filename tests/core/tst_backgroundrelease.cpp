#include "core/backgroundrelease.h"

#include <QTest>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>
#include <vector>

using namespace oomlens;

namespace {

// Records which release ran, where, in what order.
struct Log
{
    std::mutex mutex;
    std::vector<int> order;
    std::vector<std::thread::id> threads;

    std::shared_ptr<void> owner(int id, std::chrono::milliseconds takes = {})
    {
        return std::shared_ptr<void>(new int(id), [this, takes](void* value) {
            std::this_thread::sleep_for(takes);
            std::lock_guard lock(mutex);
            order.push_back(*static_cast<int*>(value));
            threads.push_back(std::this_thread::get_id());
            delete static_cast<int*>(value);
        });
    }
};

} // namespace

class TestBackgroundRelease : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void releasesOffTheCallersThreadInOrder()
    {
        Log log;
        releaseInBackground(log.owner(1, std::chrono::milliseconds(30)));
        releaseInBackground(log.owner(2));
        releaseInBackground(log.owner(3));
        waitForBackgroundReleases();
        QCOMPARE(log.order, (std::vector<int> { 1, 2, 3 }));
        for (const std::thread::id thread : log.threads)
            QVERIFY(thread != std::this_thread::get_id());
    }

    void callerDoesNotWaitForASlowRelease()
    {
        // The point of it: a release that takes long (unmapping gigabytes) costs the caller
        // nothing; the wait is only for who asks for it.
        Log log;
        const auto start = std::chrono::steady_clock::now();
        releaseInBackground(log.owner(7, std::chrono::milliseconds(300)));
        const auto handedOver = std::chrono::steady_clock::now() - start;
        QVERIFY(handedOver < std::chrono::milliseconds(250));
        waitForBackgroundReleases();
        QCOMPARE(log.order, std::vector<int> { 7 });
    }

    void dropsOnlyItsOwnReference()
    {
        Log log;
        std::shared_ptr<void> kept = log.owner(4);
        releaseInBackground(kept);
        waitForBackgroundReleases();
        QVERIFY(log.order.empty());
        kept.reset(); // the last reference: released here, on this thread
        QCOMPARE(log.order, std::vector<int> { 4 });
        QCOMPARE(log.threads.front(), std::this_thread::get_id());
    }

    void queuedReleasesAreTakenByACallerThatNeedsTheMemory()
    {
        // The background thread is busy with a slow release, or not scheduled at all: the caller
        // takes what is queued, so that when the call returns at most the one release the thread
        // is in the middle of is still to come.
        Log log;
        releaseInBackground(log.owner(1, std::chrono::milliseconds(300)));
        releaseInBackground(log.owner(2));
        releaseInBackground(log.owner(3));
        finishQueuedReleasesHere();
        {
            std::lock_guard lock(log.mutex);
            QVERIFY2(log.order.size() >= 2, "more than one release still to come");
            QVERIFY(std::find(log.threads.begin(), log.threads.end(), std::this_thread::get_id()) != log.threads.end());
        }
        waitForBackgroundReleases();
        QCOMPARE(log.order.size(), size_t(3));
        finishQueuedReleasesHere(); // nothing queued: returns at once
    }

    void nothingToReleaseIsHarmless()
    {
        releaseInBackground(nullptr);
        waitForBackgroundReleases();
        waitForBackgroundReleases();
    }
};

QTEST_GUILESS_MAIN(TestBackgroundRelease)
#include "tst_backgroundrelease.moc"
