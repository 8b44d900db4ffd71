#include "core/presentation/pinnedhostjson.h"

#include "core/analysis/pinnedhostmemory.h"

namespace oomlens {

using json = nlohmann::ordered_json;

json pinnedHostMemoryToJson(const Case&, const CaseAnalysis& analysis)
{
    json all = json::array();
    for (size_t i = 0; i < analysis.snapshots.size(); ++i) {
        const SnapshotAnalysis& snapshot = analysis.snapshots[i];
        const auto host = snapshot.snapshot ? pinnedHostTimeline(*snapshot.snapshot) : std::nullopt;
        if (!host) {
            all.push_back(nullptr);
            continue;
        }
        json atOom = nullptr;
        const DeviceAnalysis* device = snapshot.primary();
        if (device && !device->ooms.empty()) {
            if (const auto state = host->at(device->ooms.front().timeUs)) {
                atOom = { { "device", device->device }, { "time_us", device->ooms.front().timeUs },
                    { "allocated_bytes", state->allocated }, { "reserved_bytes", state->reserved } };
            }
        }
        all.push_back({ { "snapshot", i }, { "segments", host->segmentsAtDump },
            { "live_blocks", host->liveBlocksAtDump }, { "reserved_bytes", host->reservedAtDump },
            { "allocated_bytes", host->allocatedAtDump },
            { "trace_events", host->hasTrace() ? host->points.size() - 1 : 0 }, { "alloc_events", host->allocEvents },
            { "peak_reserved_bytes", host->peakReserved }, { "peak_allocated_bytes", host->peakAllocated },
            { "peak_time_us", host->hasTrace() ? json(host->peakAllocatedTimeUs) : json(nullptr) },
            { "older_than_trace_bytes", host->olderAllocated }, { "at_oom", std::move(atOom) } });
    }
    return all;
}

} // namespace oomlens
