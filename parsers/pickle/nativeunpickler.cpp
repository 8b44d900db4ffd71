#include "parsers/pickle/nativeunpickler.h"

#include "parsers/pickle/listsplit.h"
#include "parsers/pickle/opcodes.h"
#include "parsers/pickle/pickleliterals.h"
#include "parsers/pickle/snapshotbuilder.h"
#include "parsers/pickle/unpicklerdetail.h"

#include <algorithm>
#include <cstring>

namespace oomlens::pickle {

using namespace unpicklerdetail;

NativeUnpickler::NativeUnpickler(SnapshotBuilder& builder)
    : m_builder(builder)
{ }

NativeUnpickler::~NativeUnpickler() = default;

Value NativeUnpickler::decode(std::string_view data)
{
    m_base = reinterpret_cast<const unsigned char*>(data.data());
    m_size = data.size();
    m_pos = 0;
    if (m_size == 0)
        throw DecodeError(ErrorKind::Format, "empty input: no pickle data");
    // Untouched reservations cost address space only; they spare the big tables a regrow.
    m_memo.reserve(m_size / 16);
    m_memoAhead = {};
    m_stack.grow(4096);
    // Known frame lists point into the input: they do not outlive it.
    m_frameLists.reset();
    m_watchSplit = m_size >= splitFrom;
    m_wasSplit = false;
    m_splitTries = 0;
    try {
        run();
        m_split.reset();
    } catch (const DecodeError& e) {
        m_split.reset();
        // Errors raised by the builder know the shape, not the place: add the place.
        const std::string what = e.what();
        if (e.kind() == ErrorKind::Cancelled || what.find(" at byte ") != std::string::npos)
            throw;
        throw DecodeError(e.kind(), what + " (opcode at byte " + std::to_string(m_opStart) + ")");
    }
    return m_root;
}

// Every checkEvery bytes: cancel, report progress, and return where the loop must stop (the
// split point once a split is under way).
uint64_t NativeUnpickler::checkIn(uint64_t pos, uint64_t limit)
{
    if (cancel && cancel->load(std::memory_order_relaxed))
        throw DecodeError(ErrorKind::Cancelled, "cancelled");
    if (progress)
        progress(pos, m_size);
    if (m_watchSplit) [[unlikely]]
        return considerSplit(pos);
    return limit;
}

// The opcode loop's steps: what an opcode does to the stack, the marks and the builder once its
// operand is read. The tiny ones that MARK, EMPTY_DICT/EMPTY_LIST and APPENDS run for nearly every
// container are forced inline (run() is too big for the compiler to inline them on its own); forcing
// the bigger ones too costs more than it saves: the compiler then stops inlining the builder's vector
// inserts into run() (measured with callgrind).

[[gnu::always_inline]] inline bool NativeUnpickler::topIsOpen(Kind kind)
{
    return !m_stack.empty() && m_stack.back().kind == Kind::Open && static_cast<Kind>(m_stack.back().i) == kind;
}

[[gnu::always_inline]] inline void NativeUnpickler::pushOpen(Kind kind, uint32_t handle)
{
    Value open = Value::of(Kind::Open, handle);
    open.i = static_cast<int64_t>(kind);
    push(open);
}

[[gnu::always_inline]] inline void NativeUnpickler::pushMark()
{
    if (m_marks.size() >= maxMarks)
        throw errorAt("nesting deeper than " + std::to_string(maxMarks) + " levels", m_opStart);
    m_marks.push_back(m_stack.size());
}

uint64_t NativeUnpickler::signedLength(const unsigned char* p, uint8_t code, uint64_t start)
{
    const auto n = static_cast<int32_t>(static_cast<uint32_t>(little(p, 4)));
    if (n < 0)
        throw errorAt(std::string("not a valid pickle: ") + opcodeName(code) + " with a negative length", start);
    return static_cast<uint64_t>(n);
}

void NativeUnpickler::takeRoot()
{
    if (m_items)
        throw errorAt("STOP inside a split list", m_opStart);
    if (m_stack.empty())
        throw errorAt("not a valid pickle: STOP with an empty stack", m_opStart);
    m_root = take(m_stack.back());
    m_stack.pop_back();
}

void NativeUnpickler::popTop()
{
    if (m_stack.empty() || (!m_marks.empty() && m_marks.back() == m_stack.size())) {
        popMark(); // pickle.py: POP with nothing above the mark pops the mark
    } else {
        take(m_stack.back());
        m_stack.pop_back();
    }
}

void NativeUnpickler::dropToMark()
{
    const size_t k = popMark();
    for (size_t i = k; i < m_stack.size(); ++i)
        take(m_stack[i]);
    m_stack.resize(k);
}

void NativeUnpickler::duplicateTop()
{
    if (m_stack.empty())
        throw errorAt("not a valid pickle: DUP with an empty stack", m_opStart);
    if (m_stack.back().kind == Kind::Open)
        throw DecodeError(
            ErrorKind::Unsupported, "DUP of an unfinished container at byte " + std::to_string(m_opStart));
    // A copy: push() may grow the stack, and a reference into it would then dangle.
    const Value top = m_stack.back();
    push(top);
}

// Where TUPLE1-3's n values begin on the stack.
size_t NativeUnpickler::topValues(size_t n)
{
    if (m_stack.size() < n)
        throw errorAt(
            std::string("not a valid pickle: ") + opcodeName(m_base[m_opStart]) + " needs more values", m_opStart);
    return m_stack.size() - n;
}

// A tuple or frozenset of the values from `from` up, built closed and pushed in their place.
void NativeUnpickler::pushClosed(Kind kind, size_t from)
{
    const uint32_t handle = m_builder.open(kind);
    for (size_t i = from; i < m_stack.size(); ++i)
        m_builder.append(handle, take(m_stack[i]));
    m_stack.resize(from);
    push(m_builder.close(handle));
}

void NativeUnpickler::pushListFromMark()
{
    const size_t k = popMark();
    const uint32_t handle = m_builder.open(Kind::List);
    for (size_t i = k; i < m_stack.size(); ++i)
        m_builder.append(handle, take(m_stack[i]));
    m_stack.resize(k);
    pushOpen(Kind::List, handle);
}

void NativeUnpickler::pushDictFromMark()
{
    const size_t k = popMark();
    const uint32_t handle = m_builder.open(Kind::Dict);
    if ((m_stack.size() - k) % 2 != 0)
        throw errorAt("not a valid pickle: DICT with an odd number of items", m_opStart);
    for (size_t i = k; i < m_stack.size(); i += 2) {
        const Value key = take(m_stack[i]);
        m_builder.setItem(handle, key, take(m_stack[i + 1]));
    }
    m_stack.resize(k);
    pushOpen(Kind::Dict, handle);
}

void NativeUnpickler::appendTop()
{
    if (m_stack.size() < 2)
        throw errorAt("not a valid pickle: APPEND needs a list and a value", m_opStart);
    const uint32_t handle = target(2, Kind::List);
    m_builder.append(handle, take(m_stack.back()));
    m_stack.pop_back();
}

void NativeUnpickler::appendToMark(Kind kind)
{
    const size_t k = popMark();
    if (k == 0)
        throw errorAt(
            std::string("not a valid pickle: ") + opcodeName(m_base[m_opStart]) + " without a container", m_opStart);
    appendItems(target(m_stack.size() - k + 1, kind), k);
}

// A second decoder stops where its part of the split list ends: back at the list itself, with
// no batch of items following.
[[gnu::always_inline]] inline bool NativeUnpickler::secondDecoderDone(uint64_t pos) const
{
    return m_items && m_stack.size() == 1 && m_marks.empty() && atListEnd(pos);
}

void NativeUnpickler::setTopItem()
{
    if (m_stack.size() < 3)
        throw errorAt("not a valid pickle: SETITEM needs a dict, a key and a value", m_opStart);
    const uint32_t handle = target(3, Kind::Dict);
    const size_t k = m_stack.size() - 2;
    const Value key = take(m_stack[k]);
    m_builder.setItem(handle, key, take(m_stack[k + 1]));
    m_stack.resize(k);
}

void NativeUnpickler::setItemsToMark()
{
    const size_t k = popMark();
    if (k == 0)
        throw errorAt("not a valid pickle: SETITEMS without a dict", m_opStart);
    if ((m_stack.size() - k) % 2 != 0)
        throw errorAt("not a valid pickle: SETITEMS with an odd number of items", m_opStart);
    const uint32_t handle = target(m_stack.size() - k + 1, Kind::Dict);
    // Finish the keys and values in order, then hand them over in one block.
    for (size_t i = k; i < m_stack.size(); ++i)
        m_stack[i] = take(m_stack[i]);
    m_builder.setItems(handle, m_stack.data() + k, m_stack.size() - k);
    m_stack.resize(k);
}

// Long on purpose: the opcode switch is the decoder's dispatch, one short case per opcode.
void NativeUnpickler::run()
{
    const unsigned char* const base = m_base;
    const uint64_t size = m_size;
    uint64_t pos = m_pos;
    uint64_t nextCheck = pos + checkEvery;
    // Where the loop must stop before the end: the split point, or a second decoder's list end.
    uint64_t limit = size;
    SnapshotBuilder& builder = m_builder;

    for (;;) {
        if (pos >= limit) [[unlikely]] {
            if (pos >= size)
                break;
            if (m_items) {
                m_pos = pos;
                return;
            }
            pos = joinSplit(pos);
            limit = size;
            continue;
        }
        if (pos >= nextCheck) {
            nextCheck = pos + checkEvery;
            limit = checkIn(pos, limit);
        }
        const uint64_t start = pos;
        m_opStart = start;
        const uint8_t code = base[pos++];
        const auto need = [&](uint64_t n) {
            if (n > size - pos)
                throw truncation(code, start);
        };
        const auto line = [&]() {
            const void* nl = std::memchr(base + pos, '\n', size - pos);
            if (!nl)
                throw truncation(code, start);
            const auto end = static_cast<uint64_t>(static_cast<const unsigned char*>(nl) - base);
            std::string_view text(reinterpret_cast<const char*>(base + pos), end - pos);
            pos = end + 1;
            return text;
        };
        const auto view = [&](uint64_t n) {
            need(n);
            std::string_view text(reinterpret_cast<const char*>(base + pos), n);
            pos += n;
            return text;
        };

        // Each case reads its operand here, where `pos` lives in a register; the steps above do the rest.
        switch (code) {
        case op::Proto:
            need(1);
            m_protocol = base[pos++];
            if (m_protocol > 5)
                throw errorAt("unsupported pickle protocol " + std::to_string(m_protocol), start);
            break;
        case op::Frame:
            need(8);
            pos += 8;
            break;
        case op::Stop:
            takeRoot();
            if (progress)
                progress(size, size);
            return;
        case op::Mark:
            if (topIsOpen(Kind::List) && appendFrameBatch(pos)) {
                pos = m_pos;
                break;
            }
            pushMark();
            if (topIsOpen(Kind::Dict))
                pos = dictBody(pos);
            break;
        case op::Pop:
            popTop();
            break;
        case op::PopMark:
            dropToMark();
            break;
        case op::Dup:
            duplicateTop();
            break;
        case op::None:
            push(Value::none());
            break;
        case op::NewTrue:
            push(Value::boolean(true));
            break;
        case op::NewFalse:
            push(Value::boolean(false));
            break;
        case op::BinInt:
            need(4);
            push(Value::integer(static_cast<int32_t>(static_cast<uint32_t>(little(base + pos, 4)))));
            pos += 4;
            break;
        case op::BinInt1:
            need(1);
            push(Value::integer(base[pos++]));
            break;
        case op::BinInt2:
            need(2);
            push(Value::integer(static_cast<int64_t>(little(base + pos, 2))));
            pos += 2;
            break;
        case op::Long1: {
            need(1);
            const uint64_t n = base[pos++];
            need(n);
            push(literals::longFromBytes(base + pos, n));
            pos += n;
            break;
        }
        case op::Long4: {
            need(4);
            const uint64_t n = signedLength(base + pos, code, start);
            pos += 4;
            need(n);
            push(literals::longFromBytes(base + pos, n));
            pos += n;
            break;
        }
        case op::Int:
            push(literals::intFromText(line(), false, start));
            break;
        case op::Long:
            push(literals::intFromText(line(), true, start));
            break;
        case op::BinFloat:
            need(8);
            push(literals::floatFromBigEndian(base + pos));
            pos += 8;
            break;
        case op::Float:
            push(literals::floatFromText(line(), start));
            break;
        case op::ShortBinUnicode: {
            need(1);
            const uint64_t n = base[pos++];
            push(builder.text(view(n)));
            break;
        }
        case op::BinUnicode:
            need(4);
            pos += 4;
            push(builder.text(view(little(base + pos - 4, 4))));
            break;
        case op::BinUnicode8:
            need(8);
            pos += 8;
            push(builder.text(view(little(base + pos - 8, 8))));
            break;
        case op::Unicode:
            push(builder.text(literals::rawUnicodeToUtf8(line(), m_scratch, start)));
            break;
        case op::ShortBinString: {
            need(1);
            const uint64_t n = base[pos++];
            push(builder.text(literals::latin1ToUtf8(view(n), m_scratch)));
            break;
        }
        case op::BinString: {
            need(4);
            const uint64_t n = signedLength(base + pos, code, start);
            pos += 4;
            push(builder.text(literals::latin1ToUtf8(view(n), m_scratch)));
            break;
        }
        case op::ShortBinBytes: {
            need(1);
            const uint64_t n = base[pos++];
            push(builder.bytes(view(n)));
            break;
        }
        case op::BinBytes:
            need(4);
            pos += 4;
            push(builder.bytes(view(little(base + pos - 4, 4))));
            break;
        case op::BinBytes8:
        case op::ByteArray8:
            need(8);
            pos += 8;
            push(builder.bytes(view(little(base + pos - 8, 8))));
            break;
        case op::EmptyList:
            pushOpen(Kind::List, builder.open(Kind::List));
            break;
        case op::EmptyDict:
            pushOpen(Kind::Dict, builder.open(Kind::Dict));
            break;
        case op::EmptySet:
            pushOpen(Kind::Set, builder.open(Kind::Set));
            break;
        case op::EmptyTuple:
            push(builder.close(builder.open(Kind::Tuple)));
            break;
        case op::Tuple1:
        case op::Tuple2:
        case op::Tuple3:
            pushClosed(Kind::Tuple, topValues(code - op::Tuple1 + 1u));
            break;
        case op::Tuple:
            pushClosed(Kind::Tuple, popMark());
            break;
        case op::FrozenSet:
            pushClosed(Kind::Set, popMark());
            break;
        case op::List:
            pushListFromMark();
            break;
        case op::Dict:
            pushDictFromMark();
            break;
        case op::Append:
            appendTop();
            if (secondDecoderDone(pos)) [[unlikely]]
                limit = pos;
            break;
        case op::Appends:
        case op::AddItems:
            appendToMark(code == op::Appends ? Kind::List : Kind::Set);
            if (secondDecoderDone(pos)) [[unlikely]]
                limit = pos;
            break;
        case op::SetItem:
            setTopItem();
            break;
        case op::SetItems:
            setItemsToMark();
            break;
        case op::Memoize:
            memoPut(m_memo.size());
            break;
        case op::BinPut:
            need(1);
            memoPut(base[pos++]);
            break;
        case op::LongBinPut:
            need(4);
            memoPut(little(base + pos, 4));
            pos += 4;
            break;
        case op::Put:
            memoPut(literals::memoIndexFromText(line(), "PUT", start));
            break;
        case op::BinGet:
            need(1);
            memoGet(base[pos++]);
            break;
        case op::LongBinGet:
            need(4);
            memoGet(little(base + pos, 4));
            pos += 4;
            break;
        case op::Get:
            memoGet(literals::memoIndexFromText(line(), "GET", start));
            break;
        case op::String:
            // Quoted Python-2 literals need Python's escape rules: leave them to the embedded decoder.
            throw DecodeError(ErrorKind::Unsupported,
                "opcode STRING at byte " + std::to_string(start) + " is not supported natively");
        case op::NextBuffer:
        case op::ReadOnlyBuffer:
            throw errorAt(std::string("out-of-band buffers (") + opcodeName(code) + ") are not supported", start);
        default:
            if (runsCode(code))
                throw codeRefusal(code, start);
            throw unknownOpcode(code, start);
        }
    }
    throw missingStop(size);
}

void NativeUnpickler::growStack()
{
    if (m_stack.size() >= maxStack)
        throw errorAt("pickle stack deeper than " + std::to_string(maxStack) + " values", m_opStart);
    m_stack.grow(std::min(maxStack, std::max<size_t>(4096, m_stack.capacity() * 2)));
}

void NativeUnpickler::appendItems(uint32_t handle, size_t from)
{
    // APPENDS of finished plain values (a batch of frames, above all) goes in as one block.
    bool plain = true;
    for (size_t i = from; i < m_stack.size() && plain; ++i)
        plain = m_stack[i].kind != Kind::Open && !isRecord(m_stack[i].kind);
    if (plain) {
        m_builder.appendMany(handle, m_stack.data() + from, m_stack.size() - from);
    } else {
        for (size_t i = from; i < m_stack.size(); ++i)
            m_builder.append(handle, take(m_stack[i]));
    }
    m_stack.resize(from);
}

size_t NativeUnpickler::popMark()
{
    if (m_marks.empty())
        throw errorAt(
            std::string("not a valid pickle: ") + opcodeName(m_base[m_opStart]) + " without a MARK", m_opStart);
    const size_t k = m_marks.back();
    m_marks.pop_back();
    // pickle.py hides what lies below a MARK; an opcode that popped it anyway (SETITEM, APPEND
    // right after MARK) left the mark above the stack, and every user of k would underflow.
    if (k > m_stack.size())
        throw errorAt(std::string("not a valid pickle: ") + opcodeName(m_base[m_opStart])
                + " after values below its MARK were taken",
            m_opStart);
    return k;
}

uint32_t NativeUnpickler::target(size_t below, Kind kind)
{
    const Value& container = m_stack[m_stack.size() - below];
    if (container.kind != Kind::Open || static_cast<Kind>(container.i) != kind) {
        throw errorAt(std::string("not a valid pickle: ") + opcodeName(m_base[m_opStart]) + " on a "
                + kindName(container.kind == Kind::Open ? static_cast<Kind>(container.i) : container.kind),
            m_opStart);
    }
    return container.ref;
}

} // namespace oomlens::pickle
