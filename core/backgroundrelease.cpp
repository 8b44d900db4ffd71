#include "core/backgroundrelease.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

namespace oomlens {

namespace {

class Releaser
{
public:
    ~Releaser()
    {
        {
            std::lock_guard lock(m_mutex);
            m_stop = true;
        }
        m_wake.notify_all();
        if (m_thread.joinable())
            m_thread.join();
    }

    void release(std::shared_ptr<void> owner)
    {
        {
            std::lock_guard lock(m_mutex);
            m_queue.push_back(std::move(owner));
            if (!m_thread.joinable())
                m_thread = std::thread([this] { run(); });
        }
        m_wake.notify_all();
    }

    void releaseQueued()
    {
        std::unique_lock lock(m_mutex);
        while (!m_queue.empty()) {
            std::shared_ptr<void> owner = std::move(m_queue.front());
            m_queue.pop_front();
            lock.unlock();
            owner.reset();
            lock.lock();
        }
        if (!m_busy)
            m_idle.notify_all();
    }

    void wait()
    {
        std::unique_lock lock(m_mutex);
        m_idle.wait(lock, [this] { return m_queue.empty() && !m_busy; });
    }

private:
    void run()
    {
        // At the process's own priority. At nice 19 the thread got no CPU for seconds on a
        // loaded machine (other processes' builds at nice 0), and the memory it was handed stayed
        // resident through the analysis that followed: the peak grew by the file's size. The
        // munmap it runs also holds the process's mmap lock, which the other threads' page
        // faults wait for; a thread that holds it must not be starved.
        std::unique_lock lock(m_mutex);
        for (;;) {
            m_wake.wait(lock, [this] { return m_stop || !m_queue.empty(); });
            if (m_queue.empty())
                return; // stopping, and nothing is left to release
            std::shared_ptr<void> owner = std::move(m_queue.front());
            m_queue.pop_front();
            m_busy = true;
            lock.unlock();
            owner.reset();
            lock.lock();
            m_busy = false;
            if (m_queue.empty())
                m_idle.notify_all();
        }
    }

    std::mutex m_mutex;
    std::condition_variable m_wake;
    std::condition_variable m_idle;
    std::deque<std::shared_ptr<void>> m_queue;
    bool m_busy = false;
    bool m_stop = false;
    std::thread m_thread;
};

Releaser& releaser()
{
    static Releaser instance;
    return instance;
}

} // namespace

void releaseInBackground(std::shared_ptr<void> owner)
{
    if (owner)
        releaser().release(std::move(owner));
}

void waitForBackgroundReleases()
{
    releaser().wait();
}

void finishQueuedReleasesHere()
{
    releaser().releaseQueued();
}

} // namespace oomlens
