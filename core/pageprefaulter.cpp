#include "core/pageprefaulter.h"

#include <cstdint>

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace oomlens {

namespace {

#if defined(__linux__)
#ifndef MADV_POPULATE_WRITE
#define MADV_POPULATE_WRITE 23 // Linux 5.14; older headers lack the name
#endif

void populateNow(const char* begin, size_t bytes)
{
    static const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    const auto start = (reinterpret_cast<std::uintptr_t>(begin) + page - 1) & ~(page - 1);
    const auto end = (reinterpret_cast<std::uintptr_t>(begin) + bytes) & ~(page - 1);
    if (end > start)
        madvise(reinterpret_cast<void*>(start), end - start, MADV_POPULATE_WRITE); // advice: failure is harmless
}
#else
void populateNow(const char*, size_t) { }
#endif

} // namespace

PagePrefaulter::PagePrefaulter()
    : m_thread([this] { run(); })
{ }

PagePrefaulter::~PagePrefaulter()
{
    {
        std::lock_guard lock(m_mutex);
        m_stop = true;
        m_ranges.clear();
    }
    m_wake.notify_one();
    m_thread.join();
}

void PagePrefaulter::populate(const void* begin, size_t bytes)
{
    if (!begin || bytes == 0)
        return;
    {
        std::lock_guard lock(m_mutex);
        m_ranges.emplace_back(static_cast<const char*>(begin), bytes);
    }
    m_wake.notify_one();
}

void PagePrefaulter::run()
{
    std::unique_lock lock(m_mutex);
    for (;;) {
        m_wake.wait(lock, [this] { return m_stop || !m_ranges.empty(); });
        if (m_stop)
            return;
        const auto [begin, bytes] = m_ranges.front();
        m_ranges.pop_front();
        lock.unlock();
        populateNow(begin, bytes);
        lock.lock();
    }
}

} // namespace oomlens
