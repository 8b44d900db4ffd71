#include "parsers/pickle/snapshotbuilder.h"

// Pinned host memory (`host_segments`, `host_traces`; PyTorch 2.14+ with
// record_pinned_host_memory=True). PyTorch's CachingHostAllocator records them with the same
// profiling code as the CUDA allocator (pytorch#182407), so the builder already recognised their
// dicts as segments, blocks and trace entries while decoding; here they are moved into
// Snapshot::hostMemory instead of the device lists.

namespace oomlens::pickle {

// Empty lists leave Snapshot::hostMemory unset: they say nothing was pinned while recording, or
// that the host side was not recorded at all, and either way there is nothing to show.
void SnapshotBuilder::readHostMemory(uint32_t key, const Value& value, Snapshot& snapshot)
{
    auto hostMemory = [&]() -> PinnedHostMemory& {
        return snapshot.hostMemory ? *snapshot.hostMemory : snapshot.hostMemory.emplace();
    };
    if (key == KHostSegments) {
        if (const auto* range = recordsOf(value, Kind::Segment)) {
            PinnedHostMemory& host = hostMemory();
            for (uint32_t i = 0; i < range->count; ++i) {
                Segment segment = m_segments[range->first + i];
                const uint32_t first = segment.firstBlock;
                segment.firstBlock = static_cast<uint32_t>(host.blocks.size());
                for (uint32_t b = 0; b < segment.blockCount; ++b)
                    host.blocks.push_back(m_blocks[first + b].block);
                host.segments.push_back(segment);
            }
        } else if (value.kind != Kind::EmptyList) {
            warnOnce(std::string("host_segments is a ") + kindName(value.kind) + ", not a list of segments; ignored");
        }
        return;
    }
    // One allocator, so one list of entries; a list per device (the device_traces shape) is read
    // too, its lists joined in order.
    auto take = [&](const Value& list) {
        if (const auto* range = recordsOf(list, Kind::Event)) {
            auto& events = m_eventLists[range->first];
            PinnedHostMemory& host = hostMemory();
            host.events.insert(host.events.end(), events.begin(), events.end());
            events = {};
            return true;
        }
        return list.kind == Kind::EmptyList;
    };
    if (take(value))
        return;
    if (const Node* lists = nodeOf(value, Kind::List)) {
        for (const Value& item : lists->items) {
            if (!take(item))
                warnOnce("an entry of host_traces is not a list of trace entries; ignored");
        }
        return;
    }
    warnOnce(std::string("host_traces is a ") + kindName(value.kind) + ", not a list of trace entries; ignored");
}

} // namespace oomlens::pickle
