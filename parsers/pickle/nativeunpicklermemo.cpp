#include "parsers/pickle/nativeunpickler.h"

#include "parsers/pickle/opcodes.h"
#include "parsers/pickle/snapshotbuilder.h"

#include <limits>

// NativeUnpickler's memo. Not a class of its own: a slot's life is bound to the decoder's stack
// and open containers (a container memoized while open is filled in when it closes, finalize();
// one fetched while still open is closed then, memoGetSlow()), a rebound slot invalidates the
// frame-list cache, and a second decoder numbers its own slots (localMemoPut()). The common GET
// is inline in the header, reading m_memo directly, as the fast paths do.

namespace oomlens::pickle {

namespace {

constexpr uint32_t noMemo = std::numeric_limits<uint32_t>::max();

} // namespace

DecodeError NativeUnpickler::errorAt(const std::string& message, uint64_t offset)
{
    return DecodeError(ErrorKind::Format, message + " at byte " + std::to_string(offset));
}

Value NativeUnpickler::finalize(uint32_t handle)
{
    const Value closed = m_builder.close(handle);
    if (handle < m_handleMemo.size() && m_handleMemo[handle] != noMemo) {
        (m_items ? m_localMemo : m_memo)[m_handleMemo[handle]] = packMemo(closed);
        m_handleMemo[handle] = noMemo;
    }
    return closed;
}

void NativeUnpickler::prefaultMemo()
{
    // Big inputs only, as SnapshotBuilder::prefaultEvents (the reservation is half the input).
    if (m_memo.capacity() * sizeof(uint64_t) < (size_t(512) << 20)) {
        m_memoAhead.due = SIZE_MAX;
        return;
    }
    if (!m_prefaulter)
        m_prefaulter = std::make_unique<PagePrefaulter>();
    m_prefaulter->keepAhead(m_memoAhead, m_memo);
}

void NativeUnpickler::memoPut(uint64_t index)
{
    if (m_memo.size() >= m_memoAhead.due) [[unlikely]]
        prefaultMemo();
    if (m_stack.empty())
        throw errorAt("not a valid pickle: memo store with an empty stack", m_opStart);
    if (m_items) [[unlikely]] {
        localMemoPut();
        return;
    }
    if (index < m_memo.size() && m_memo[index] != 0 && m_frameLists.sound()) {
        // A rebound slot changes what the bytes of a known frame list mean.
        m_frameLists.invalidate();
    }
    if (index == m_memo.size()) {
        const Kind kind = m_stack.back().kind;
        if (kind == Kind::Str || kind == Kind::Frame || kind == Kind::Stack) {
            m_memo.push_back(memoSlot(memoTag(kind), m_stack.back().ref));
            return;
        }
        m_memo.push_back(0);
    } else if (index > m_memo.size()) {
        if (index > m_memo.size() + memoSlack)
            throw errorAt("memo index " + std::to_string(index) + " is out of range", m_opStart);
        m_memo.resize(index + 1, 0);
    }
    const Value& top = m_stack.back();
    if (top.kind == Kind::Open) {
        if (top.ref >= m_handleMemo.size())
            m_handleMemo.resize(top.ref + 1, noMemo);
        if (m_handleMemo[top.ref] != noMemo)
            throw DecodeError(
                ErrorKind::Unsupported, "a container stored twice in the memo at byte " + std::to_string(m_opStart));
        forget(index);
        if (top.ref >= m_openPos.size())
            m_openPos.resize(top.ref + 1);
        m_openPos[top.ref] = m_stack.size() - 1;
        m_handleMemo[top.ref] = static_cast<uint32_t>(index);
        m_memo[index] = memoSlot(memoTag(Kind::Open), top.ref);
        return;
    }
    forget(index);
    m_memo[index] = packMemo(top);
}

void NativeUnpickler::localMemoPut()
{
    // Numbered slots (PUT, protocols 0-3) would tell the split point's memo size, but PyTorch's
    // pickles (protocol 4 and later) number by MEMOIZE only, and only those are split.
    if (m_base[m_opStart] != op::Memoize)
        throw DecodeError(ErrorKind::Unsupported, "a numbered memo slot in a split list");
    if (m_stack.empty())
        throw errorAt("not a valid pickle: memo store with an empty stack", m_opStart);
    const Value& top = m_stack.back();
    if (top.kind != Kind::Open) {
        m_localMemo.push_back(packMemo(top));
        return;
    }
    if (top.ref >= m_handleMemo.size())
        m_handleMemo.resize(top.ref + 1, noMemo);
    if (m_handleMemo[top.ref] != noMemo)
        throw DecodeError(ErrorKind::Unsupported, "a container stored twice in the memo");
    if (top.ref >= m_openPos.size())
        m_openPos.resize(top.ref + 1);
    m_openPos[top.ref] = m_stack.size() - 1;
    m_handleMemo[top.ref] = static_cast<uint32_t>(m_localMemo.size());
    m_localMemo.push_back(memoSlot(memoTag(Kind::Open), top.ref));
}

void NativeUnpickler::forget(uint64_t index)
{
    // An unfinished container's slot being overwritten must not be refilled when it closes.
    const uint64_t packed = m_memo[index];
    if (memoTagOf(packed) == memoTag(Kind::Open))
        m_handleMemo[packed & 0xffffffffu] = noMemo;
}

void NativeUnpickler::memoGetSlow(uint64_t index)
{
    if (m_items && index >= m_memoFloor) {
        // Stored after the split began, by either half: resolved when the halves join.
        if (index > std::numeric_limits<uint32_t>::max())
            throw errorAt("memo key " + std::to_string(index) + " is out of range", m_opStart);
        Value deferred = Value::of(Kind::Deferred, static_cast<uint32_t>(index));
        deferred.i = static_cast<int64_t>(m_localMemo.size());
        push(deferred);
        return;
    }
    if (index >= m_memo.size() || m_memo[index] == 0)
        throw errorAt("not a valid pickle: memo key " + std::to_string(index) + " was never stored", m_opStart);
    Value value = unpackMemo(m_memo[index]);
    if (value.kind == Kind::Open) {
        // The pickler writes a container completely before referring to it again, so one that
        // is still on the stack is finished: close it now. (Only a container that contains itself
        // is referenced earlier; the APPEND/SETITEMS that follow then find no open target.)
        const size_t at = value.ref < m_openPos.size() ? m_openPos[value.ref] : m_stack.size();
        if (at >= m_stack.size() || m_stack[at].kind != Kind::Open || m_stack[at].ref != value.ref)
            throw DecodeError(
                ErrorKind::Unsupported, "a container that contains itself at byte " + std::to_string(m_opStart));
        value = finalize(value.ref);
        m_stack[at] = value;
    }
    push(m_builder.again(value));
}

uint64_t NativeUnpickler::packMemo(const Value& value)
{
    switch (value.kind) {
    case Kind::None:
    case Kind::Int:
    case Kind::Bool:
    case Kind::BigInt:
    case Kind::Float:
    case Kind::Pair:
        m_memoWide.push_back(value);
        return memoSlot(memoWideTag, m_memoWide.size() - 1);
    default:
        return memoSlot(memoTag(value.kind), value.ref);
    }
}

Value NativeUnpickler::unpackMemo(uint64_t packed) const
{
    const uint64_t tag = memoTagOf(packed);
    const uint64_t payload = packed & memoPayloadMask;
    if (tag == memoWideTag)
        return m_memoWide[payload];
    return Value::of(static_cast<Kind>(tag - 1), static_cast<uint32_t>(payload));
}

} // namespace oomlens::pickle
