#include "parsers/pickle/nativeunpickler.h"

#include "parsers/pickle/opcodes.h"
#include "parsers/pickle/snapshotbuilder.h"

#include <bit>
#include <charconv>
#include <cstring>
#include <limits>

// The memo and the literal opcodes (LONG1, INT, UNICODE...) of NativeUnpickler; the opcode loop
// is in nativeunpickler.cpp.

namespace oomlens::pickle {

namespace {

constexpr uint32_t noMemo = std::numeric_limits<uint32_t>::max();

void appendUtf8(std::string& out, uint32_t cp)
{
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xc0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xe0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (cp & 0x3f));
    } else {
        out += static_cast<char>(0xf0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3f));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3f));
        out += static_cast<char>(0x80 | (cp & 0x3f));
    }
}

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
    if (index < m_memo.size() && m_memo[index] != 0 && m_listsSound) {
        // A rebound slot changes what the bytes of a known frame list mean.
        m_listsSound = false;
        m_lists.clear();
        m_recent.clear();
        m_listCount = 0;
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

Value NativeUnpickler::decodeLong(const unsigned char* p, uint64_t n) const
{
    if (n == 0)
        return Value::integer(0);
    if (n <= 8 && std::endian::native == std::endian::little) {
        uint64_t v = 0;
        std::memcpy(&v, p, n);
        const unsigned shift = 64 - 8 * static_cast<unsigned>(n);
        return Value::integer(static_cast<int64_t>(v << shift) >> shift); // sign-extend
    }
    const bool negative = p[n - 1] & 0x80;
    if (n > 8) {
        // Fits in 64 bits only when the extra bytes are pure sign extension.
        const unsigned char fill = negative ? 0xff : 0x00;
        for (uint64_t b = 8; b < n; ++b) {
            if (p[b] != fill)
                return Value::bigInteger();
        }
        // A negative value needs bit 63 set; a positive one up to 2^64-1 is kept as its bit
        // pattern (C++ code writes size_t(-1) as a "line" now and then).
        if (negative && (p[7] & 0x80) == 0)
            return Value::bigInteger();
        n = 8;
    }
    uint64_t v = negative ? ~uint64_t(0) : 0;
    for (uint64_t b = 0; b < n; ++b) {
        v &= ~(uint64_t(0xff) << (8 * b));
        v |= uint64_t(p[b]) << (8 * b);
    }
    return Value::integer(static_cast<int64_t>(v));
}

Value NativeUnpickler::intLine(std::string_view text, bool isLong) const
{
    if (!isLong && text == "00")
        return Value::boolean(false);
    if (!isLong && text == "01")
        return Value::boolean(true);
    if (isLong && !text.empty() && text.back() == 'L')
        text.remove_suffix(1);
    int64_t v = 0;
    const char* first = text.data();
    if (!text.empty() && text.front() == '+')
        ++first;
    const auto [end, ec] = std::from_chars(first, text.data() + text.size(), v);
    if (ec == std::errc::result_out_of_range) {
        uint64_t u = 0;
        const auto [uend, uec] = std::from_chars(first, text.data() + text.size(), u);
        if (uec == std::errc() && uend == text.data() + text.size())
            return Value::integer(static_cast<int64_t>(u));
        return Value::bigInteger();
    }
    if (ec != std::errc() || end != text.data() + text.size() || text.empty())
        throw errorAt(std::string("not a valid pickle: bad ") + (isLong ? "LONG" : "INT") + " literal", m_opStart);
    return Value::integer(v);
}

Value NativeUnpickler::latin1Text(std::string_view raw)
{
    // Python 2 str: read as latin-1, as the embedded decoder is told to.
    m_scratch.clear();
    for (const char ch : raw)
        appendUtf8(m_scratch, static_cast<unsigned char>(ch));
    return m_builder.text(m_scratch);
}

Value NativeUnpickler::textLine(std::string_view line)
{
    // raw-unicode-escape: latin-1 bytes, except \uXXXX and \UXXXXXXXX.
    m_scratch.clear();
    for (size_t i = 0; i < line.size(); ++i) {
        const auto ch = static_cast<unsigned char>(line[i]);
        if (ch == '\\' && i + 1 < line.size() && (line[i + 1] == 'u' || line[i + 1] == 'U')) {
            const size_t digits = line[i + 1] == 'u' ? 4 : 8;
            uint32_t cp = 0;
            if (i + 2 + digits > line.size()
                || std::from_chars(line.data() + i + 2, line.data() + i + 2 + digits, cp, 16).ptr
                    != line.data() + i + 2 + digits
                || cp > 0x10ffff)
                throw errorAt("not a valid pickle: bad escape in UNICODE", m_opStart);
            appendUtf8(m_scratch, cp);
            i += 1 + digits;
        } else {
            appendUtf8(m_scratch, ch);
        }
    }
    return m_builder.text(m_scratch);
}

} // namespace oomlens::pickle
