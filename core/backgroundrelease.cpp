#include "core/backgroundrelease.h"

#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#if defined(__linux__)
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>
#endif

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

    void wait()
    {
        std::unique_lock lock(m_mutex);
        m_idle.wait(lock, [this] { return m_queue.empty() && !m_busy; });
    }

private:
    void run()
    {
#if defined(__linux__)
        // Releasing is never urgent: where both cores are busy (the analysis and the thread
        // faulting its pages in, the timeline and the diagnosis) it waits for a free moment.
        setpriority(PRIO_PROCESS, static_cast<id_t>(syscall(SYS_gettid)), 19);
#endif
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

} // namespace oomlens
