#pragma once

#include "core/hash.h"
#include "core/ids.h"

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <optional>
#include <vector>

namespace oomlens::pickle {

// Frame lists by their encoded bytes (the GETs between MARK and APPENDS): a repeated list is
// recognised with one hash and one memcmp against its first occurrence in the input, and the
// list last seen with given first 16 bytes is tried before the run is even scanned. Only sound
// while no memo slot is bound twice (a rebound slot changes what the bytes mean): NativeUnpickler
// invalidates it then. Inline throughout: the decoder's fast path asks it for nearly every entry.
class FrameListCache
{
public:
    struct Entry
    {
        uint64_t hash = 0;
        uint64_t offset = 0; // where the bytes first occurred
        uint32_t length = 0;
        uint32_t stack = 0; // StackId + 1, 0 = empty slot
    };

    // For a new input: empty and sound.
    void reset()
    {
        m_lists.clear();
        m_recent.assign(recentSlots, Entry {});
        m_count = 0;
        m_sound = true;
    }
    void invalidate()
    {
        m_sound = false;
        m_lists.clear();
        m_recent.clear();
        m_count = 0;
    }
    bool sound() const { return m_sound; }

    // The list last seen starting with the 16 bytes at `p` (stack 0 when none).
    const Entry& recent(const unsigned char* p) const { return m_recent[headHash(p)]; }

    // The stack of the list whose bytes are [from, end) of `base` (`size` bytes), if seen before.
    std::optional<StackId> find(const unsigned char* base, uint64_t size, uint64_t from, uint64_t end)
    {
        if (m_lists.empty())
            return std::nullopt;
        const auto length = end - from;
        const uint64_t hash = hashBytes(base + from, length);
        const size_t mask = m_lists.size() - 1;
        for (size_t i = hash & mask; m_lists[i].stack != 0; i = (i + 1) & mask) {
            const Entry& e = m_lists[i];
            if (e.hash == hash && e.length == length && std::memcmp(base + e.offset, base + from, length) == 0) {
                if (from + 16 <= size)
                    m_recent[headHash(base + from)] = e;
                return StackId(e.stack - 1);
            }
        }
        return std::nullopt;
    }

    // Remembers the list whose bytes are [from, end) of `base` as `stack`.
    void remember(const unsigned char* base, uint64_t size, uint64_t from, uint64_t end, StackId stack)
    {
        if ((m_count + 1) * 2 > m_lists.size()) {
            std::vector<Entry> grown(std::max<size_t>(1024, m_lists.size() * 2));
            const size_t mask = grown.size() - 1;
            for (const Entry& e : m_lists) {
                if (e.stack == 0)
                    continue;
                size_t j = e.hash & mask;
                while (grown[j].stack != 0)
                    j = (j + 1) & mask;
                grown[j] = e;
            }
            m_lists.swap(grown);
        }
        const auto length = end - from;
        const uint64_t hash = hashBytes(base + from, length);
        const size_t mask = m_lists.size() - 1;
        size_t i = hash & mask;
        while (m_lists[i].stack != 0)
            i = (i + 1) & mask;
        m_lists[i] = Entry { hash, from, static_cast<uint32_t>(length), stack.value + 1 };
        if (from + 16 <= size)
            m_recent[headHash(base + from)] = m_lists[i];
        ++m_count;
    }

private:
    static constexpr size_t recentSlots = 4096; // lists remembered by their first 16 bytes

    static size_t headHash(const unsigned char* p)
    {
        uint64_t x, y;
        std::memcpy(&x, p, 8);
        std::memcpy(&y, p + 8, 8);
        const uint64_t h = (x * 0x9e3779b97f4a7c15ull) ^ (y * 0xc2b2ae3d27d4eb4full);
        return static_cast<size_t>(h >> 52) & (recentSlots - 1);
    }

    std::vector<Entry> m_lists;
    std::vector<Entry> m_recent;
    size_t m_count = 0;
    bool m_sound = true;
};

} // namespace oomlens::pickle
