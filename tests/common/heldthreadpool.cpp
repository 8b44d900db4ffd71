#include "common/heldthreadpool.h"

#include <QSemaphore>
#include <QThreadPool>

namespace oomlens::test {

struct HeldThreadPool::Gate
{
    QSemaphore started;
    QSemaphore open;
};

HeldThreadPool::HeldThreadPool()
    : m_gate(std::make_shared<Gate>())
{
    QThreadPool* pool = QThreadPool::globalInstance();
    m_threads = pool->maxThreadCount();
    for (int i = 0; i < m_threads; ++i) {
        pool->start([gate = m_gate] {
            gate->started.release();
            gate->open.acquire();
        });
    }
    // Every thread is held once each holder runs (work left by an earlier test finishes first).
    m_gate->started.acquire(m_threads);
}

HeldThreadPool::~HeldThreadPool()
{
    release();
}

void HeldThreadPool::release()
{
    if (m_released)
        return;
    m_released = true;
    m_gate->open.release(m_threads);
}

} // namespace oomlens::test
