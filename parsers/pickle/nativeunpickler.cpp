#include "parsers/pickle/nativeunpickler.h"

#include "parsers/pickle/opcodes.h"
#include "parsers/pickle/snapshotbuilder.h"

#include <algorithm>
#include <bit>
#include <charconv>
#include <cstring>
#include <limits>

namespace oomlens::pickle {

namespace {

constexpr uint64_t checkEvery = 256 * 1024; // bytes between cancel checks and progress reports

uint32_t little32(const unsigned char* p)
{
    uint32_t v;
    std::memcpy(&v, p, sizeof v);
    if constexpr (std::endian::native == std::endian::big)
        v = __builtin_bswap32(v);
    return v;
}

uint64_t little(const unsigned char* p, int width)
{
    if (width == 4)
        return little32(p);
    uint64_t v = 0;
    for (int b = width - 1; b >= 0; --b)
        v = (v << 8) | p[b];
    return v;
}

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

constexpr size_t recentSlots = 4096;

size_t headHash(const unsigned char* p)
{
    uint64_t x, y;
    std::memcpy(&x, p, 8);
    std::memcpy(&y, p + 8, 8);
    const uint64_t h = (x * 0x9e3779b97f4a7c15ull) ^ (y * 0xc2b2ae3d27d4eb4full);
    return static_cast<size_t>(h >> 52) & (recentSlots - 1);
}

uint64_t bytesHash(const unsigned char* p, uint64_t n)
{
    // Two lanes of word-at-a-time multiply-xor: a frame list's bytes are hashed once per list.
    constexpr uint64_t k = 0x9e3779b97f4a7c15ull;
    uint64_t a = n, b = ~n;
    uint64_t i = 0;
    for (; i + 16 <= n; i += 16) {
        uint64_t x, y;
        std::memcpy(&x, p + i, 8);
        std::memcpy(&y, p + i + 8, 8);
        a = (a ^ x) * k;
        b = (b ^ y) * k;
    }
    if (i + 8 <= n) {
        uint64_t x;
        std::memcpy(&x, p + i, 8);
        a = (a ^ x) * k;
        i += 8;
    }
    uint64_t tail = 0;
    std::memcpy(&tail, p + i, n - i);
    b = (b ^ tail) * k;
    const uint64_t h = a ^ (b >> 29) ^ (b << 7);
    return h ^ (h >> 32);
}

} // namespace

NativeUnpickler::NativeUnpickler(SnapshotBuilder& builder)
    : m_builder(builder)
{ }

Value NativeUnpickler::decode(std::string_view data)
{
    m_base = reinterpret_cast<const unsigned char*>(data.data());
    m_size = data.size();
    m_pos = 0;
    if (m_size == 0)
        throw DecodeError(ErrorKind::Format, "empty input: no pickle data");
    // Untouched reservations cost address space only; they spare the big tables a regrow.
    m_memo.reserve(m_size / 16);
    m_stack.grow(4096);
    // Known frame lists point into the input: they do not outlive it.
    m_lists.clear();
    m_recent.assign(recentSlots, ListEntry {});
    m_listCount = 0;
    m_listsSound = true;
    try {
        run();
    } catch (const DecodeError& e) {
        // Errors raised by the builder know the shape, not the place: add the place.
        const std::string what = e.what();
        if (e.kind() == ErrorKind::Cancelled || what.find(" at byte ") != std::string::npos)
            throw;
        throw DecodeError(e.kind(), what + " (opcode at byte " + std::to_string(m_opStart) + ")");
    }
    return m_root;
}

void NativeUnpickler::run()
{
    const unsigned char* const base = m_base;
    const uint64_t size = m_size;
    uint64_t pos = 0;
    uint64_t nextCheck = checkEvery;
    SnapshotBuilder& builder = m_builder;

    while (pos < size) {
        if (pos >= nextCheck) {
            nextCheck = pos + checkEvery;
            if (cancel && cancel->load(std::memory_order_relaxed))
                throw DecodeError(ErrorKind::Cancelled, "cancelled");
            if (progress)
                progress(pos, size);
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
            if (m_stack.empty())
                throw errorAt("not a valid pickle: STOP with an empty stack", start);
            m_root = take(m_stack.back());
            m_stack.pop_back();
            if (progress)
                progress(size, size);
            return;
        case op::Mark:
            if (!m_stack.empty() && m_stack.back().kind == Kind::Open
                && static_cast<Kind>(m_stack.back().i) == Kind::List && appendFrameBatch(pos)) {
                pos = m_pos;
                break;
            }
            if (m_marks.size() >= maxMarks)
                throw errorAt("nesting deeper than " + std::to_string(maxMarks) + " levels", start);
            m_marks.push_back(m_stack.size());
            if (m_stack.size() > 0 && m_stack.back().kind == Kind::Open
                && static_cast<Kind>(m_stack.back().i) == Kind::Dict)
                pos = dictBody(pos);
            break;
        case op::Pop:
            if (m_stack.empty() || (!m_marks.empty() && m_marks.back() == m_stack.size())) {
                popMark(); // pickle.py: POP with nothing above the mark pops the mark
            } else {
                take(m_stack.back());
                m_stack.pop_back();
            }
            break;
        case op::PopMark: {
            const size_t k = popMark();
            for (size_t i = k; i < m_stack.size(); ++i)
                take(m_stack[i]);
            m_stack.resize(k);
            break;
        }
        case op::Dup:
            if (m_stack.empty())
                throw errorAt("not a valid pickle: DUP with an empty stack", start);
            if (m_stack.back().kind == Kind::Open)
                throw DecodeError(
                    ErrorKind::Unsupported, "DUP of an unfinished container at byte " + std::to_string(start));
            {
                // A copy: push() may grow the stack, and a reference into it would then dangle.
                const Value top = m_stack.back();
                push(top);
            }
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
            push(decodeLong(base + pos, n));
            pos += n;
            break;
        }
        case op::Long4: {
            need(4);
            const auto n = static_cast<int32_t>(static_cast<uint32_t>(little(base + pos, 4)));
            pos += 4;
            if (n < 0)
                throw errorAt("not a valid pickle: LONG4 with a negative length", start);
            need(static_cast<uint64_t>(n));
            push(decodeLong(base + pos, static_cast<uint64_t>(n)));
            pos += static_cast<uint64_t>(n);
            break;
        }
        case op::Int:
            push(intLine(line(), false));
            break;
        case op::Long:
            push(intLine(line(), true));
            break;
        case op::BinFloat: {
            need(8);
            uint64_t bits = 0;
            for (int b = 0; b < 8; ++b)
                bits = (bits << 8) | base[pos + static_cast<uint64_t>(b)];
            double d;
            std::memcpy(&d, &bits, sizeof d);
            push(Value::real(d));
            pos += 8;
            break;
        }
        case op::Float: {
            const auto text = line();
            double d = 0;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), d);
            if (ec != std::errc() || end != text.data() + text.size())
                throw errorAt("not a valid pickle: bad FLOAT literal", start);
            push(Value::real(d));
            break;
        }
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
            push(textLine(line()));
            break;
        case op::ShortBinString:
        case op::BinString: {
            uint64_t n;
            if (code == op::ShortBinString) {
                need(1);
                n = base[pos++];
            } else {
                need(4);
                const auto signedLength = static_cast<int32_t>(static_cast<uint32_t>(little(base + pos, 4)));
                pos += 4;
                if (signedLength < 0)
                    throw errorAt("not a valid pickle: BINSTRING with a negative length", start);
                n = static_cast<uint64_t>(signedLength);
            }
            push(latin1Text(view(n)));
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
        case op::EmptyDict:
        case op::EmptySet: {
            const Kind kind = code == op::EmptyList ? Kind::List : code == op::EmptyDict ? Kind::Dict : Kind::Set;
            Value open = Value::of(Kind::Open, builder.open(kind));
            open.i = static_cast<int64_t>(kind);
            push(open);
            break;
        }
        case op::EmptyTuple:
            push(builder.close(builder.open(Kind::Tuple)));
            break;
        case op::Tuple1:
        case op::Tuple2:
        case op::Tuple3:
        case op::Tuple:
        case op::FrozenSet: {
            size_t k;
            if (code == op::Tuple || code == op::FrozenSet) {
                k = popMark();
            } else {
                const size_t n = code - op::Tuple1 + 1u;
                if (m_stack.size() < n)
                    throw errorAt(std::string("not a valid pickle: ") + opcodeName(code) + " needs more values", start);
                k = m_stack.size() - n;
            }
            const uint32_t handle = builder.open(code == op::FrozenSet ? Kind::Set : Kind::Tuple);
            for (size_t i = k; i < m_stack.size(); ++i)
                builder.append(handle, take(m_stack[i]));
            m_stack.resize(k);
            push(builder.close(handle));
            break;
        }
        case op::List:
        case op::Dict: {
            const size_t k = popMark();
            const Kind kind = code == op::List ? Kind::List : Kind::Dict;
            const uint32_t handle = builder.open(kind);
            if (kind == Kind::Dict && (m_stack.size() - k) % 2 != 0)
                throw errorAt("not a valid pickle: DICT with an odd number of items", start);
            for (size_t i = k; i < m_stack.size(); i += kind == Kind::Dict ? 2 : 1) {
                if (kind == Kind::Dict) {
                    const Value key = take(m_stack[i]);
                    builder.setItem(handle, key, take(m_stack[i + 1]));
                } else {
                    builder.append(handle, take(m_stack[i]));
                }
            }
            m_stack.resize(k);
            Value open = Value::of(Kind::Open, handle);
            open.i = static_cast<int64_t>(kind);
            push(open);
            break;
        }
        case op::Append: {
            if (m_stack.size() < 2)
                throw errorAt("not a valid pickle: APPEND needs a list and a value", start);
            const uint32_t handle = target(2, Kind::List);
            builder.append(handle, take(m_stack.back()));
            m_stack.pop_back();
            break;
        }
        case op::Appends:
        case op::AddItems: {
            const size_t k = popMark();
            if (k == 0)
                throw errorAt(std::string("not a valid pickle: ") + opcodeName(code) + " without a container", start);
            appendItems(target(m_stack.size() - k + 1, code == op::Appends ? Kind::List : Kind::Set), k);
            break;
        }
        case op::SetItem: {
            if (m_stack.size() < 3)
                throw errorAt("not a valid pickle: SETITEM needs a dict, a key and a value", start);
            const uint32_t handle = target(3, Kind::Dict);
            const size_t k = m_stack.size() - 2;
            const Value key = take(m_stack[k]);
            builder.setItem(handle, key, take(m_stack[k + 1]));
            m_stack.resize(k);
            break;
        }
        case op::SetItems: {
            const size_t k = popMark();
            if (k == 0)
                throw errorAt("not a valid pickle: SETITEMS without a dict", start);
            if ((m_stack.size() - k) % 2 != 0)
                throw errorAt("not a valid pickle: SETITEMS with an odd number of items", start);
            const uint32_t handle = target(m_stack.size() - k + 1, Kind::Dict);
            // Finish the keys and values in order, then hand them over in one block.
            for (size_t i = k; i < m_stack.size(); ++i)
                m_stack[i] = take(m_stack[i]);
            builder.setItems(handle, m_stack.data() + k, m_stack.size() - k);
            m_stack.resize(k);
            break;
        }
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
        case op::Put: {
            const auto text = line();
            uint64_t index = 0;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), index);
            if (ec != std::errc() || end != text.data() + text.size())
                throw errorAt("not a valid pickle: bad PUT index", start);
            memoPut(index);
            break;
        }
        case op::BinGet:
            need(1);
            memoGet(base[pos++]);
            break;
        case op::LongBinGet:
            need(4);
            memoGet(little(base + pos, 4));
            pos += 4;
            break;
        case op::Get: {
            const auto text = line();
            uint64_t index = 0;
            const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), index);
            if (ec != std::errc() || end != text.data() + text.size())
                throw errorAt("not a valid pickle: bad GET index", start);
            memoGet(index);
            break;
        }
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
    const unsigned char* const base = m_base;
    const uint64_t size = m_size;
    const uint64_t from = pos;
    const bool fresh = sink->empty() && m_listsSound;
    if (fresh) {
        if (pos + 16 <= size) {
            const ListEntry& guess = m_recent[headHash(base + pos)];
            if (guess.stack != 0 && pos + guess.length < size && base[pos + guess.length] == op::Appends
                && std::memcmp(base + guess.offset, base + pos, guess.length) == 0) {
                m_builder.presetStack(handle, StackId(guess.stack - 1));
                m_pos = pos + guess.length + 1;
                return true;
            }
        }
        const uint64_t end = getRunEnd(base, size, pos);
        if (end > pos && end < size && base[end] == op::Appends && knownFrameList(handle, pos, end)) {
            m_pos = end + 1;
            return true;
        }
    }
    const uint64_t* const memo = m_memo.data();
    const uint64_t memoSize = m_memo.size();
    constexpr uint64_t frameTag = uint64_t(Kind::Frame) + 1;
    const size_t before = sink->size();
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
        // memcpy, not insert: the compiler cannot tell the buffer from the list and copies by element.
        const size_t at = sink->size();
        sink->resize(at + n);
        std::memcpy(sink->data() + at, buffer, n * sizeof(FrameId));
        n = 0;
    };
    const auto keep = [&](uint64_t index) {
        if (index >= memoSize || (memo[index] >> 56) != frameTag) [[unlikely]] {
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
    if (!valid || pos >= size || base[pos] != op::Appends || sink->size() == before) {
        sink->resize(before);
        return false;
    }
    m_pos = pos + 1;
    if (fresh)
        rememberFrameList(handle, from, pos);
    return true;
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
            push(decodeLong(base + pos + 2, base[pos + 1]));
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

bool NativeUnpickler::knownFrameList(uint32_t handle, uint64_t from, uint64_t end)
{
    if (m_lists.empty())
        return false;
    const auto length = end - from;
    const uint64_t hash = bytesHash(m_base + from, length);
    const size_t mask = m_lists.size() - 1;
    for (size_t i = hash & mask; m_lists[i].stack != 0; i = (i + 1) & mask) {
        const ListEntry& e = m_lists[i];
        if (e.hash == hash && e.length == length && std::memcmp(m_base + e.offset, m_base + from, length) == 0) {
            m_builder.presetStack(handle, StackId(e.stack - 1));
            if (from + 16 <= m_size)
                m_recent[headHash(m_base + from)] = e;
            return true;
        }
    }
    return false;
}

void NativeUnpickler::rememberFrameList(uint32_t handle, uint64_t from, uint64_t end)
{
    const StackId id = m_builder.stackSoFar(handle);
    m_builder.presetStack(handle, id);
    if ((m_listCount + 1) * 2 > m_lists.size()) {
        std::vector<ListEntry> grown(std::max<size_t>(1024, m_lists.size() * 2));
        const size_t mask = grown.size() - 1;
        for (const ListEntry& e : m_lists) {
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
    const uint64_t hash = bytesHash(m_base + from, length);
    const size_t mask = m_lists.size() - 1;
    size_t i = hash & mask;
    while (m_lists[i].stack != 0)
        i = (i + 1) & mask;
    m_lists[i] = ListEntry { hash, from, static_cast<uint32_t>(length), id.value + 1 };
    if (from + 16 <= m_size)
        m_recent[headHash(m_base + from)] = m_lists[i];
    ++m_listCount;
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
