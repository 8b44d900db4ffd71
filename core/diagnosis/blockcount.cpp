#include "core/diagnosis/blockcount.h"

#include "core/units.h"

#include <map>
#include <unordered_map>

namespace oomlens {

namespace {

constexpr int maxBlocks = 512;
constexpr int minSitesPerBlock
    = 3; // a layer allocates several tensors (conv, norm, activation at least); fewer is a loop
constexpr double minShare = 0.2; // the pattern must carry a good part of the repeated bytes

struct SiteKey
{
    uint32_t stack;
    uint64_t size;
    bool operator==(const SiteKey& other) const { return stack == other.stack && size == other.size; }
};

struct SiteKeyHash
{
    size_t operator()(const SiteKey& key) const { return std::hash<uint64_t>()(key.size * 1000003u ^ key.stack); }
};

} // namespace

BlockEstimate estimateRepeatedBlocks(const DeviceAnalysis& device, int64_t untilEvent)
{
    // Forward allocations per step, up to the failure.
    std::map<int32_t, std::vector<const Allocation*>> forwardBySteps;
    for (const auto& allocation : device.allocations) {
        if (allocation.allocEvent < 0 || (untilEvent >= 0 && allocation.allocEvent > untilEvent))
            continue;
        if (allocation.phase != Phase::Forward || !allocation.stack.isValid()
            || allocation.stack == FrameTable::emptyStack())
            continue;
        forwardBySteps[allocation.step].push_back(&allocation);
    }
    if (forwardBySteps.empty())
        return {};
    // The failing step's forward may be cut short by the OOM; the fullest forward, latest on ties,
    // is the most complete picture of one pass.
    const std::vector<const Allocation*>* pass = nullptr;
    int32_t passStep = -1;
    for (const auto& [step, allocations] : forwardBySteps) {
        if (!pass || allocations.size() >= pass->size()) {
            pass = &allocations;
            passStep = step;
        }
    }

    std::unordered_map<SiteKey, int, SiteKeyHash> counts;
    uint64_t forwardBytes = 0;
    for (const Allocation* allocation : *pass) {
        ++counts[SiteKey { allocation->stack.value, allocation->requestedSize }];
        forwardBytes += allocation->requestedSize;
    }
    struct Repeat
    {
        uint64_t bytes = 0;
        int sites = 0;
    };
    std::map<int, Repeat> byCount;
    uint64_t repeatedBytes = 0;
    for (const auto& [key, count] : counts) {
        if (count < 2 || count > maxBlocks)
            continue;
        Repeat& repeat = byCount[count];
        repeat.bytes += key.size * static_cast<uint64_t>(count);
        ++repeat.sites;
        repeatedBytes += key.size * static_cast<uint64_t>(count);
    }
    // The block count is the repeat count shared by the most distinct sites: a site used twice
    // inside each block (the same norm helper called for both norms) repeats 2N times, but most
    // of a block's sites repeat exactly N times. Bytes break ties.
    int best = 0;
    for (const auto& [count, repeat] : byCount) {
        if (repeat.sites < minSitesPerBlock
            || static_cast<double>(repeat.bytes) < minShare * static_cast<double>(repeatedBytes))
            continue;
        if (best == 0 || repeat.sites > byCount[best].sites
            || (repeat.sites == byCount[best].sites && repeat.bytes > byCount[best].bytes))
            best = count;
    }
    if (best == 0)
        return {};

    BlockEstimate estimate;
    estimate.blocks = best;
    const std::string where = passStep >= 0 ? "step " + std::to_string(passStep) + "'s forward" : "the forward pass";
    estimate.evidence = std::to_string(byCount[best].sites) + " allocation sites repeat " + std::to_string(best)
        + " times each in " + where + " (" + formatBytes(byCount[best].bytes) + " of its " + formatBytes(forwardBytes)
        + ")";
    return estimate;
}

} // namespace oomlens
