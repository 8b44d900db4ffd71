#include "parsers/pickle/snapshotassembler.h"

#include <utility>

namespace oomlens::pickle {

namespace {

DecodeError formatError(const std::string& message)
{
    return DecodeError(ErrorKind::Format, message);
}

} // namespace

SnapshotAssembler::SnapshotAssembler(DecodedRecords records)
    : m_records(std::move(records))
{ }

Snapshot SnapshotAssembler::assemble(const Value& root)
{
    Snapshot snapshot;
    const Value* segments = nullptr;
    if (m_records.recordsOf(root, Kind::Segment) || root.kind == Kind::EmptyList) {
        snapshot.era = Snapshot::Era::SegmentList; // memory_snapshot(): a bare list of segments
        segments = &root;
    } else if (const DecodedRecords::Node* top = m_records.nodeOf(root, Kind::Dict)) {
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
                if (const DecodedRecords::Node* settings = m_records.nodeOf(value, Kind::Dict))
                    readSettings(*settings, snapshot);
                else
                    m_records.warnOnce("allocator_settings is not a dict; ignored");
                break;
            case KExternalAnnotations:
                readAnnotations(value, snapshot);
                break;
            case KHostSegments:
            case KHostTraces:
                readHostMemory(key.ref, value, snapshot);
                break;
            default:
                m_records.warnOnce("ignored unknown top-level key " + m_records.displayText(key));
                break;
            }
        }
        if (!segments)
            throw formatError("not a memory snapshot: the top-level dict has no 'segments'");
        if (m_records.sawHistory)
            snapshot.era = Snapshot::Era::BlockHistory;
    } else {
        throw formatError(std::string("not a memory snapshot: the top level is a ") + kindName(root.kind)
            + ", expected a dict or a list of segments");
    }
    readSegments(*segments, snapshot);

    snapshot.entryPools = std::move(m_records.entryPools);
    snapshot.strings = m_records.strings;
    snapshot.frames = m_records.frames;
    snapshot.warnings = std::move(m_records.warnings);
    return snapshot;
}

void SnapshotAssembler::readSegments(const Value& value, Snapshot& snapshot)
{
    if (const auto* range = m_records.recordsOf(value, Kind::Segment)) {
        snapshot.segments.reserve(range->count);
        size_t mismatched = 0;
        for (uint32_t i = 0; i < range->count; ++i) {
            Segment segment = m_records.segments[range->first + i];
            const uint32_t first = segment.firstBlock;
            segment.firstBlock = static_cast<uint32_t>(snapshot.blocks.size());
            uint64_t sum = 0;
            for (uint32_t b = 0; b < segment.blockCount; ++b) {
                snapshot.blocks.push_back(m_records.blocks[first + b].block);
                sum += m_records.blocks[first + b].block.size;
            }
            if (segment.blockCount > 0 && sum != segment.totalSize)
                ++mismatched;
            snapshot.segments.push_back(segment);
        }
        if (mismatched > 0)
            m_records.warnOnce(
                std::to_string(mismatched) + " segment(s) whose block sizes do not add up to total_size");
    } else if (value.kind != Kind::EmptyList) {
        throw formatError(std::string("not a memory snapshot: 'segments' is a ") + kindName(value.kind)
            + ", expected a list of segments");
    }
}

void SnapshotAssembler::readTraces(const Value& value, Snapshot& snapshot)
{
    if (value.kind == Kind::EmptyList)
        return;
    const DecodedRecords::Node* list = m_records.nodeOf(value, Kind::List);
    if (!list)
        throw formatError(std::string("device_traces is a ") + kindName(value.kind) + ", expected a list per device");
    snapshot.traces.resize(list->items.size());
    for (size_t device = 0; device < list->items.size(); ++device) {
        const Value& item = list->items[device];
        snapshot.traces[device].device = static_cast<int32_t>(device);
        if (const auto* range = m_records.recordsOf(item, Kind::Event))
            snapshot.traces[device].events = std::move(m_records.eventLists[range->first]);
        else if (item.kind != Kind::EmptyList)
            throw formatError("device_traces[" + std::to_string(device) + "] is a " + kindName(item.kind)
                + ", expected a list of trace entries");
    }
}

void SnapshotAssembler::readSettings(const DecodedRecords::Node& node, Snapshot& snapshot)
{
    AllocatorSettings settings;
    for (size_t i = 0; i + 1 < node.items.size(); i += 2) {
        const Value& key = node.items[i];
        const Value& value = node.items[i + 1];
        const bool isInt = value.kind == Kind::Int || value.kind == Kind::Bool;
        switch (key.kind == Kind::Str ? key.ref : uint32_t(KeyCount)) {
        case KAllocConf:
            if (value.kind == Kind::Str)
                settings.allocConf = std::string(m_records.textOf(value));
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
            if (const DecodedRecords::Node* divisions = m_records.nodeOf(value, Kind::Dict)) {
                for (size_t d = 0; d + 1 < divisions->items.size(); d += 2) {
                    const Value& count = divisions->items[d + 1];
                    if (count.kind == Kind::Int)
                        settings.roundupPower2Divisions.emplace_back(
                            m_records.displayText(divisions->items[d]), count.i);
                }
            }
            break;
        default:
            break; // newer settings (graph_capture_record_stream_reuse, ...) are not used
        }
    }
    snapshot.allocatorSettings = std::move(settings);
}

// Annotations the builder recognised as they closed, or a list of dicts it did not (an entry
// without device or time_us), read as annotations all the same.
void SnapshotAssembler::readAnnotations(const Value& value, Snapshot& snapshot)
{
    if (const auto* range = m_records.recordsOf(value, Kind::Annotation)) {
        snapshot.annotations.assign(
            m_records.annotations.begin() + range->first, m_records.annotations.begin() + range->first + range->count);
    } else if (const DecodedRecords::Node* list = m_records.nodeOf(value, Kind::List)) {
        for (const Value& item : list->items) {
            if (const DecodedRecords::Node* dict = m_records.nodeOf(item, Kind::Dict))
                snapshot.annotations.push_back(m_records.annotation(dict->items));
        }
    }
}

// Pinned host memory (`host_segments`, `host_traces`; PyTorch 2.14+ with
// record_pinned_host_memory=True). PyTorch's CachingHostAllocator records them with the same
// profiling code as the CUDA allocator (pytorch#182407), so the builder already recognised their
// dicts as segments, blocks and trace entries while decoding; here they are moved into
// Snapshot::hostMemory instead of the device lists. Empty lists leave Snapshot::hostMemory unset:
// they say nothing was pinned while recording, or that the host side was not recorded at all,
// and either way there is nothing to show.
void SnapshotAssembler::readHostMemory(uint32_t key, const Value& value, Snapshot& snapshot)
{
    auto hostMemory = [&]() -> PinnedHostMemory& {
        return snapshot.hostMemory ? *snapshot.hostMemory : snapshot.hostMemory.emplace();
    };
    if (key == KHostSegments) {
        if (const auto* range = m_records.recordsOf(value, Kind::Segment)) {
            PinnedHostMemory& host = hostMemory();
            for (uint32_t i = 0; i < range->count; ++i) {
                Segment segment = m_records.segments[range->first + i];
                const uint32_t first = segment.firstBlock;
                segment.firstBlock = static_cast<uint32_t>(host.blocks.size());
                for (uint32_t b = 0; b < segment.blockCount; ++b)
                    host.blocks.push_back(m_records.blocks[first + b].block);
                host.segments.push_back(segment);
            }
        } else if (value.kind != Kind::EmptyList) {
            m_records.warnOnce(
                std::string("host_segments is a ") + kindName(value.kind) + ", not a list of segments; ignored");
        }
        return;
    }
    // One allocator, so one list of entries; a list per device (the device_traces shape) is read
    // too, its lists joined in order.
    auto take = [&](const Value& list) {
        if (const auto* range = m_records.recordsOf(list, Kind::Event)) {
            auto& events = m_records.eventLists[range->first];
            PinnedHostMemory& host = hostMemory();
            host.events.insert(host.events.end(), events.begin(), events.end());
            events = {};
            return true;
        }
        return list.kind == Kind::EmptyList;
    };
    if (take(value))
        return;
    if (const DecodedRecords::Node* lists = m_records.nodeOf(value, Kind::List)) {
        for (const Value& item : lists->items) {
            if (!take(item))
                m_records.warnOnce("an entry of host_traces is not a list of trace entries; ignored");
        }
        return;
    }
    m_records.warnOnce(
        std::string("host_traces is a ") + kindName(value.kind) + ", not a list of trace entries; ignored");
}

} // namespace oomlens::pickle
