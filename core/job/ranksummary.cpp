#include "core/job/ranksummary.h"

#include "core/analysis/userframe.h"
#include "core/job/rankname.h"
#include "core/presentation/cardreconciliation.h"
#include "core/presentation/compileattribution.h"

#include <algorithm>
#include <unordered_map>

namespace oomlens {

namespace {

const CaptureSidecar* sidecarOf(const Case& rankCase)
{
    for (const CaptureSidecar& sidecar : rankCase.sidecars) {
        if (sidecar.snapshotIndex == 0)
            return &sidecar;
    }
    return nullptr;
}

// Metadata wins over the name: a launcher writes the rank it ran as, while a file can be renamed
// or copied under another rank's name.
void settleRank(RankSummary& summary)
{
    if (summary.rankFromMetadata) {
        summary.rank = *summary.rankFromMetadata;
        summary.rankSource = RankSource::Metadata;
        if (summary.rankFromName && *summary.rankFromName != *summary.rankFromMetadata) {
            summary.notes.push_back("the file name says rank " + std::to_string(*summary.rankFromName)
                + " but its capture metadata says rank " + std::to_string(*summary.rankFromMetadata)
                + "; the metadata's rank is used");
        }
    } else if (summary.rankFromName) {
        summary.rank = *summary.rankFromName;
        summary.rankSource = RankSource::FileName;
    }
}

std::string firstError(const Case& rankCase)
{
    for (const CaseInput& input : rankCase.inputs) {
        if (input.kind != InputKind::Sidecar && input.error)
            return *input.error;
    }
    return "the file holds no memory snapshot";
}

// The user frames holding the most requested bytes right after the peak event (allocations older
// than the trace included, as the peak counts them). Each stack's frame is looked up once.
std::vector<std::pair<std::string, uint64_t>> topSitesAtPeak(const Snapshot& snapshot, const DeviceAnalysis& device)
{
    if (!snapshot.frames || !snapshot.strings)
        return {};
    std::unordered_map<uint32_t, std::string> siteOfStack;
    std::unordered_map<std::string, uint64_t> bytesBySite;
    for (const Allocation& allocation : device.allocations) {
        if (!allocation.liveAfter(device.peakEvent))
            continue;
        auto [site, added] = siteOfStack.try_emplace(allocation.stack.value);
        if (added) {
            const std::optional<FrameId> frame = userFrame(*snapshot.frames, *snapshot.strings, allocation.stack);
            site->second = frame ? frameSiteText(snapshot, *frame) : std::string("(no stack)");
        }
        bytesBySite[site->second] += allocation.requestedSize;
    }
    std::vector<std::pair<std::string, uint64_t>> sites(bytesBySite.begin(), bytesBySite.end());
    const size_t kept = std::min(sites.size(), RankSummary::topSiteCount);
    std::partial_sort(sites.begin(), sites.begin() + static_cast<std::ptrdiff_t>(kept), sites.end(),
        [](const auto& a, const auto& b) { return a.second != b.second ? a.second > b.second : a.first < b.first; });
    sites.resize(kept);
    return sites;
}

} // namespace

RankSummary unreadableRank(const std::string& file, std::string error)
{
    RankSummary summary;
    summary.file = file;
    summary.rankFromName = rankFromFileName(file);
    summary.error = std::move(error);
    settleRank(summary);
    return summary;
}

RankSummary summarizeRank(const std::string& file, const Case& rankCase, const CaseAnalysis& analysis)
{
    const SnapshotAnalysis* snapshot = analysis.snapshots.empty() ? nullptr : &analysis.snapshots.front();
    const DeviceAnalysis* device = snapshot ? snapshot->primary() : nullptr;
    if (!device)
        return unreadableRank(file, snapshot ? "the snapshot holds no device trace or segment" : firstError(rankCase));

    RankSummary summary;
    summary.file = file;
    summary.rankFromName = rankFromFileName(file);
    if (const CaptureSidecar* sidecar = sidecarOf(rankCase)) {
        summary.rankFromMetadata = sidecar->rank;
        summary.worldSize = sidecar->worldSize;
        summary.deviceName = sidecar->deviceName;
    }
    settleRank(summary);

    summary.device = device->device;
    summary.peakAllocatedBytes = device->peakAllocatedBytes;
    summary.peakReservedBytes = device->peakReservedBytes;
    summary.peakTimeUs = device->peakTimeUs;
    summary.categoriesAtPeak = device->categoriesAtPeak;
    if (snapshot->snapshot)
        summary.topSitesAtPeak = topSitesAtPeak(*snapshot->snapshot, *device);
    if (!device->ooms.empty()) {
        summary.oom = true;
        summary.categoriesAtOom = device->ooms.front().liveByCategory;
        // Eras before PyTorch 2.1 record no time_us (0): which rank failed first cannot be told then.
        if (device->ooms.front().timeUs != 0)
            summary.oomTimeUs = device->ooms.front().timeUs;
    }
    if (!analysis.headroom.empty())
        summary.capacityBytes = analysis.headroom.front().capacityBytes;
    summary.restOfCardBytes = reconcileCard(rankCase, analysis).restOfCardBytes;
    if (!analysis.diagnoses.empty()) {
        summary.topDiagnosisId = analysis.diagnoses.front().id;
        summary.topDiagnosisTitle = analysis.diagnoses.front().title;
    }
    return summary;
}

} // namespace oomlens
