#pragma once

#include "core/snapshot.h"
#include "parsers/pickle/decodedrecords.h"

namespace oomlens::pickle {

// From the decoded top-level value to the Snapshot: tells the snapshot's era by its shape (a bare
// list of segments, or the dict of memory._snapshot()), reads each top-level key (segments,
// device traces, allocator settings, annotations, pinned host memory) out of the records the
// builder made, and hands the tables over. Runs once, after decoding; the records are spent.
class SnapshotAssembler
{
public:
    explicit SnapshotAssembler(DecodedRecords records);

    // Throws DecodeError when the value is not a memory snapshot.
    Snapshot assemble(const Value& root);

private:
    void readSegments(const Value& value, Snapshot& snapshot);
    void readTraces(const Value& value, Snapshot& snapshot);
    void readSettings(const DecodedRecords::Node& node, Snapshot& snapshot);
    void readAnnotations(const Value& value, Snapshot& snapshot);
    void readHostMemory(uint32_t key, const Value& value, Snapshot& snapshot);

    DecodedRecords m_records;
};

} // namespace oomlens::pickle
