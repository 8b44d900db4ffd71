#include "core/presentation/allocationannotationsjson.h"

#include "core/analysis/allocationannotations.h"
#include "core/presentation/stackframes.h"

namespace oomlens {

using json = nlohmann::ordered_json;

namespace {

json allocationToJson(const DeviceAnalysis& device, const Allocation& allocation)
{
    const bool liveAtOom = !device.ooms.empty() && allocation.liveAfter(device.ooms.front().eventIndex);
    return json { { "requested_bytes", allocation.requestedSize }, { "block_bytes", allocation.blockSize },
        { "category", categoryName(allocation.category) }, { "phase", phaseName(allocation.phase) },
        { "alloc_event", allocation.allocEvent >= 0 ? json(allocation.allocEvent) : json(nullptr) },
        { "free_event", allocation.freeEvent >= 0 ? json(allocation.freeEvent) : json(nullptr) },
        { "live_at_peak", allocation.liveAfter(device.peakEvent) },
        { "live_at_oom", device.ooms.empty() ? json(nullptr) : json(liveAtOom) },
        { "live_at_dump", allocation.freeEvent < 0 } };
}

} // namespace

json allocationAnnotationsToJson(const CaseAnalysis& analysis)
{
    json all = json::array();
    for (const SnapshotAnalysis& snapshot : analysis.snapshots) {
        json entries = json::array();
        for (const DeviceAnalysis& device : snapshot.devices) {
            if (!snapshot.snapshot)
                break;
            const AllocationAnnotations annotations(*snapshot.snapshot, device);
            for (const AllocationAnnotation& note : annotations.all()) {
                const std::vector<std::string> site = userFrameTexts(*snapshot.snapshot, note.stack);
                entries.push_back({ { "device", device.device }, { "event_index", note.event },
                    { "time_us", note.timeUs }, { "address", note.address }, { "text", note.text },
                    { "site", site.empty() ? json(nullptr) : json(site.front()) },
                    { "allocation",
                        note.allocation >= 0 ? allocationToJson(device, device.allocations[size_t(note.allocation)])
                                             : json(nullptr) } });
            }
        }
        all.push_back(std::move(entries));
    }
    return all;
}

} // namespace oomlens
