#include "core/job/ranksummary.h"

#include "core/analysis/cardreconciliation.h"
#include "core/analysis/compileattribution.h"
#include "core/analysis/topsites.h"
#include "core/job/rankname.h"

#include <algorithm>

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
        summary.topSitesAtPeak = topSitesAtPeak(*snapshot->snapshot, *device, RankSummary::topSiteCount);
    if (!device->ooms.empty()) {
        summary.oom = true;
        summary.categoriesAtOom = device->ooms.front().liveByCategory;
        // Eras before PyTorch 2.1 record no time_us (0): which rank failed first cannot be told then.
        if (device->ooms.front().timeUs != 0)
            summary.oomTimeUs = device->ooms.front().timeUs;
    }
    if (!analysis.headroom.empty())
        summary.capacityBytes = analysis.headroom.front().capacityBytes;
    summary.restOfCardBytes = analysis.card.restOfCardBytes;
    if (!analysis.diagnoses.empty()) {
        summary.topDiagnosisId = analysis.diagnoses.front().id;
        summary.topDiagnosisTitle = analysis.diagnoses.front().title;
    }
    return summary;
}

} // namespace oomlens
