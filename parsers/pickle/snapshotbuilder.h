#pragma once

#include "core/pageprefaulter.h"
#include "core/snapshot.h"
#include "parsers/pickle/decodedrecords.h"
#include "parsers/pickle/forkids.h"
#include "parsers/pickle/picklevalue.h"
#include "parsers/pickle/snapshotkeys.h"

#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace oomlens::pickle {

// Builds the compact Snapshot model while values are decoded. Containers are recognised the
// moment they close: a dict with filename/name becomes an interned frame, a list of frames an
// interned stack, a dict with "action" a TraceEvent appended to the model, and so on. Only the
// few containers the model does not know (the top-level dict, allocator settings) are kept as
// generic nodes, so a million-event trace never exists as an object tree.
class SnapshotBuilder final : public ValueBuilder
{
public:
    SnapshotBuilder();
    ~SnapshotBuilder() override;

    // Size of the encoded input: lets the event buffer be reserved once instead of regrown.
    void setSizeHint(uint64_t bytes) { m_sizeHint = bytes; }

    Value text(std::string_view utf8) override;
    Value bytes(std::string_view data) override;
    uint32_t open(Kind kind) override;
    Value close(uint32_t handle) override;

    // The calls made for nearly every opcode are inline: the native decoder calls them on this
    // final class directly.
    void append(uint32_t handle, const Value& item) override
    {
        auto& c = m_open[handle];
        if (item.kind == Kind::Frame && c.kind == Kind::List && c.items.empty() && c.recordKind == Kind::None) {
            c.frames.push_back(FrameId(item.ref));
            return;
        }
        appendSlow(c, item);
    }
    void appendMany(uint32_t handle, const Value* items, size_t count)
    {
        for (size_t i = 0; i < count; ++i)
            append(handle, items[i]);
    }
    // Where a list that holds only frames so far takes more of them, or null when it is not one.
    // The native decoder writes a whole batch of frame references straight into it.
    std::vector<FrameId>* frameSink(uint32_t handle)
    {
        auto& c = m_open[handle];
        return c.kind == Kind::List && c.items.empty() && c.recordKind == Kind::None ? &c.frames : nullptr;
    }
    // The decoder recognised a fresh list by its encoded bytes as one seen before: the list
    // closes as that stack without its frames being read again.
    void presetStack(uint32_t handle, StackId id)
    {
        auto& c = m_open[handle];
        c.frames.clear();
        c.recordKind = Kind::Stack;
        c.first = id.value;
    }
    // The stack a list of only frames would close as, for the decoder to reuse.
    StackId stackSoFar(uint32_t handle) { return internStack(m_open[handle]); }
    // Finished keys and values, alternating.
    void setItems(uint32_t handle, const Value* pairs, size_t count)
    {
        auto& items = m_open[handle].items;
        items.insert(items.end(), pairs, pairs + count);
    }
    void setItem(uint32_t handle, const Value& key, const Value& value) override
    {
        auto& items = m_open[handle].items;
        items.push_back(key);
        items.push_back(value);
    }
    Value again(const Value& value) override
    {
        if (isRecord(value.kind) || value.kind == Kind::Records) [[unlikely]]
            sharedRecord(value.kind);
        return value;
    }

    // Turns the decoded top-level value into the model (SnapshotAssembler). Throws DecodeError
    // when the value is not a memory snapshot. The builder is spent afterwards.
    Snapshot finish(const Value& root);

    std::string_view textOf(const Value& value) const { return m_records.textOf(value); }

    // Splitting one trace list between two decoders (nativeunpicklersplit.cpp). forkForItems()
    // copies what the values decoded so far refer to (strings, frames, stacks, entry pools,
    // warnings given), so that a second builder can read the list's later items while this one
    // reads the items before them. isEventList() tells the list a fork can take part of.
    bool isEventList(uint32_t handle) const
    {
        return handle < m_open.size() && m_open[handle].kind == Kind::List && m_open[handle].recordKind == Kind::Event;
    }
    std::unique_ptr<SnapshotBuilder> forkForItems() const;
    // A fork's trace entry whose frames are a memo slot the fork does not have (Kind::Deferred):
    // the builder's own half of the list stored it, or the fork did before it knew the slot's number.
    struct DeferredStack
    {
        uint32_t event = 0; // index in the fork's entries
        uint32_t memoIndex = 0;
        uint64_t storedBefore = 0; // the fork's memo slots stored when the entry was read
    };
    const std::vector<DeferredStack>& deferredStacks() const { return m_deferredStacks; }
    // A fork's resolver for the other deferred values it meets, a dict's keys and its string
    // values (an action, a compile context first stored since the split began): they are needed
    // to read the entry, so the fork asks (and waits) for them. Unset, such a value fails the fork.
    std::function<Value(const Value& deferred)> resolveDeferred;
    void setStack(uint32_t event, StackId stack) { m_events[event].stack = stack; }
    // Whether `fork` holds nothing but the items of its open list `forkList`, trace entries that
    // adoptItems() can append to this builder's open event list `list`.
    bool canAdopt(uint32_t list, const SnapshotBuilder& fork, uint32_t forkList) const;
    // Appends the fork's trace entries to `list` as if this builder had read them itself: its new
    // strings, frames and stacks interned here in the order the fork met them, so every id is the
    // one a single builder would have given. Call only when canAdopt().
    ForkIds adoptItems(uint32_t list, SnapshotBuilder& fork);

    // Limits that keep hostile input from exhausting memory.
    static constexpr uint32_t maxOpenContainers = 1u << 20;

private:
    struct OpenContainer
    {
        Kind kind = Kind::List;
        Kind recordKind = Kind::None;
        uint32_t first = 0;
        uint32_t count = 0;
        std::vector<FrameId> frames; // a list holding only frames so far keeps them here, not in items
        std::vector<Value> items; // dicts: key, value, key, value...
    };
    using Node = DecodedRecords::Node;
    using StagedBlock = DecodedRecords::StagedBlock;
    struct History
    {
        uint64_t addr = 0;
        uint64_t realSize = 0;
        StackId stack = FrameTable::emptyStack();
    };

    void appendSlow(OpenContainer& c, const Value& item);
    void appendRecord(OpenContainer& c, const Value& item);
    [[noreturn]] static void mixedList(Kind kind);
    [[noreturn]] static void sharedRecord(Kind kind);
    StackId internStack(const OpenContainer& c);
    Value closeDict(OpenContainer& c);
    void spillFrames(OpenContainer& c);
    Value closeList(OpenContainer& c);
    Value retain(OpenContainer& c);

    Value makeEvent(const Value* const* fields, const std::vector<Value>& items);
    Value makeFrame(const Value* const* fields);
    void attributeFxFrame(Frame& frame, const Value* const* fields);
    Value makeBlock(const Value* const* fields);
    Value makeSegment(const Value* const* fields);
    Value makeHistory(const Value* const* fields);

    StackId stackOf(const Value* value, const char* record);
    StringId optionalText(const Value* value, uint32_t key, const char* record) const;
    TraceAction actionOf(const Value& value);
    std::optional<PoolId> poolIdOf(const Value* value) const;
    uint16_t entryPoolOf(const Value* value);
    BlockState stateOf(const Value& value);
    void warnUnknownKeys(const std::vector<Value>& items, const char* record);

    // Everything recognised so far; finish() hands it to SnapshotAssembler.
    DecodedRecords m_records;

    std::vector<OpenContainer> m_open;
    std::vector<uint32_t> m_freeSlots;

    std::vector<TraceEvent> m_events; // staging for the trace list being read
    // The staging buffer's pages are faulted in on another thread, a window ahead of the events
    // written (core/pageprefaulter.h); started for big inputs only.
    void prefaultEvents();
    std::unique_ptr<PagePrefaulter> m_prefaulter;
    PagePrefaulter::Ahead m_eventsAhead;
    std::vector<History> m_histories;
    const Value* m_fields[KeyCount] = {}; // per-dict field table, reset after each dict
    // Frame lists seen before, by content hash: most lists repeat, and a fast hash plus one memcmp
    // is cheaper than the core table's byte-wise hash. Slots hold StackId + 1 (0 = empty).
    std::vector<uint32_t> m_stackSlots;
    std::vector<uint64_t> m_stackHashes;
    size_t m_stackCached = 0;

    std::unordered_set<uint64_t> m_warnedIds;
    uint64_t m_sizeHint = 0;
    StringId m_emptyString;
    uint64_t m_eventsStaged = 0;
    // A fork's starting point: what it shares with the builder it was forked from.
    ForkIds m_forkedAt;
    std::vector<DeferredStack> m_deferredStacks;
    Value resolved(const Value& deferred) const;
};

} // namespace oomlens::pickle
