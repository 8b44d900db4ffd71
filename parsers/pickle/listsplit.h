#pragma once

#include "parsers/pickle/nativeunpickler.h"
#include "parsers/pickle/snapshotbuilder.h"

#include <atomic>
#include <cstdint>
#include <memory>
#include <string_view>
#include <thread>
#include <vector>

namespace oomlens::pickle {

// The second thread of a split trace list: it picks the split point, publishes it, then decodes
// the list's items from there to the list's end into a fork of the first decoder's builder. The
// first decoder stops at the split point and takes the items over (NativeUnpickler::joinSplit),
// or reads on alone when anything failed.
class ListSplit
{
public:
    struct Start
    {
        std::string_view data;
        uint64_t target = 0; // split at the first batch of items from here
        std::vector<uint64_t> memo; // the first decoder's memo, slots a fork cannot read unset
        std::vector<Value> memoWide;
        std::unique_ptr<SnapshotBuilder> fork;
    };
    explicit ListSplit(Start start);
    ~ListSplit();
    ListSplit(const ListSplit&) = delete;
    ListSplit& operator=(const ListSplit&) = delete;

    static constexpr uint64_t pending = 0;
    static constexpr uint64_t noSplit = UINT64_MAX;
    // The split point once found (pending before, noSplit when there is none).
    uint64_t boundary() const { return m_boundary.load(std::memory_order_acquire); }
    void waitForBoundary() const { m_boundary.wait(pending, std::memory_order_acquire); }
    // Tells the thread to stop early; finish() still joins it.
    void abandon()
    {
        m_abandon.store(true, std::memory_order_relaxed);
        settleFirstHalf(firstHalfAbandoned);
    }

    // What the second decoder needs of the first to read a key or a string stored after the
    // split began (by either half): the first decoder's memo size at the split point, which
    // tells the halves' slots apart, and its memo and strings. Published by the first decoder
    // when it reaches the split point, where it then waits in finish() (so these stay as they
    // are until the second decoder is done).
    struct FirstHalf
    {
        uint64_t memoSize = 0;
        const std::vector<uint64_t>* memo = nullptr;
        const SnapshotBuilder* builder = nullptr;
    };
    void publishFirstHalf(const FirstHalf& first)
    {
        m_firstHalf = first;
        settleFirstHalf(firstHalfPublished);
    }
    // Blocks until the first decoder reaches the split point; null when the split was abandoned.
    const FirstHalf* waitForFirstHalf() const
    {
        m_firstHalfState.wait(firstHalfRunning, std::memory_order_acquire);
        return m_firstHalfState.load(std::memory_order_acquire) == firstHalfPublished ? &m_firstHalf : nullptr;
    }
    // Whether the thread has given up already (before the first decoder got to the split point).
    bool failed() const { return m_failed.load(std::memory_order_acquire); }
    // Waits for the thread; true when the second decoder read every item up to the list's end.
    bool finish();

    SnapshotBuilder& fork() { return *m_fork; }
    NativeUnpickler& decoder() { return *m_decoder; }

private:
    void run(Start start);

    static constexpr int firstHalfRunning = 0;
    static constexpr int firstHalfPublished = 1;
    static constexpr int firstHalfAbandoned = 2;
    // The first of publishFirstHalf() and abandon() decides, and wakes a waiting second decoder.
    void settleFirstHalf(int state)
    {
        int running = firstHalfRunning;
        if (m_firstHalfState.compare_exchange_strong(running, state, std::memory_order_acq_rel))
            m_firstHalfState.notify_all();
    }
    std::atomic<int> m_firstHalfState { firstHalfRunning };
    FirstHalf m_firstHalf;
    std::atomic<uint64_t> m_boundary { pending };
    std::atomic_bool m_abandon { false };
    std::atomic_bool m_failed { false };
    std::unique_ptr<SnapshotBuilder> m_fork;
    std::unique_ptr<NativeUnpickler> m_decoder;
    bool m_decoded = false;
    std::thread m_thread;
};

} // namespace oomlens::pickle
