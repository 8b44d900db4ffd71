#include "parsers/pickle/nativeunpickler.h"

#include "core/pagemove.h"
#include "parsers/pickle/listsplit.h"
#include "parsers/pickle/opcodes.h"
#include "parsers/pickle/unpicklerdetail.h"

#include <cstring>

// NativeUnpickler's side of a split list; the second thread is ListSplit (listsplit.h). Not a
// class of its own: deciding where to split, handing over the memo and taking the items back
// work on the decoder's stack, memo and builder.
//
// A big snapshot is one pickle whose bulk is one list, the trace. Its decoding is split across
// two threads: while this decoder reads the list's earlier items, a second one (ListSplit) reads
// the later ones into a fork of the builder, and at the split point this one takes them over.
//
// The split point is the start of a batch of items (APPENDS, then MARK and the next item dict),
// found by its bytes; this decoder confirms it on arrival (an opcode boundary with the list on top
// of the stack), else reads on alone. The second decoder starts with this decoder's memo as it
// was when the split began. The pickle numbers memo slots by counting MEMOIZEs, and how many
// come before the split point is only known once this decoder gets there, so the second decoder
// numbers its own slots from 0, and a GET of a slot past the copy it was given is left open
// (Kind::Deferred). A trace entry's frames (an alloc shares its frame list with the segment_alloc
// before it, a free_completed with its free_requested) are resolved at the join from either
// half's memo. A key or a string value (an action or a compile context first met since the split
// began, like the segment_free and oom entries that end a run out of memory) is needed to read
// the entry: the second decoder waits for this one to reach the split point, which tells the
// halves' slots apart, and reads it from there (resolveAcrossSplit). Anything else fails the
// split. The fork numbers its new strings, frames
// and stacks after what it was forked with, and the builder renumbers them in the order the fork
// met them, so every id is the one a single decoder gives.

namespace oomlens::pickle {

using namespace unpicklerdetail;

namespace {

// The memo slots a fork can read as they are: interned ids (copied tables), inline values.
bool shareable(uint64_t packed)
{
    const uint64_t tag = memoTagOf(packed);
    return tag == memoTag(Kind::Str) || tag == memoTag(Kind::Frame) || tag == memoTag(Kind::Stack)
        || tag == memoTag(Kind::EmptyList) || tag == memoWideTag;
}

// The share of what remains after the split began that the second decoder reads: this decoder
// also has the takeover to do.
constexpr double secondShare = 0.5;
// Past this point the memo copied for a new try costs more than half of what remains would gain.
constexpr double splitUntil = 0.4;
// How far below the stack's top the trace list is looked for.
constexpr size_t listSearchDepth = size_t(1) << 14;
// Splits tried per decode: each failed one cost the other core its work, and nothing else.
constexpr int maxSplitTries = 3;

} // namespace

uint64_t NativeUnpickler::considerSplit(uint64_t pos)
{
    if (m_split && m_split->failed() && m_splitTries < maxSplitTries) {
        // Most often an item referring to a frame or string first stored after the split began:
        // try again from here, with those in the memo.
        m_split.reset();
    }
    if (!m_split) {
        const double at = static_cast<double>(pos) / static_cast<double>(m_size);
        if (at > splitUntil)
            m_watchSplit = false;
        if (at < splitStart || at > splitUntil || m_protocol < 4 || !startSplit(pos))
            return m_size;
        ++m_splitTries;
    }
    const uint64_t boundary = m_split->boundary();
    if (boundary == ListSplit::pending || boundary == ListSplit::noSplit)
        return m_size;
    if (boundary < pos) {
        m_watchSplit = false;
        m_split.reset();
        return m_size;
    }
    return boundary;
}

bool NativeUnpickler::startSplit(uint64_t pos)
{
    // The trace list: an open list of trace entries, a few values below the top (the entries of
    // the current batch, the entry being read).
    const size_t lowest = m_stack.size() > listSearchDepth ? m_stack.size() - listSearchDepth : 0;
    size_t list = m_stack.size();
    for (size_t i = m_stack.size(); i-- > lowest;) {
        const Value& v = m_stack[i];
        if (v.kind == Kind::Open && static_cast<Kind>(v.i) == Kind::List && m_builder.isEventList(v.ref)) {
            list = i;
            break;
        }
    }
    if (list == m_stack.size())
        return false;
    ListSplit::Start start;
    start.data = std::string_view(reinterpret_cast<const char*>(m_base), m_size);
    start.target = pos + static_cast<uint64_t>(static_cast<double>(m_size - pos) * (1 - secondShare));
    start.memo = m_memo;
    for (uint64_t& packed : start.memo) {
        if (!shareable(packed))
            packed = 0;
    }
    start.memoWide = m_memoWide;
    start.fork = m_builder.forkForItems();
    start.fork->setSizeHint(m_size - start.target);
    m_split = std::make_unique<ListSplit>(std::move(start));
    // Finding the point takes the thread a search of a few KiB; waiting for it here keeps this
    // decoder from passing it while a busy machine has not run the thread yet.
    m_split->waitForBoundary();
    return true;
}

uint64_t NativeUnpickler::joinSplit(uint64_t pos)
{
    const auto split = std::move(m_split);
    // The second decoder may be waiting for this half's memo (resolveAcrossSplit).
    if (pos == split->boundary())
        split->publishFirstHalf({ m_memo.size(), &m_memo, &m_builder });
    else
        split->abandon();
    // The loop stops at the first opcode boundary at or past the split point: it must be the point,
    // with the list on top of the stack.
    if (!split->finish() || pos != split->boundary() || m_stack.empty())
        return pos;
    NativeUnpickler& second = split->decoder();
    SnapshotBuilder& fork = split->fork();
    const Value& top = m_stack.back();
    if (top.kind != Kind::Open || !m_builder.canAdopt(top.ref, fork, second.m_stack[0].ref))
        return pos;
    for (const uint64_t packed : second.m_localMemo) {
        if (packed != 0 && !shareable(packed) && memoTagOf(packed) != memoTag(Kind::Event))
            return pos;
    }
    // The second half's deferred frames: a slot of this half's memo (stored since the split
    // began) or one the second half stored before reading the entry.
    const uint64_t base = m_memo.size();
    std::vector<std::pair<uint32_t, uint64_t>> stacks; // fork entry, packed stack (this half's or the fork's)
    stacks.reserve(fork.deferredStacks().size());
    for (const auto& deferred : fork.deferredStacks()) {
        uint64_t packed = 0;
        if (deferred.memoIndex < base)
            packed = m_memo[deferred.memoIndex];
        else if (deferred.memoIndex - base < deferred.storedBefore)
            packed = second.m_localMemo[deferred.memoIndex - base] | (uint64_t(1) << 55);
        if (memoTagOf(packed) != memoTag(Kind::Stack))
            return pos;
        stacks.emplace_back(deferred.event, packed);
    }
    const ForkIds ids = m_builder.adoptItems(top.ref, fork);
    for (const auto& [event, packed] : stacks) {
        const auto stack = static_cast<uint32_t>(packed);
        const bool forks = packed & (uint64_t(1) << 55);
        m_builder.setStack(ids.firstEvent + event, StackId(forks ? ids.stack(stack) : stack));
    }
    for (uint64_t& packed : second.m_localMemo) {
        const uint64_t tag = memoTagOf(packed);
        const auto payload = static_cast<uint32_t>(packed);
        uint64_t renumbered = packed;
        if (tag == memoWideTag) {
            m_memoWide.push_back(second.m_memoWide[packed & memoPayloadMask]);
            renumbered = memoSlot(memoWideTag, m_memoWide.size() - 1);
        } else if (tag == memoTag(Kind::Str)) {
            renumbered = memoSlot(tag, ids.string(payload));
        } else if (tag == memoTag(Kind::Frame)) {
            renumbered = memoSlot(tag, ids.frame(payload));
        } else if (tag == memoTag(Kind::Stack)) {
            renumbered = memoSlot(tag, ids.stack(payload));
        } else if (tag == memoTag(Kind::Event)) {
            renumbered = memoSlot(tag, (payload + ids.firstEvent));
        }
        packed = renumbered;
    }
    appendMovingPages(m_memo, second.m_localMemo);
    if (m_memo.size() >= m_memoAhead.due)
        prefaultMemo();
    m_wasSplit = true;
    return second.m_pos;
}

Value NativeUnpickler::resolveAcrossSplit(
    const Value& deferred, uint64_t memoSize, const std::vector<uint64_t>& memo, const SnapshotBuilder& first)
{
    // Only strings are read across: a slot of this decoder's own (numbered locally, stored before
    // the value was read) is in its string table already; one of the first half's is looked up
    // there and interned here, where adoptItems() finds it known.
    static constexpr uint64_t strTag = memoTag(Kind::Str);
    const uint64_t index = deferred.ref;
    const auto storedBefore = static_cast<uint64_t>(deferred.i);
    if (index >= memoSize) {
        const uint64_t local = index - memoSize;
        if (local < storedBefore && memoTagOf(m_localMemo[local]) == strTag)
            return unpackMemo(m_localMemo[local]);
    } else if (index < memo.size() && memoTagOf(memo[index]) == strTag) {
        return m_builder.text(first.textOf(unpackMemo(memo[index])));
    }
    throw DecodeError(ErrorKind::Unsupported, "a value stored by the other half of a split list is not a string");
}

void NativeUnpickler::decodeItems(
    std::string_view data, uint64_t from, std::vector<uint64_t> memo, std::vector<Value> wide)
{
    m_base = reinterpret_cast<const unsigned char*>(data.data());
    m_size = data.size();
    m_pos = from;
    m_items = true;
    m_protocol = 4;
    m_memo = std::move(memo);
    m_memoFloor = m_memo.size();
    m_localMemo.reserve((m_size - from) / 16);
    m_memoWide = std::move(wide);
    m_stack.grow(4096);
    m_frameLists.reset();
    Value list = Value::of(Kind::Open, m_builder.open(Kind::List));
    list.i = static_cast<int64_t>(Kind::List);
    push(list);
    run();
    if (m_stack.size() != 1 || !m_marks.empty() || m_stack[0].kind != Kind::Open || m_stack[0].ref != list.ref)
        throw DecodeError(ErrorKind::Unsupported, "a split list ended with other values on the stack");
}

bool NativeUnpickler::atListEnd(uint64_t pos) const
{
    // Items come in batches (MARK ... APPENDS); anything but the next batch ends the list's part.
    while (pos + 9 <= m_size && m_base[pos] == op::Frame)
        pos += 9;
    return pos >= m_size || m_base[pos] != op::Mark;
}

} // namespace oomlens::pickle
