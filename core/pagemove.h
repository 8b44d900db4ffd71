#pragma once

#include <cstddef>
#include <type_traits>
#include <vector>

namespace oomlens {

// Moves `bytes` from `from` to `to` by handing whole pages over (mremap) instead of copying them,
// where the two ranges are far enough apart and the kernel allows it; copies the rest. `from` must
// be followed by `spare` bytes of its own allocation (the data may be shifted into them to line
// its pages up with `to`'s), and both must be private anonymous memory (large heap blocks). What
// `from` held becomes zero pages.
//
// Why: on the virtual machines this runs on, first-touching memory costs more than writing it
// (core/pageprefaulter.h), so copying a decoded half of a trace into fresh memory cost more than
// the half took to decode; moving its pages costs neither the faults nor twice the memory.
void movePages(char* to, char* from, size_t bytes, size_t spare);

// Appends `from`'s elements to `to`, within `to`'s capacity, by movePages; copies when `to` has
// no room. `from` is left empty.
template <class T> void appendMovingPages(std::vector<T>& to, std::vector<T>& from)
{
    static_assert(std::is_trivially_copyable_v<T>);
    const size_t count = from.size();
    if (count == 0)
        return;
    if (to.capacity() - to.size() < count) {
        to.insert(to.end(), from.begin(), from.end());
    } else {
        T* const end = to.data() + to.size();
        movePages(reinterpret_cast<char*>(end), reinterpret_cast<char*>(from.data()), count * sizeof(T),
            (from.capacity() - count) * sizeof(T));
        // The elements now lie in `to`'s storage past its end: inserting them from there copies
        // each onto itself (memmove of present pages), and only makes `to` count them.
        to.insert(to.end(), end, end + count);
    }
    from.clear();
}

} // namespace oomlens
