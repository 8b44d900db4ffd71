#pragma once

#include "core/snapshot.h"
#include "parsers/pickle/picklevalue.h"
#include "parsers/pickle/snapshotkeys.h"

#include <memory>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

namespace oomlens::pickle {

// What SnapshotBuilder made of the containers it recognised while decoding: the interned tables,
// the records of each kind, the few containers it kept generic and the warnings so far. The
// builder fills it; SnapshotAssembler takes it over once the top-level value is known and reads
// the Snapshot out of it. A Value of kind Records, Segment, Block... refers into these tables.
struct DecodedRecords
{
    // A container the model does not know (the top-level dict, allocator settings), kept as is.
    struct Node
    {
        Kind kind;
        std::vector<Value> items; // dicts: key, value, key, value...
    };
    // A closed list of records of one kind.
    struct RecordRange
    {
        Kind kind;
        uint32_t first; // for events: index into eventLists
        uint32_t count;
    };
    struct StagedBlock
    {
        Block block;
        bool hasAddress = false;
    };

    std::shared_ptr<StringTable> strings;
    std::shared_ptr<FrameTable> frames;
    std::vector<Node> nodes;
    std::vector<RecordRange> ranges;
    std::vector<std::vector<TraceEvent>> eventLists;
    std::vector<StagedBlock> blocks;
    std::vector<Segment> segments; // firstBlock/blockCount index blocks until assembled
    std::vector<Annotation> annotations;
    std::vector<PoolId> entryPools; // Snapshot::entryPools
    std::vector<std::string> warnings;
    std::unordered_set<std::string> warned;
    bool sawHistory = false;

    const RecordRange* recordsOf(const Value& value, Kind kind) const
    {
        if (value.kind != Kind::Records || ranges[value.ref].kind != kind)
            return nullptr;
        return &ranges[value.ref];
    }
    const Node* nodeOf(const Value& value, Kind kind) const
    {
        if (value.kind != kind)
            return nullptr;
        return &nodes[value.ref];
    }
    std::string_view textOf(const Value& value) const { return strings->get(StringId(value.ref)); }
    // A key or value as a warning or an annotation field shows it.
    std::string displayText(const Value& value) const;
    // A dict's items (key, value, ...) as an annotation: device and time_us, the rest as fields.
    Annotation annotation(const std::vector<Value>& items) const;
    void warnOnce(const std::string& text);
};

// A record's integer field; an absent or None field reads 0. Throws DecodeError otherwise.
inline int64_t integerField(const Value* value, uint32_t key, const char* record)
{
    if (!value)
        return 0;
    switch (value->kind) {
    case Kind::Int:
    case Kind::Bool:
        return value->i;
    case Kind::None:
        return 0; // hand-made snapshots (_profile_to_snapshot) leave some addresses None
    case Kind::BigInt:
        throw DecodeError(ErrorKind::Format,
            std::string("the ") + record + " field '" + std::string(keyNames[key]) + "' does not fit in 64 bits");
    default:
        throw DecodeError(ErrorKind::Format,
            std::string("the ") + record + " field '" + std::string(keyNames[key]) + "' is a " + kindName(value->kind)
                + ", expected an integer");
    }
}

// A Kind::Deferred value (stored by the other half of a split list) met where it cannot wait.
[[noreturn]] void deferredValueUsed();

} // namespace oomlens::pickle
