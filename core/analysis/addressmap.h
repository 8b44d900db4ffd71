#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace oomlens {

// Open allocations by address while the trace is replayed: a flat open-addressing table
// (linear probing, backward-shift deletion), since a node-based map costs one heap allocation
// per alloc event and dominates the replay of a million-event trace.
class AddressMap
{
public:
    static constexpr int32_t none = -1;

    explicit AddressMap(size_t expected = 1024) { rehash(capacityFor(expected)); }

    int32_t find(uint64_t address) const
    {
        for (size_t i = slot(address);; i = (i + 1) & m_mask) {
            const Entry& e = m_entries[i];
            if (e.value == none)
                return none;
            if (e.address == address)
                return e.value;
        }
    }

    // Sets the value for address; returns the previous value or none.
    int32_t insert(uint64_t address, int32_t value)
    {
        if ((m_size + 1) * 4 > m_entries.size() * 3)
            rehash(m_entries.size() * 2);
        for (size_t i = slot(address);; i = (i + 1) & m_mask) {
            Entry& e = m_entries[i];
            if (e.value == none) {
                e = { address, value };
                ++m_size;
                return none;
            }
            if (e.address == address) {
                const int32_t previous = e.value;
                e.value = value;
                return previous;
            }
        }
    }

    // Removes address; returns its value or none.
    int32_t erase(uint64_t address)
    {
        size_t i = slot(address);
        for (;; i = (i + 1) & m_mask) {
            if (m_entries[i].value == none)
                return none;
            if (m_entries[i].address == address)
                break;
        }
        const int32_t value = m_entries[i].value;
        // Shift later members of the probe run back into the hole so lookups never stop early.
        for (size_t j = (i + 1) & m_mask;; j = (j + 1) & m_mask) {
            if (m_entries[j].value == none)
                break;
            const size_t home = slot(m_entries[j].address);
            const bool between = i <= j ? (i < home && home <= j) : (i < home || home <= j);
            if (between)
                continue;
            m_entries[i] = m_entries[j];
            i = j;
        }
        m_entries[i].value = none;
        --m_size;
        return value;
    }

    size_t size() const { return m_size; }

    template <typename F> void forEach(F&& f) const
    {
        for (const Entry& e : m_entries) {
            if (e.value != none)
                f(e.address, e.value);
        }
    }

private:
    struct Entry
    {
        uint64_t address = 0;
        int32_t value = none;
    };

    static size_t capacityFor(size_t expected)
    {
        size_t capacity = 16;
        while (capacity * 3 < expected * 4)
            capacity *= 2;
        return capacity;
    }

    size_t slot(uint64_t address) const
    {
        // Block addresses share their low bits (512-byte rounding) and high bits; mix them all.
        uint64_t h = address * 0x9E3779B97F4A7C15ull;
        return static_cast<size_t>(h >> 32 ^ h) & m_mask;
    }

    void rehash(size_t capacity)
    {
        std::vector<Entry> old;
        old.swap(m_entries);
        m_entries.assign(capacity, Entry {});
        m_mask = capacity - 1;
        m_size = 0;
        for (const Entry& e : old) {
            if (e.value != none)
                insert(e.address, e.value);
        }
    }

    std::vector<Entry> m_entries;
    size_t m_mask = 0;
    size_t m_size = 0;
};

} // namespace oomlens
