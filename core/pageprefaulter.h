#pragma once

#include <algorithm>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <mutex>
#include <thread>
#include <utility>

namespace oomlens {

// Backs memory with pages on a second thread, ahead of the thread that is about to write it.
//
// A large buffer filled once (the decoded trace) pays a page fault per page at its first write,
// and where the kernel must also get the page from a hypervisor that fault costs more than
// writing the page: on the 2-core development VM, first-touching 1 GiB took 2.2 s of system time
// and 7.7 s of wall time even on huge pages. The writer asks for the range it will fill next;
// this thread faults it in (MADV_POPULATE_WRITE: pages made present and writable, contents left
// as they are) while the writer keeps decoding on the other core.
//
// Asking ahead of what is written costs the pages asked for: ask for a window, not a capacity.
// A range freed or reused meanwhile is harmless (populating changes no byte; an unmapped range
// only fails). Where the kernel lacks MADV_POPULATE_WRITE (before Linux 5.14) nothing happens.
class PagePrefaulter
{
public:
    PagePrefaulter();
    ~PagePrefaulter();
    PagePrefaulter(const PagePrefaulter&) = delete;
    PagePrefaulter& operator=(const PagePrefaulter&) = delete;

    // Queues [begin, begin + bytes) (rounded inwards to whole pages) and returns at once.
    void populate(const void* begin, size_t bytes);

    // For a vector filled by push_back into a large reservation: keeps the next `window` bytes
    // past its end asked for, a window at a time. Call when size() reaches `ahead.due`.
    struct Ahead
    {
        size_t askedTo = 0; // elements asked for so far
        size_t due = 0; // ask again at this size
    };
    template <class Vector> void keepAhead(Ahead& ahead, const Vector& vector, size_t window = size_t(32) << 20)
    {
        const size_t elements = std::max<size_t>(1, window / sizeof(vector[0]));
        const size_t from = std::max(ahead.askedTo, vector.size());
        const size_t to = std::min(vector.capacity(), from + elements);
        if (to > from)
            populate(vector.data() + from, (to - from) * sizeof(vector[0]));
        ahead.askedTo = to;
        // Half a window before the end of what was asked for: far enough ahead to stay ahead,
        // near enough that a vector ending early leaves little populated and unused.
        ahead.due = to == vector.capacity() ? SIZE_MAX : std::max(vector.size() + 1, to - elements / 2);
    }

private:
    void run();

    std::mutex m_mutex;
    std::condition_variable m_wake;
    std::deque<std::pair<const char*, size_t>> m_ranges;
    bool m_stop = false;
    std::thread m_thread;
};

} // namespace oomlens
