#include "parsers/pickle/snapshotbuilder.h"

#include "core/hash.h"
#include "core/pagemove.h"
#include "parsers/pickle/snapshotassembler.h"
#include "parsers/pickle/snapshotkeys.h"
#include "parsers/text/textlines.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace oomlens::pickle {

namespace {

constexpr uint32_t actionCount = static_cast<uint32_t>(TraceAction::Unknown);
// A trace entry takes at least ~20 pickle bytes; reserving by this ratio avoids regrowing the
// event buffer (and its transient double footprint) while costing only untouched address space.
constexpr uint64_t minBytesPerEvent = 24;

DecodeError formatError(const std::string& message)
{
    return DecodeError(ErrorKind::Format, message);
}

DecodeError unsupported(const std::string& message)
{
    return DecodeError(ErrorKind::Unsupported, message);
}

} // namespace

SnapshotBuilder::SnapshotBuilder()
{
    m_records.strings = std::make_shared<StringTable>();
    m_records.frames = std::make_shared<FrameTable>();
    for (auto name : keyNames)
        m_records.strings->intern(name);
    for (auto name : stateNames)
        m_records.strings->intern(name);
    for (auto name : segmentTypeNames)
        m_records.strings->intern(name);
    for (uint32_t a = 0; a < actionCount; ++a)
        m_records.strings->intern(traceActionName(static_cast<TraceAction>(a)));
    m_emptyString = m_records.strings->intern("");
}

SnapshotBuilder::~SnapshotBuilder() = default;

Value SnapshotBuilder::text(std::string_view utf8)
{
    // Everything downstream (the JSON output above all) relies on valid UTF-8. Python would have
    // refused these bytes, but a damaged or hand-made pickle can still carry them.
    if (!text::isValidUtf8(utf8)) [[unlikely]]
        return Value::of(Kind::Str, m_records.strings->intern(text::sanitizedUtf8(utf8)).value);
    return Value::of(Kind::Str, m_records.strings->intern(utf8).value);
}

Snapshot SnapshotBuilder::finish(const Value& root)
{
    return SnapshotAssembler(std::move(m_records)).assemble(root);
}

Value SnapshotBuilder::bytes(std::string_view data)
{
    return Value::of(Kind::Bytes, m_records.strings->intern(data).value);
}

uint32_t SnapshotBuilder::open(Kind kind)
{
    uint32_t handle;
    if (!m_freeSlots.empty()) {
        handle = m_freeSlots.back();
        m_freeSlots.pop_back();
    } else {
        if (m_open.size() >= maxOpenContainers)
            throw formatError("more than " + std::to_string(maxOpenContainers) + " unfinished containers");
        handle = static_cast<uint32_t>(m_open.size());
        m_open.emplace_back();
    }
    auto& c = m_open[handle];
    c.kind = kind;
    c.recordKind = Kind::None;
    c.first = 0;
    c.count = 0;
    c.frames.clear();
    c.items.clear();
    return handle;
}

void SnapshotBuilder::appendSlow(OpenContainer& c, const Value& item)
{
    if (c.recordKind == Kind::Stack) {
        // A preset stack takes more items after all: it goes back to being a list of its frames.
        const auto frames = m_records.frames->stack(StackId(c.first));
        c.frames.assign(frames.begin(), frames.end());
        c.recordKind = Kind::None;
        if (item.kind == Kind::Frame) {
            c.frames.push_back(FrameId(item.ref));
            return;
        }
    }
    if (c.kind == Kind::List && isRecord(item.kind)) {
        appendRecord(c, item);
        return;
    }
    if (item.kind == Kind::Deferred)
        deferredValueUsed();
    if (c.recordKind != Kind::None)
        mixedList(c.recordKind);
    spillFrames(c);
    c.items.push_back(item);
}

void SnapshotBuilder::spillFrames(OpenContainer& c)
{
    // The list turned out not to be a stack: its frames become ordinary items.
    for (const FrameId f : c.frames)
        c.items.push_back(Value::of(Kind::Frame, f.value));
    c.frames.clear();
}

void SnapshotBuilder::appendRecord(OpenContainer& c, const Value& item)
{
    if (!c.items.empty() || !c.frames.empty() || (c.recordKind != Kind::None && c.recordKind != item.kind))
        mixedList(item.kind);
    if (c.recordKind == Kind::None) {
        c.recordKind = item.kind;
        c.first = item.ref;
        c.count = 1;
    } else if (item.ref == c.first + c.count) {
        ++c.count;
    } else {
        throw unsupported(std::string("a list of ") + kindName(item.kind) + "s is not in decoding order");
    }
}

void SnapshotBuilder::mixedList(Kind kind)
{
    throw unsupported(std::string("a list mixes ") + kindName(kind) + "s with other values");
}

Value SnapshotBuilder::resolved(const Value& deferred) const
{
    if (!resolveDeferred)
        deferredValueUsed();
    return resolveDeferred(deferred);
}

void SnapshotBuilder::sharedRecord(Kind kind)
{
    throw unsupported(std::string("a ") + kindName(kind) + " is shared between two places");
}

Value SnapshotBuilder::close(uint32_t handle)
{
    auto& c = m_open[handle];
    Value result;
    switch (c.kind) {
    case Kind::Dict:
        result = closeDict(c);
        break;
    case Kind::List:
        result = closeList(c);
        break;
    case Kind::Tuple:
        if (c.items.size() == 2 && c.items[0].kind == Kind::Int && c.items[1].kind == Kind::Int
            && c.items[0].i >= std::numeric_limits<int32_t>::min()
            && c.items[0].i <= std::numeric_limits<int32_t>::max()) {
            result = Value::of(Kind::Pair, static_cast<uint32_t>(static_cast<int32_t>(c.items[0].i)));
            result.i = c.items[1].i;
        } else {
            result = retain(c);
        }
        break;
    default:
        result = retain(c);
        break;
    }
    m_freeSlots.push_back(handle);
    return result;
}

Value SnapshotBuilder::retain(OpenContainer& c)
{
    const auto index = static_cast<uint32_t>(m_records.nodes.size());
    m_records.nodes.push_back(Node { c.kind, std::move(c.items) });
    c.items = {};
    return Value::of(c.kind, index);
}

Value SnapshotBuilder::closeList(OpenContainer& c)
{
    if (c.recordKind == Kind::Stack)
        return Value::of(Kind::Stack, c.first);
    if (c.recordKind != Kind::None) {
        const auto index = static_cast<uint32_t>(m_records.ranges.size());
        if (c.recordKind == Kind::Event) {
            // Hand the staging buffer over whole when the list is all of it (the normal case):
            // a trace is never copied.
            const auto listIndex = static_cast<uint32_t>(m_records.eventLists.size());
            if (c.first == 0 && c.count == m_events.size()) {
                m_records.eventLists.push_back(std::move(m_events));
                m_events = {};
            } else {
                m_records.eventLists.emplace_back(m_events.begin() + c.first, m_events.begin() + c.first + c.count);
            }
            m_records.ranges.push_back({ Kind::Event, listIndex, c.count });
        } else {
            m_records.ranges.push_back({ c.recordKind, c.first, c.count });
        }
        return Value::of(Kind::Records, index);
    }
    if (!c.frames.empty())
        return Value::of(Kind::Stack, internStack(c).value);
    if (c.items.empty())
        return Value::of(Kind::EmptyList, 0);
    return retain(c);
}

StackId SnapshotBuilder::internStack(const OpenContainer& c)
{
    if ((m_stackCached + 1) * 2 > m_stackSlots.size()) {
        std::vector<uint32_t> slots(std::max<size_t>(256, m_stackSlots.size() * 2), 0);
        std::vector<uint64_t> hashes(slots.size(), 0);
        const size_t mask = slots.size() - 1;
        for (size_t i = 0; i < m_stackSlots.size(); ++i) {
            if (m_stackSlots[i] == 0)
                continue;
            size_t j = m_stackHashes[i] & mask;
            while (slots[j] != 0)
                j = (j + 1) & mask;
            slots[j] = m_stackSlots[i];
            hashes[j] = m_stackHashes[i];
        }
        m_stackSlots.swap(slots);
        m_stackHashes.swap(hashes);
    }
    const FrameId* frames = c.frames.data();
    const size_t count = c.frames.size();
    const uint64_t hash = hashBytes(frames, count * sizeof(FrameId));
    const size_t mask = m_stackSlots.size() - 1;
    size_t i = hash & mask;
    for (; m_stackSlots[i] != 0; i = (i + 1) & mask) {
        if (m_stackHashes[i] != hash)
            continue;
        const StackId id(m_stackSlots[i] - 1);
        const auto known = m_records.frames->stack(id);
        if (known.size() == count && std::memcmp(known.begin(), frames, count * sizeof(FrameId)) == 0)
            return id;
    }
    const StackId id = m_records.frames->internStack(frames, count);
    // Two different lists can intern to one stack only if they are equal, so a new slot is right
    // even when the core table already knew the stack.
    m_stackSlots[i] = id.value + 1;
    m_stackHashes[i] = hash;
    ++m_stackCached;
    return id;
}

Value SnapshotBuilder::closeDict(OpenContainer& c)
{
    const Value** fields = m_fields;
    bool unknownKeys = false;
    for (size_t i = 0; i + 1 < c.items.size(); i += 2) {
        Value& key = c.items[i];
        if (key.kind == Kind::Deferred) [[unlikely]]
            key = resolved(key);
        // A trace entry's frames may wait for the join (makeEvent); any other value is read here.
        Value& value = c.items[i + 1];
        if (value.kind == Kind::Deferred && !(key.kind == Kind::Str && key.ref == KFrames)) [[unlikely]]
            value = resolved(value);
        if (key.kind == Kind::Str && key.ref < KeyCount)
            fields[key.ref] = &value;
        else
            unknownKeys = true;
    }
    // Clear exactly the fields this dict set, whichever way it returns.
    struct Reset
    {
        const Value** fields;
        const std::vector<Value>& items;
        bool done = false;
        void now()
        {
            for (size_t i = 0; i + 1 < items.size(); i += 2) {
                if (items[i].kind == Kind::Str && items[i].ref < KeyCount)
                    fields[items[i].ref] = nullptr;
            }
            done = true;
        }
        ~Reset()
        {
            if (!done)
                now();
        }
    } reset { fields, c.items };
    if (fields[KAction]) {
        if (unknownKeys)
            warnUnknownKeys(c.items, "trace entry");
        return makeEvent(fields, c.items);
    }
    if (fields[KFilename] && fields[KName])
        return makeFrame(fields);
    if (fields[KTotalSize] || fields[KBlocks]) {
        if (unknownKeys)
            warnUnknownKeys(c.items, "segment");
        return makeSegment(fields);
    }
    if (fields[KState]) {
        if (unknownKeys)
            warnUnknownKeys(c.items, "block");
        return makeBlock(fields);
    }
    if (fields[KRealSize])
        return makeHistory(fields);
    if (fields[KDevice] && fields[KTimeUs]) {
        const auto index = static_cast<uint32_t>(m_records.annotations.size());
        m_records.annotations.push_back(m_records.annotation(c.items));
        return Value::of(Kind::Annotation, index);
    }
    reset.now(); // retain() takes the items away
    return retain(c);
}

Value SnapshotBuilder::makeEvent(const Value* const* f, const std::vector<Value>&)
{
    static constexpr const char* record = "trace entry";
    if (m_events.capacity() == 0 && m_sizeHint > m_eventsStaged * minBytesPerEvent) {
        m_events.reserve(std::max<uint64_t>(1024, m_sizeHint / minBytesPerEvent - m_eventsStaged));
        m_eventsAhead = {};
    }
    TraceEvent e;
    e.action = actionOf(*f[KAction]);
    e.addr = static_cast<uint64_t>(integerField(f[KAddr], KAddr, record));
    if (e.action == TraceAction::Oom && f[KDeviceFree])
        e.addr = static_cast<uint64_t>(integerField(f[KDeviceFree], KDeviceFree, record));
    e.size = static_cast<uint64_t>(integerField(f[KSize], KSize, record));
    e.stream = integerField(f[KStream], KStream, record);
    e.timeUs = integerField(f[KTimeUs], KTimeUs, record);
    if (f[KFrames] && f[KFrames]->kind == Kind::Deferred) [[unlikely]] {
        m_deferredStacks.push_back(
            { static_cast<uint32_t>(m_events.size()), f[KFrames]->ref, static_cast<uint64_t>(f[KFrames]->i) });
    } else {
        e.stack = stackOf(f[KFrames], record);
    }
    e.compileContext = optionalText(f[KCompileContext], KCompileContext, record);
    // PyTorch records "N/A" outside compiled regions when compile_context=True.
    if (e.compileContext.isValid() && m_records.strings->get(e.compileContext) == "N/A")
        e.compileContext = {};
    e.userMetadata = optionalText(f[KUserMetadata], KUserMetadata, record);
    if (const Value* pool = f[KPoolId]) [[unlikely]]
        e.pool = entryPoolOf(pool);
    if (m_events.size() >= std::numeric_limits<uint32_t>::max())
        throw formatError("more than 4 billion trace entries");
    const auto index = static_cast<uint32_t>(m_events.size());
    m_events.push_back(e);
    ++m_eventsStaged;
    if (m_events.size() >= m_eventsAhead.due) [[unlikely]]
        prefaultEvents();
    return Value::of(Kind::Event, index);
}

void SnapshotBuilder::prefaultEvents()
{
    // Only for big inputs (the reservation is about nine times the trace): below that the window
    // ahead would be a noticeable part of the memory budget and the faults saved are few.
    if (m_events.capacity() * sizeof(TraceEvent) < (size_t(1) << 30)) {
        m_eventsAhead.due = SIZE_MAX;
        return;
    }
    if (!m_prefaulter)
        m_prefaulter = std::make_unique<PagePrefaulter>();
    m_prefaulter->keepAhead(m_eventsAhead, m_events);
}

// A (first, second) pool id: a tuple of two ints (a Pair when the decoder packed it), or a
// two-item list where the input was JSON.
std::optional<PoolId> SnapshotBuilder::poolIdOf(const Value* pool) const
{
    if (!pool)
        return std::nullopt;
    if (pool->kind == Kind::Pair)
        return PoolId { static_cast<int32_t>(pool->ref), pool->i };
    const Node* node = m_records.nodeOf(*pool, Kind::Tuple) ? m_records.nodeOf(*pool, Kind::Tuple)
                                                            : m_records.nodeOf(*pool, Kind::List);
    if (node && node->items.size() == 2 && node->items[0].kind == Kind::Int && node->items[1].kind == Kind::Int)
        return PoolId { node->items[0].i, node->items[1].i };
    return std::nullopt;
}

// A trace entry's pool_id as TraceEvent::pool. Runs go through few pools, so the table is
// searched linearly; past 65,535 distinct pools the entry keeps none.
uint16_t SnapshotBuilder::entryPoolOf(const Value* value)
{
    if (value->kind == Kind::Deferred)
        deferredValueUsed();
    const auto pool = poolIdOf(value);
    if (!pool) {
        if (value->kind != Kind::None)
            m_records.warnOnce("a trace entry's pool_id is not a pair of ints; ignored");
        return 0;
    }
    const auto it = std::find(m_records.entryPools.begin(), m_records.entryPools.end(), *pool);
    if (it != m_records.entryPools.end())
        return static_cast<uint16_t>(it - m_records.entryPools.begin() + 1);
    if (m_records.entryPools.size() >= std::numeric_limits<uint16_t>::max()) {
        m_records.warnOnce("more than 65,535 distinct pool_ids in the trace; the rest are ignored");
        return 0;
    }
    m_records.entryPools.push_back(*pool);
    return static_cast<uint16_t>(m_records.entryPools.size());
}

Value SnapshotBuilder::makeFrame(const Value* const* f)
{
    Frame frame;
    const Value& filename = *f[KFilename];
    const Value& name = *f[KName];
    if (filename.kind != Kind::Str || name.kind != Kind::Str)
        throw formatError("a stack frame's filename or name is not a string");
    frame.filename = StringId(filename.ref);
    frame.name = StringId(name.ref);
    frame.line = static_cast<int32_t>(integerField(f[KLine], KLine, "stack frame"));
    attributeFxFrame(frame, f);
    return Value::of(Kind::Frame, m_records.frames->intern(frame).value);
}

// augment_with_fx_traces: a frame of FX-generated code carries the node it ran (fx_node_name) and
// the model source that produced that node (fx_original_trace, a Python traceback whose last
// `File "...", line N, in F` is the model's own line). The frame becomes that line, named after
// its function and the node, so every view attributes the allocation to the model's source.
void SnapshotBuilder::attributeFxFrame(Frame& frame, const Value* const* f)
{
    const Value* trace = f[KFxOriginalTrace];
    if (!trace || trace->kind != Kind::Str)
        return;
    // A copy: interning below may move the table's storage.
    const std::string text(m_records.strings->get(StringId(trace->ref)));
    const size_t at = text.rfind("File \"");
    if (at == std::string::npos)
        return;
    const size_t fileStart = at + 6;
    const size_t fileEnd = text.find('"', fileStart);
    const size_t lineAt = text.find(", line ", fileEnd == std::string::npos ? text.size() : fileEnd);
    if (fileEnd == std::string::npos || lineAt == std::string::npos)
        return;
    int32_t line = 0;
    size_t cursor = lineAt + 7;
    while (cursor < text.size() && text[cursor] >= '0' && text[cursor] <= '9' && line < 100'000'000)
        line = line * 10 + (text[cursor++] - '0');
    std::string name;
    if (std::string_view(text).substr(cursor).starts_with(", in ")) {
        const size_t nameStart = cursor + 5;
        const size_t nameEnd = std::min(text.find('\n', nameStart), text.size());
        name = text.substr(nameStart, nameEnd - nameStart);
    }
    if (const Value* node = f[KFxNodeName]; node && node->kind == Kind::Str)
        name += std::string(name.empty() ? "" : " ") + "[fx " + std::string(m_records.strings->get(StringId(node->ref)))
            + "]";
    frame.filename = m_records.strings->intern(std::string_view(text).substr(fileStart, fileEnd - fileStart));
    frame.line = line;
    if (!name.empty())
        frame.name = m_records.strings->intern(name);
}

Value SnapshotBuilder::makeBlock(const Value* const* f)
{
    static constexpr const char* record = "block";
    StagedBlock staged;
    Block& b = staged.block;
    staged.hasAddress = f[KAddress] && f[KAddress]->kind == Kind::Int;
    b.address = static_cast<uint64_t>(integerField(f[KAddress], KAddress, record));
    b.size = static_cast<uint64_t>(integerField(f[KSize], KSize, record));
    b.requestedSize = static_cast<uint64_t>(integerField(f[KRequestedSize], KRequestedSize, record));
    b.state = stateOf(*f[KState]);
    b.stack = stackOf(f[KFrames], record);
    if (f[KHistory]) {
        m_records.sawHistory = true;
        // 1.13/2.0: history[0] is the allocation that currently owns the block.
        if (const auto* range = m_records.recordsOf(*f[KHistory], Kind::History); range && range->count > 0) {
            const History& current = m_histories[range->first];
            if (b.stack == FrameTable::emptyStack())
                b.stack = current.stack;
            if (!f[KRequestedSize])
                b.requestedSize = current.realSize;
        } else if (f[KHistory]->kind != Kind::EmptyList) {
            m_records.warnOnce("a block's history is not a list of history entries; ignored");
        }
    }
    const auto index = static_cast<uint32_t>(m_records.blocks.size());
    m_records.blocks.push_back(staged);
    return Value::of(Kind::Block, index);
}

Value SnapshotBuilder::makeHistory(const Value* const* f)
{
    History h;
    h.addr = static_cast<uint64_t>(integerField(f[KAddr], KAddr, "history entry"));
    h.realSize = static_cast<uint64_t>(integerField(f[KRealSize], KRealSize, "history entry"));
    h.stack = stackOf(f[KFrames], "history entry");
    const auto index = static_cast<uint32_t>(m_histories.size());
    m_histories.push_back(h);
    return Value::of(Kind::History, index);
}

Value SnapshotBuilder::makeSegment(const Value* const* f)
{
    static constexpr const char* record = "segment";
    Segment s;
    s.device = static_cast<int32_t>(integerField(f[KDevice], KDevice, record));
    s.address = static_cast<uint64_t>(integerField(f[KAddress], KAddress, record));
    s.totalSize = static_cast<uint64_t>(integerField(f[KTotalSize], KTotalSize, record));
    s.allocatedSize = static_cast<uint64_t>(integerField(f[KAllocatedSize], KAllocatedSize, record));
    s.activeSize = static_cast<uint64_t>(integerField(f[KActiveSize], KActiveSize, record));
    s.requestedSize = static_cast<uint64_t>(integerField(f[KRequestedSize], KRequestedSize, record));
    s.stream = integerField(f[KStream], KStream, record);
    s.isExpandable = integerField(f[KIsExpandable], KIsExpandable, record) != 0;
    s.stack = stackOf(f[KFrames], record);
    if (const Value* type = f[KSegmentType]) {
        if (type->kind == Kind::Str && type->ref == segmentTypeBase + 1)
            s.isLargePool = false;
        else if (type->kind != Kind::Str || type->ref != segmentTypeBase)
            m_records.warnOnce("unknown segment_type " + m_records.displayText(*type) + "; treated as large");
    }
    if (const auto pool = poolIdOf(f[KSegmentPoolId]))
        s.pool = *pool;
    if (const Value* blocks = f[KBlocks]) {
        if (const auto* range = m_records.recordsOf(*blocks, Kind::Block)) {
            s.firstBlock = range->first;
            s.blockCount = range->count;
            // Before ~2.1 blocks carry no address: they tile the segment in order.
            uint64_t addr = s.address;
            for (uint32_t i = 0; i < range->count; ++i) {
                auto& staged = m_records.blocks[range->first + i];
                if (!staged.hasAddress)
                    staged.block.address = addr;
                addr = staged.block.address + staged.block.size;
            }
        } else if (blocks->kind != Kind::EmptyList) {
            throw formatError(
                "a segment's blocks is a " + std::string(kindName(blocks->kind)) + ", not a list of blocks");
        }
    }
    const auto index = static_cast<uint32_t>(m_records.segments.size());
    m_records.segments.push_back(s);
    return Value::of(Kind::Segment, index);
}

StringId SnapshotBuilder::optionalText(const Value* value, uint32_t key, const char* record) const
{
    if (!value || value->kind == Kind::None)
        return {};
    if (value->kind != Kind::Str)
        throw formatError(std::string("the ") + record + " field '" + std::string(keyNames[key]) + "' is a "
            + kindName(value->kind) + ", expected a string");
    return StringId(value->ref) == m_emptyString ? StringId() : StringId(value->ref);
}

StackId SnapshotBuilder::stackOf(const Value* value, const char* record)
{
    if (!value || value->kind == Kind::EmptyList || value->kind == Kind::None)
        return FrameTable::emptyStack();
    if (value->kind == Kind::Stack)
        return StackId(value->ref);
    if (value->kind == Kind::Deferred)
        deferredValueUsed();
    m_records.warnOnce(std::string("a ") + record + "'s frames are not a list of stack frames; ignored");
    return FrameTable::emptyStack();
}

TraceAction SnapshotBuilder::actionOf(const Value& value)
{
    if (value.kind != Kind::Str)
        throw formatError(std::string("a trace entry's action is a ") + kindName(value.kind) + ", expected a string");
    if (value.ref >= actionBase && value.ref < actionBase + actionCount)
        return static_cast<TraceAction>(value.ref - actionBase);
    if (m_warnedIds.insert((uint64_t('a') << 32) | value.ref).second)
        m_records.warnOnce("unknown trace action '" + std::string(textOf(value)) + "' kept as unknown");
    return TraceAction::Unknown;
}

BlockState SnapshotBuilder::stateOf(const Value& value)
{
    if (value.kind == Kind::Str) {
        switch (value.ref) {
        case stateBase:
            return BlockState::ActiveAllocated;
        case stateBase + 1:
        case stateBase + 3: // the _snapshot() docstring's spelling
            return BlockState::ActivePendingFree;
        case stateBase + 2:
            return BlockState::Inactive;
        default:
            break;
        }
    }
    m_records.warnOnce("unknown block state " + m_records.displayText(value) + " kept as unknown");
    return BlockState::Unknown;
}

void SnapshotBuilder::warnUnknownKeys(const std::vector<Value>& items, const char* record)
{
    for (size_t i = 0; i < items.size(); i += 2) {
        const Value& key = items[i];
        if (key.kind == Kind::Str && key.ref < KeyCount)
            continue;
        if (key.kind == Kind::Deferred)
            deferredValueUsed();
        // Checked by id first: a key repeated in every trace entry must not cost a string each time.
        if (key.kind == Kind::Str && !m_warnedIds.insert((uint64_t(record[0]) << 32) | key.ref).second)
            continue;
        m_records.warnOnce(std::string("ignored unknown ") + record + " key " + m_records.displayText(key));
    }
}

// A fork for a second decoder (nativeunpicklersplit.cpp): made from a builder in the middle of a
// trace list, it reads the list's later items on another thread; the builder then takes its trace
// entries over, their ids translated by ForkIds.
std::unique_ptr<SnapshotBuilder> SnapshotBuilder::forkForItems() const
{
    auto fork = std::make_unique<SnapshotBuilder>();
    fork->m_records.strings = std::make_shared<StringTable>(*m_records.strings);
    fork->m_records.frames = std::make_shared<FrameTable>(*m_records.frames);
    fork->m_stackSlots = m_stackSlots;
    fork->m_stackHashes = m_stackHashes;
    fork->m_stackCached = m_stackCached;
    fork->m_records.entryPools = m_records.entryPools;
    fork->m_records.warned = m_records.warned;
    fork->m_warnedIds = m_warnedIds;
    fork->m_emptyString = m_emptyString;
    fork->m_forkedAt = ForkIds::at(m_records);
    return fork;
}

bool SnapshotBuilder::canAdopt(uint32_t list, const SnapshotBuilder& fork, uint32_t forkList) const
{
    if (!isEventList(list) || forkList >= fork.m_open.size())
        return false;
    const OpenContainer& items = fork.m_open[forkList];
    const bool eventsOnly = items.kind == Kind::List && items.items.empty() && items.frames.empty()
        && (items.recordKind == Kind::Event || (items.recordKind == Kind::None && fork.m_events.empty()))
        && items.first == 0 && items.count == fork.m_events.size();
    const bool nothingElse = fork.m_records.nodes.empty() && fork.m_records.ranges.empty()
        && fork.m_records.eventLists.empty() && fork.m_records.blocks.empty() && fork.m_records.segments.empty()
        && fork.m_histories.empty() && fork.m_records.annotations.empty() && !fork.m_records.sawHistory;
    // The list's entries stay contiguous, and every pool keeps an index (entryPoolOf's limit).
    const OpenContainer& mine = m_open[list];
    const bool contiguous = mine.first + mine.count == m_events.size();
    const bool fits = m_events.size() + fork.m_events.size() < std::numeric_limits<uint32_t>::max()
        && m_records.entryPools.size() + fork.m_records.entryPools.size() < std::numeric_limits<uint16_t>::max();
    return eventsOnly && nothingElse && contiguous && fits;
}

ForkIds SnapshotBuilder::adoptItems(uint32_t list, SnapshotBuilder& fork)
{
    ForkIds ids = fork.m_forkedAt;
    ids.adopt(fork.m_records, m_records);
    ids.firstEvent = static_cast<uint32_t>(m_events.size());
    ids.renumber(fork.m_events);
    m_open[list].count += static_cast<uint32_t>(fork.m_events.size());
    m_eventsStaged += fork.m_events.size();
    appendMovingPages(m_events, fork.m_events);
    fork.m_events = {};
    if (m_events.size() >= m_eventsAhead.due)
        prefaultEvents();
    for (const std::string& warning : fork.m_records.warnings)
        m_records.warnOnce(warning);
    return ids;
}

} // namespace oomlens::pickle
