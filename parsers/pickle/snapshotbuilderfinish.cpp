#include "parsers/pickle/snapshotbuilder.h"

// SnapshotBuilder::finish(): from the decoded top-level value to the Snapshot. The rest of the
// builder (recognising containers as they close) is in snapshotbuilder.cpp.

namespace oomlens::pickle {

namespace {

DecodeError formatError(const std::string& message)
{
    return DecodeError(ErrorKind::Format, message);
}

} // namespace

Snapshot SnapshotBuilder::finish(const Value& root)
{
    Snapshot snapshot;
    const Value* segments = nullptr;
    if (recordsOf(root, Kind::Segment) || root.kind == Kind::EmptyList) {
        snapshot.era = Snapshot::Era::SegmentList; // memory_snapshot(): a bare list of segments
        segments = &root;
    } else if (const Node* top = nodeOf(root, Kind::Dict)) {
        snapshot.era = Snapshot::Era::Traces;
        for (size_t i = 0; i + 1 < top->items.size(); i += 2) {
            const Value& key = top->items[i];
            const Value& value = top->items[i + 1];
            switch (key.kind == Kind::Str ? key.ref : uint32_t(KeyCount)) {
            case KSegments:
                segments = &value;
                break;
            case KDeviceTraces:
                readTraces(value, snapshot);
                break;
            case KAllocatorSettings:
                if (const Node* settings = nodeOf(value, Kind::Dict))
                    readSettings(*settings, snapshot);
                else
                    warnOnce("allocator_settings is not a dict; ignored");
                break;
            case KExternalAnnotations:
                if (const auto* range = recordsOf(value, Kind::Annotation)) {
                    snapshot.annotations.assign(
                        m_annotations.begin() + range->first, m_annotations.begin() + range->first + range->count);
                } else if (const Node* list = nodeOf(value, Kind::List)) {
                    for (const Value& item : list->items) {
                        if (const Node* dict = nodeOf(item, Kind::Dict))
                            snapshot.annotations.push_back(makeAnnotation(dict->items));
                    }
                }
                break;
            case KHostSegments:
            case KHostTraces:
                readHostMemory(key.ref, value, snapshot);
                break;
            default:
                warnOnce("ignored unknown top-level key " + displayText(key));
                break;
            }
        }
        if (!segments)
            throw formatError("not a memory snapshot: the top-level dict has no 'segments'");
        if (m_sawHistory)
            snapshot.era = Snapshot::Era::BlockHistory;
    } else {
        throw formatError(std::string("not a memory snapshot: the top level is a ") + kindName(root.kind)
            + ", expected a dict or a list of segments");
    }

    if (const auto* range = recordsOf(*segments, Kind::Segment)) {
        snapshot.segments.reserve(range->count);
        size_t mismatched = 0;
        for (uint32_t i = 0; i < range->count; ++i) {
            Segment segment = m_segments[range->first + i];
            const uint32_t first = segment.firstBlock;
            segment.firstBlock = static_cast<uint32_t>(snapshot.blocks.size());
            uint64_t sum = 0;
            for (uint32_t b = 0; b < segment.blockCount; ++b) {
                snapshot.blocks.push_back(m_blocks[first + b].block);
                sum += m_blocks[first + b].block.size;
            }
            if (segment.blockCount > 0 && sum != segment.totalSize)
                ++mismatched;
            snapshot.segments.push_back(segment);
        }
        if (mismatched > 0)
            warnOnce(std::to_string(mismatched) + " segment(s) whose block sizes do not add up to total_size");
    } else if (segments->kind != Kind::EmptyList) {
        throw formatError(std::string("not a memory snapshot: 'segments' is a ") + kindName(segments->kind)
            + ", expected a list of segments");
    }

    snapshot.entryPools = std::move(m_entryPools);
    snapshot.strings = m_strings;
    snapshot.frames = m_frames;
    snapshot.warnings = std::move(m_warnings);
    return snapshot;
}

void SnapshotBuilder::readTraces(const Value& value, Snapshot& snapshot)
{
    if (value.kind == Kind::EmptyList)
        return;
    const Node* list = nodeOf(value, Kind::List);
    if (!list)
        throw formatError(std::string("device_traces is a ") + kindName(value.kind) + ", expected a list per device");
    snapshot.traces.resize(list->items.size());
    for (size_t device = 0; device < list->items.size(); ++device) {
        const Value& item = list->items[device];
        snapshot.traces[device].device = static_cast<int32_t>(device);
        if (const auto* range = recordsOf(item, Kind::Event))
            snapshot.traces[device].events = std::move(m_eventLists[range->first]);
        else if (item.kind != Kind::EmptyList)
            throw formatError("device_traces[" + std::to_string(device) + "] is a " + kindName(item.kind)
                + ", expected a list of trace entries");
    }
}

void SnapshotBuilder::readSettings(const Node& node, Snapshot& snapshot)
{
    AllocatorSettings settings;
    for (size_t i = 0; i + 1 < node.items.size(); i += 2) {
        const Value& key = node.items[i];
        const Value& value = node.items[i + 1];
        const bool isInt = value.kind == Kind::Int || value.kind == Kind::Bool;
        switch (key.kind == Kind::Str ? key.ref : uint32_t(KeyCount)) {
        case KAllocConf:
            if (value.kind == Kind::Str)
                settings.allocConf = std::string(textOf(value));
            break;
        case KMaxSplitSize:
            if (isInt)
                settings.maxSplitSize = value.i;
            break;
        case KGcThreshold:
            if (value.kind == Kind::Float)
                settings.garbageCollectionThreshold = value.f;
            else if (isInt)
                settings.garbageCollectionThreshold = static_cast<double>(value.i);
            break;
        case KExpandableSegments:
            settings.expandableSegments = isInt && value.i != 0;
            break;
        case KReleaseLock:
            settings.releaseLockOnCudaMalloc = isInt && value.i != 0;
            break;
        case KPinnedHostRegister:
            settings.pinnedUseCudaHostRegister = isInt && value.i != 0;
            break;
        case KPinnedThreads:
            if (isInt)
                settings.pinnedNumRegisterThreads = value.i;
            break;
        case KRoundup:
            if (const Node* divisions = nodeOf(value, Kind::Dict)) {
                for (size_t d = 0; d + 1 < divisions->items.size(); d += 2) {
                    const Value& count = divisions->items[d + 1];
                    if (count.kind == Kind::Int)
                        settings.roundupPower2Divisions.emplace_back(displayText(divisions->items[d]), count.i);
                }
            }
            break;
        default:
            break; // newer settings (graph_capture_record_stream_reuse, ...) are not used
        }
    }
    snapshot.allocatorSettings = std::move(settings);
}

} // namespace oomlens::pickle
