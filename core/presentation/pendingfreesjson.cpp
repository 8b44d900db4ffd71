#include "core/presentation/pendingfreesjson.h"

#include "core/analysis/pendingfrees.h"
#include "core/analysis/userframe.h"

namespace oomlens {

using json = nlohmann::ordered_json;

namespace {

json frameToJson(const Snapshot& snapshot, StackId stack)
{
    if (!snapshot.frames || !snapshot.strings || stack == FrameTable::emptyStack())
        return nullptr;
    const auto frame = userFrame(*snapshot.frames, *snapshot.strings, stack);
    if (!frame)
        return nullptr;
    const Frame& f = snapshot.frames->frame(*frame);
    return { { "filename", snapshot.strings->get(f.filename) }, { "name", snapshot.strings->get(f.name) },
        { "line", f.line } };
}

} // namespace

json pendingFreesToJson(const CaseAnalysis& analysis)
{
    json all = json::array();
    for (size_t i = 0; i < analysis.snapshots.size(); ++i) {
        const SnapshotAnalysis& snapshot = analysis.snapshots[i];
        const DeviceAnalysis* device = snapshot.primary();
        if (!snapshot.snapshot || !device) {
            all.push_back(nullptr);
            continue;
        }
        const PendingFrees pending = pendingFrees(*snapshot.snapshot, *device);
        json releasers = json::array();
        for (const PendingReleaser& r : pending.releasers)
            releasers.push_back({ { "frame", frameToJson(*snapshot.snapshot, r.stack) }, { "bytes", r.bytes },
                { "frees", r.windows } });
        size_t stillPending = 0;
        for (const PendingFreeWindow& w : pending.windows)
            stillPending += w.completedEvent < 0 ? 1 : 0;
        all.push_back({ { "snapshot", i }, { "device", device->device }, { "waited_frees", pending.windows.size() },
            { "never_completed", stillPending }, { "max_pending_bytes", pending.maxPendingBytes },
            { "max_pending_event", pending.maxPendingEvent }, { "at_peak_bytes", pending.atPeakBytes },
            { "at_oom_bytes", device->ooms.empty() ? json(nullptr) : json(pending.atOomBytes) },
            { "released_before_oom_bytes", device->ooms.empty() ? json(nullptr) : json(pending.releasedAtOomBytes) },
            { "segments_reserved_while_pending", pending.segmentsWhilePending },
            { "reserved_while_pending_bytes", pending.reservedWhilePendingBytes },
            { "coverable_by_pending_bytes", pending.coverableWhilePendingBytes },
            { "dump_pending_blocks", pending.dumpPendingBlocks }, { "dump_pending_bytes", pending.dumpPendingBytes },
            { "released_by", std::move(releasers) } });
    }
    return all;
}

} // namespace oomlens
