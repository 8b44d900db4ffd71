#include "core/analysis/livequery.h"
#include "core/compare/compareparts.h"
#include "core/presentation/stackframes.h"

#include <algorithm>
#include <cstdlib>
#include <map>
#include <unordered_map>

namespace oomlens::compare {

namespace {

// Resolves allocations to site keys, each distinct (stack, category, phase) once: a trace of
// millions of allocations has a few thousand of them.
class SiteKeys
{
public:
    explicit SiteKeys(const Snapshot& snapshot)
        : m_snapshot(snapshot)
    { }

    const SiteKey& of(const Allocation& allocation)
    {
        const uint64_t packed = (static_cast<uint64_t>(allocation.stack.value) << 16)
            | (static_cast<uint64_t>(allocation.category) << 8) | static_cast<uint64_t>(allocation.phase);
        auto found = m_keys.find(packed);
        if (found == m_keys.end()) {
            auto frames = m_frames.find(allocation.stack);
            if (frames == m_frames.end())
                frames = m_frames.emplace(allocation.stack, userFrameTexts(m_snapshot, allocation.stack)).first;
            found = m_keys.emplace(packed, SiteKey { frames->second, allocation.category, allocation.phase }).first;
        }
        return found->second;
    }

private:
    const Snapshot& m_snapshot;
    std::unordered_map<StackId, std::vector<std::string>> m_frames;
    std::unordered_map<uint64_t, SiteKey> m_keys;
};

bool allocatedIn(const Allocation& allocation, const ComparisonSide& side)
{
    // A whole trace counts the allocations older than it too: they were made by the same run.
    if (side.wholeTrace)
        return true;
    return allocation.allocEvent >= side.firstEvent && allocation.allocEvent <= side.lastEvent;
}

void addSide(std::map<SiteKey, ComparedSite>& sites, const ComparisonSide& side, const SideSource& source, bool isA)
{
    SiteKeys keys(*source.analysis->snapshot);
    const auto site = [&](const Allocation& allocation) -> ComparedSite& {
        ComparedSite& entry = sites[keys.of(allocation)];
        StackId& stack = isA ? entry.stackA : entry.stackB;
        if (stack == FrameTable::emptyStack())
            stack = allocation.stack;
        return entry;
    };
    for (const Allocation& allocation : source.device->allocations) {
        if (!allocatedIn(allocation, side))
            continue;
        SiteFigures& figures = isA ? site(allocation).a : site(allocation).b;
        figures.allocatedBytes += allocation.requestedSize;
        ++figures.allocatedCount;
    }
    if (side.lastEvent < side.firstEvent && !side.wholeTrace)
        return;
    for (uint32_t index : liveAllocations(*source.device, side.peak.event)) {
        const Allocation& allocation = source.device->allocations[index];
        SiteFigures& figures = isA ? site(allocation).a : site(allocation).b;
        figures.peakBytes += allocation.requestedSize;
        ++figures.peakCount;
    }
}

} // namespace

std::vector<ComparedSite> matchSites(
    const ComparisonSide& a, const SideSource& sourceA, const ComparisonSide& b, const SideSource& sourceB)
{
    std::map<SiteKey, ComparedSite> matched;
    addSide(matched, a, sourceA, true);
    addSide(matched, b, sourceB, false);
    std::vector<ComparedSite> sites;
    sites.reserve(matched.size());
    for (auto& [key, site] : matched) {
        site.key = key;
        sites.push_back(std::move(site));
    }
    // Ties by the allocated total, then by key, so the order never depends on the map's.
    std::stable_sort(sites.begin(), sites.end(), [](const ComparedSite& x, const ComparedSite& y) {
        const uint64_t px = static_cast<uint64_t>(std::llabs(x.peakDelta()));
        const uint64_t py = static_cast<uint64_t>(std::llabs(y.peakDelta()));
        if (px != py)
            return px > py;
        return std::llabs(x.allocatedDelta()) > std::llabs(y.allocatedDelta());
    });
    return sites;
}

std::vector<SurvivingSite> survivingSites(
    const ComparisonSide& first, const ComparisonSide& second, const SideSource& source)
{
    const DeviceAnalysis& device = *source.device;
    SiteKeys keys(*source.analysis->snapshot);
    std::map<SiteKey, SurvivingSite> sites;
    for (const Allocation& allocation : device.allocations) {
        const bool inFirst = allocation.allocEvent >= first.firstEvent && allocation.allocEvent <= first.lastEvent;
        const bool inSecond = allocation.allocEvent >= second.firstEvent && allocation.allocEvent <= second.lastEvent;
        if ((!inFirst && !inSecond) || !allocation.liveAfter(second.lastEvent))
            continue;
        SurvivingSite& site = sites[keys.of(allocation)];
        if (inFirst) {
            site.bytes += allocation.requestedSize;
            ++site.count;
            if (site.stack == FrameTable::emptyStack())
                site.stack = allocation.stack;
        } else {
            site.secondWindowBytes += allocation.requestedSize;
        }
    }
    std::vector<SurvivingSite> surviving;
    for (auto& [key, site] : sites) {
        if (site.count == 0)
            continue; // only the second window's: nothing has outlived a whole window yet
        site.key = key;
        site.repeats = site.secondWindowBytes > 0;
        surviving.push_back(std::move(site));
    }
    // Sites that repeat are the leak's signature; one-offs (state made once) come after them.
    std::stable_sort(surviving.begin(), surviving.end(), [](const SurvivingSite& x, const SurvivingSite& y) {
        if (x.repeats != y.repeats)
            return x.repeats;
        return x.bytes > y.bytes;
    });
    return surviving;
}

} // namespace oomlens::compare
