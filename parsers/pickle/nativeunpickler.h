#pragma once

#include "core/ids.h"
#include "core/pageprefaulter.h"
#include "parsers/pickle/framelistcache.h"
#include "parsers/pickle/memoslot.h"
#include "parsers/pickle/picklevalue.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace oomlens::pickle {

class SnapshotBuilder;
class ListSplit;

// The decoder's operand stack: a plain array with the few operations the opcodes need, so a
// push in the hot loop is a compare and a store.
class ValueStack
{
public:
    size_t size() const { return m_size; }
    bool empty() const { return m_size == 0; }
    Value& operator[](size_t i) { return m_data[i]; }
    Value& back() { return m_data[m_size - 1]; }
    Value* data() { return m_data.data(); }
    void pop_back() { --m_size; }
    void resize(size_t smaller) { m_size = smaller; }
    bool full() const { return m_size == m_data.size(); }
    void push_back(const Value& value) { m_data[m_size++] = value; }
    void grow(size_t capacity) { m_data.resize(capacity); }
    size_t capacity() const { return m_data.size(); }

private:
    std::vector<Value> m_data;
    size_t m_size = 0;
};

// Streaming decoder for the data-only subset of the pickle format (protocols 0-5). It keeps a
// small value stack and a compact memo and feeds every value straight into a SnapshotBuilder;
// nothing resembling a Python object tree is built. Opcodes that import or call are refused.
class NativeUnpickler
{
public:
    explicit NativeUnpickler(SnapshotBuilder& builder);
    ~NativeUnpickler();

    std::function<void(uint64_t done, uint64_t total)> progress;
    const std::atomic_bool* cancel = nullptr;

    // Decodes one pickle and returns its top-level value. Throws DecodeError (with the byte
    // offset in the message) on bad, hostile or unsupported input.
    Value decode(std::string_view data);

    int protocol() const { return m_protocol; }
    // Whether the last decode() split a list between two threads (the split can fail over to
    // one thread at any point; the result is the same either way).
    bool wasSplit() const { return m_wasSplit; }

    // From this input size on, a long trace list is decoded by two threads: a second decoder
    // reads its later items while this one reads the earlier ones (nativeunpicklersplit.cpp).
    // The result is the same, ids included; SIZE_MAX decodes on one thread only.
    uint64_t splitFrom = defaultSplitFrom;
    // The share of the input read before the split begins: a training run meets its strings and
    // frames in its first steps, and an item of the second half referring to one stored after
    // the split began fails the split (it is tried again later, a few times).
    double splitStart = 0.02;
    // Below ~512 MB (2M trace entries) the second thread's own buffers would be a noticeable part
    // of the memory budget (file + 100 bytes per entry), as for the page prefaulting.
    static constexpr uint64_t defaultSplitFrom = uint64_t(512) << 20;

    static constexpr size_t maxStack = size_t(1) << 24;
    static constexpr size_t maxMarks = 10000;

private:
    friend class ListSplit;
    void run();
    // The split (nativeunpicklersplit.cpp): considerSplit() runs at the opcode loop's checks and
    // returns where the loop must stop (the split point once known, else the input's end);
    // joinSplit() takes the second decoder's items over there and returns where to go on.
    uint64_t considerSplit(uint64_t pos);
    uint64_t joinSplit(uint64_t pos);
    bool startSplit(uint64_t pos);
    // The second decoder: reads the items of an open list from `from` until the list ends, with
    // the memo as the first decoder had it (slots it could not share unset) up to memoSize.
    void decodeItems(std::string_view data, uint64_t from, std::vector<uint64_t> memo, std::vector<Value> wide);
    bool atListEnd(uint64_t pos) const;
    std::unique_ptr<ListSplit> m_split;
    bool m_watchSplit = false;
    int m_splitTries = 0;
    bool m_items = false; // this is a second decoder
    // A second decoder's memo: m_memo holds the first decoder's slots as they were when the split
    // began (m_memoFloor of them); what it stores itself goes to m_localMemo, numbered from 0,
    // because the number of slots stored before the split point is not known yet.
    uint64_t m_memoFloor = 0;
    std::vector<uint64_t> m_localMemo;
    void localMemoPut();
    // A second decoder's key or string value stored after the split began, once the first
    // decoder's memo size at the split point is known (`memoSize`, its memo and builder).
    Value resolveAcrossSplit(
        const Value& deferred, uint64_t memoSize, const std::vector<uint64_t>& memo, const SnapshotBuilder& first);
    bool m_wasSplit = false;
    Value take(const Value& value)
    {
        if (value.kind != Kind::Open) [[likely]]
            return value;
        return finalize(value.ref);
    }
    void push(const Value& value)
    {
        if (m_stack.full()) [[unlikely]]
            growStack();
        m_stack.push_back(value);
    }
    // Most GETs fetch an interned string, frame or stack: those need no bookkeeping.
    void memoGet(uint64_t index)
    {
        if (index < m_memo.size()) [[likely]] {
            const uint64_t tag = memoTagOf(m_memo[index]);
            if (tag == memoTag(Kind::Str) || tag == memoTag(Kind::Frame) || tag == memoTag(Kind::Stack)) {
                push(Value::of(static_cast<Kind>(tag - 1), static_cast<uint32_t>(m_memo[index])));
                return;
            }
        }
        memoGetSlow(index);
    }
    Value finalize(uint32_t handle);
    void growStack();
    static DecodeError errorAt(const std::string& message, uint64_t offset);
    void appendItems(uint32_t handle, size_t from);
    uint64_t checkIn(uint64_t pos, uint64_t limit);
    // The opcode loop's steps (nativeunpickler.cpp), named after what they do to the stack.
    bool topIsOpen(Kind kind);
    void pushOpen(Kind kind, uint32_t handle);
    void pushMark();
    static uint64_t signedLength(const unsigned char* p, uint8_t code, uint64_t start);
    void takeRoot();
    void popTop();
    void dropToMark();
    void duplicateTop();
    size_t topValues(size_t n);
    void pushClosed(Kind kind, size_t from);
    void pushListFromMark();
    void pushDictFromMark();
    void appendTop();
    void appendToMark(Kind kind);
    bool secondDecoderDone(uint64_t pos) const;
    void setTopItem();
    void setItemsToMark();
    bool appendFrameBatch(uint64_t pos);
    bool reuseFrameList(uint32_t handle, uint64_t pos);
    uint64_t collectFrames(std::vector<FrameId>& sink, uint64_t pos);
    uint64_t dictBody(uint64_t pos);
    size_t popMark();
    uint32_t target(size_t below, Kind kind);
    void memoPut(uint64_t index);
    void memoGetSlow(uint64_t index);
    void forget(uint64_t index);

    uint64_t packMemo(const Value& value);
    Value unpackMemo(uint64_t packed) const;

    SnapshotBuilder& m_builder;
    const unsigned char* m_base = nullptr;
    uint64_t m_size = 0;
    uint64_t m_pos = 0;
    uint64_t m_opStart = 0;
    int m_protocol = 0;
    Value m_root;

    ValueStack m_stack;
    std::vector<size_t> m_marks;
    std::vector<uint64_t> m_memo; // packed: kind + 1 in the top byte, 0 = unset
    // The memo's pages are faulted in on another thread ahead of its end (core/pageprefaulter.h),
    // for big inputs only: a 10M-event trace memoizes 32M values.
    void prefaultMemo();
    std::unique_ptr<PagePrefaulter> m_prefaulter;
    PagePrefaulter::Ahead m_memoAhead;
    std::vector<Value> m_memoWide; // memo values whose payload needs 64 bits
    std::vector<uint32_t> m_handleMemo; // builder handle -> memo index of that open container
    std::vector<size_t> m_openPos; // builder handle -> stack position of that open container
    std::string m_scratch;
    std::vector<FrameId> m_frameBuffer; // appendFrameBatch's staging

    FrameListCache m_frameLists;
};

} // namespace oomlens::pickle
