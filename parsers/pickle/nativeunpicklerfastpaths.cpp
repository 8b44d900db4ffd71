#include "parsers/pickle/nativeunpickler.h"

#include "parsers/pickle/opcodes.h"
#include "parsers/pickle/pickleliterals.h"
#include "parsers/pickle/snapshotbuilder.h"
#include "parsers/pickle/unpicklerdetail.h"

#include <algorithm>
#include <cstring>

// NativeUnpickler's fast paths, called from its opcode loop (nativeunpickler.cpp): a trace entry's
// frame list is a run of BINGETs of memoized frame dicts, and most dict bodies are keys and small
// integers; both are read here without going through the general opcode switch. Not a class of
// their own: they are the loop's hot path, reading and writing its stack, memo and position
// directly. Frame lists seen before are FrameListCache's.

namespace oomlens::pickle {

using namespace unpicklerdetail;

namespace {

// End of the run of BINGET/LONG_BINGET opcodes that starts at pos (pos itself when there is none).
uint64_t getRunEnd(const unsigned char* base, uint64_t size, uint64_t pos)
{
    while (pos + 5 <= size) {
        const uint8_t code = base[pos];
        const bool wide = code == op::LongBinGet;
        if (!wide && code != op::BinGet)
            return pos;
        pos += wide ? 5 : 2;
    }
    while (pos + 1 < size && base[pos] == op::BinGet)
        pos += 2;
    return pos;
}

} // namespace

bool NativeUnpickler::appendFrameBatch(uint64_t pos)
{
    // A frame list is MARK, then BINGET/LONG_BINGET of memoized frame dicts, then APPENDS: by far
    // the most common sequence in a snapshot. Read it in one sweep straight into the list. Anything
    // else (or a GET of something that is not a frame) leaves it to the general path, having
    // consumed nothing.
    const uint32_t handle = m_stack.back().ref;
    std::vector<FrameId>* sink = m_builder.frameSink(handle);
    if (!sink)
        return false;
    const uint64_t from = pos;
    const bool fresh = sink->empty() && m_frameLists.sound();
    if (fresh && reuseFrameList(handle, pos))
        return true;
    const size_t before = sink->size();
    pos = collectFrames(*sink, pos);
    if (pos >= m_size || m_base[pos] != op::Appends || sink->size() == before) {
        sink->resize(before);
        return false;
    }
    m_pos = pos + 1;
    if (fresh) {
        const StackId id = m_builder.stackSoFar(handle);
        m_builder.presetStack(handle, id);
        m_frameLists.remember(m_base, m_size, from, pos, id);
    }
    return true;
}

bool NativeUnpickler::reuseFrameList(uint32_t handle, uint64_t pos)
{
    // A list whose bytes were seen before is the same stack: first the list last seen with the same
    // first 16 bytes, then, once the run of GETs is scanned, any list of the same bytes.
    const unsigned char* const base = m_base;
    const uint64_t size = m_size;
    if (pos + 16 <= size) {
        const FrameListCache::Entry& guess = m_frameLists.recent(base + pos);
        if (guess.stack != 0 && pos + guess.length < size && base[pos + guess.length] == op::Appends
            && std::memcmp(base + guess.offset, base + pos, guess.length) == 0) {
            m_builder.presetStack(handle, StackId(guess.stack - 1));
            m_pos = pos + guess.length + 1;
            return true;
        }
    }
    const uint64_t end = getRunEnd(base, size, pos);
    if (end > pos && end < size && base[end] == op::Appends) {
        if (const auto known = m_frameLists.find(base, size, pos, end)) {
            m_builder.presetStack(handle, *known);
            m_pos = end + 1;
            return true;
        }
    }
    return false;
}

uint64_t NativeUnpickler::collectFrames(std::vector<FrameId>& sink, uint64_t pos)
{
    // The frames of the GETs from pos on go to the sink, up to the first opcode that is not a GET;
    // returns where that is, or the input's end when a GET fetched something other than a frame.
    const unsigned char* const base = m_base;
    const uint64_t size = m_size;
    const uint64_t* const memo = m_memo.data();
    const uint64_t memoSize = m_memo.size();
    constexpr uint64_t frameTag = memoTag(Kind::Frame);
    // Collected in a buffer first: a push_back per frame re-checks the list's capacity and keeps
    // its end pointer in memory. The buffer is a member because a local FrameId array would be
    // filled with invalid ids on every call.
    constexpr size_t bufferSize = 256;
    if (m_frameBuffer.size() < bufferSize)
        m_frameBuffer.resize(bufferSize);
    FrameId* const buffer = m_frameBuffer.data();
    size_t n = 0;
    bool valid = true;
    const auto flush = [&]() {
        // An empty flush (a list of no frames, or a batch that ended exactly at the buffer's size)
        // must not reach memcpy: an empty list's data() is null, and memcpy(nullptr, _, 0) is
        // undefined behaviour even though nothing is copied.
        if (n == 0)
            return;
        // memcpy, not insert: the compiler cannot tell the buffer from the list and copies by element.
        const size_t at = sink.size();
        sink.resize(at + n);
        std::memcpy(sink.data() + at, buffer, n * sizeof(FrameId));
        n = 0;
    };
    const auto keep = [&](uint64_t index) {
        if (index >= memoSize || memoTagOf(memo[index]) != frameTag) [[unlikely]] {
            valid = false;
            return;
        }
        buffer[n++] = FrameId(static_cast<uint32_t>(memo[index]));
        if (n == bufferSize) [[unlikely]]
            flush();
    };
    // While five bytes remain either GET form can be read without a bounds check per form;
    // choosing the width arithmetically spares a branch that BINGET/LONG_BINGET mixes mispredict.
    while (valid && pos + 5 <= size) {
        const uint8_t code = base[pos];
        const bool wide = code == op::LongBinGet;
        if (!wide && code != op::BinGet)
            break;
        const uint64_t index = wide ? little32(base + pos + 1) : base[pos + 1];
        pos += wide ? 5 : 2;
        keep(index);
    }
    while (valid && pos + 1 < size) {
        if (base[pos] == op::BinGet) {
            keep(base[pos + 1]);
            pos += 2;
        } else if (base[pos] == op::LongBinGet && pos + 5 <= size) {
            keep(little32(base + pos + 1));
            pos += 5;
        } else {
            break;
        }
    }
    flush();
    return valid ? pos : size;
}

uint64_t NativeUnpickler::dictBody(uint64_t pos)
{
    // A record's keys and values are memoized strings and small integers: read them in a loop of
    // plain branches, which predict the record's regular shape better than the opcode switch's
    // one indirect jump. Anything else, or the last few bytes, goes back to the switch.
    const unsigned char* const base = m_base;
    // Bounded, so that the opcode loop's cancel and progress checks still come round.
    const uint64_t size = std::min(m_size, pos + checkEvery);
    while (pos + 10 <= size) {
        m_opStart = pos;
        const uint8_t code = base[pos];
        if (code == op::BinGet) {
            memoGet(base[pos + 1]);
            pos += 2;
        } else if (code == op::LongBinGet) {
            memoGet(little32(base + pos + 1));
            pos += 5;
        } else if (code == op::Long1 && base[pos + 1] <= 8) {
            push(literals::longFromBytes(base + pos + 2, base[pos + 1]));
            pos += 2 + base[pos + 1];
        } else if (code == op::BinInt1) {
            push(Value::integer(base[pos + 1]));
            pos += 2;
        } else if (code == op::BinInt) {
            push(Value::integer(static_cast<int32_t>(little32(base + pos + 1))));
            pos += 5;
        } else if (code == op::BinInt2) {
            push(Value::integer(static_cast<int64_t>(little(base + pos + 1, 2))));
            pos += 3;
        } else {
            break;
        }
    }
    return pos;
}

} // namespace oomlens::pickle
