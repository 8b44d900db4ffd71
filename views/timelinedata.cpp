#include "views/timelinedata.h"

#include <algorithm>

namespace oomlens {

uint64_t total(const CategoryBytes& bytes)
{
    uint64_t sum = 0;
    for (uint64_t value : bytes)
        sum += value;
    return sum;
}

namespace {

// Returns the change of the total, so callers can keep a running sum.
int64_t apply(CategoryBytes& bytes, Category category, int64_t delta)
{
    uint64_t& slot = bytes[size_t(category)];
    // A free whose allocation the analysis counted in another band must not wrap around.
    if (delta >= 0) {
        slot += uint64_t(delta);
        return delta;
    }
    const uint64_t taken = std::min(slot, uint64_t(-delta));
    slot -= taken;
    return -int64_t(taken);
}

// The first index in [from, end) whose value is not less than `value` (by `less`), searching
// outwards from `from` first: successive buckets of a redraw lie close together, so this costs
// the log of the step instead of the log of the whole trace.
template <typename It, typename T, typename Less> It gallop(It from, It end, const T& value, Less less)
{
    size_t step = 1;
    It low = from;
    while (size_t(end - low) > step && less(*(low + ptrdiff_t(step)), value)) {
        low += ptrdiff_t(step);
        step *= 2;
    }
    return std::lower_bound(low, size_t(end - low) > step ? low + ptrdiff_t(step) + 1 : end, value, less);
}

} // namespace

TimelineData::TimelineData(std::shared_ptr<const SnapshotAnalysis> analysis, int32_t device)
    : m_analysis(std::move(analysis))
{
    m_device = m_analysis ? m_analysis->device(device) : nullptr;
    m_trace = m_analysis && m_analysis->snapshot ? m_analysis->snapshot->trace(device) : nullptr;
    const size_t count = m_trace ? m_trace->events.size() : 0;
    m_time.resize(count);
    int64_t first = 0;
    int64_t latest = 0;
    for (size_t i = 0; i < count; ++i) {
        const int64_t t = m_trace->events[i].timeUs;
        if (t != 0 && first == 0)
            first = t;
        latest = std::max(latest, t != 0 ? t - first : latest);
        m_time[i] = latest;
    }
    m_hasTime = count > 1 && m_time.back() > 0;
    buildChanges();
    buildReserved();
    buildPhases();
}

void TimelineData::buildChanges()
{
    const size_t count = m_time.size();
    // The analysis already maps events to allocations; keep our own map only when it does not.
    const bool ownMap = !m_device || m_device->eventAllocation.size() != count;
    if (ownMap)
        m_eventAllocation.assign(count, -1);
    CategoryBytes baseline {};
    if (m_device) {
        const auto& allocations = m_device->allocations;
        m_changes.reserve(allocations.size() * 2);
        for (size_t i = 0; i < allocations.size(); ++i) {
            const Allocation& allocation = allocations[i];
            const auto size = int64_t(allocation.requestedSize);
            if (allocation.allocEvent < 0)
                apply(baseline, allocation.category, size);
            else if (size_t(allocation.allocEvent) < count) {
                m_changes.push_back({ allocation.allocEvent, size, allocation.category });
                if (ownMap)
                    m_eventAllocation[size_t(allocation.allocEvent)] = int32_t(i);
            }
            if (allocation.freeEvent >= 0 && size_t(allocation.freeEvent) < count) {
                m_changes.push_back({ allocation.freeEvent, -size, allocation.category });
                if (ownMap)
                    m_eventAllocation[size_t(allocation.freeEvent)] = int32_t(i);
            }
        }
    }
    std::stable_sort(
        m_changes.begin(), m_changes.end(), [](const Change& a, const Change& b) { return a.event < b.event; });

    CategoryBytes current = baseline;
    m_maxAllocated = total(current);
    for (size_t k = 0; k < m_changes.size(); ++k) {
        if (k % checkpointStride == 0)
            m_checkpoints.push_back(current);
        apply(current, m_changes[k].category, m_changes[k].delta);
        const uint64_t sum = total(current);
        for (size_t level = 0; level < levelSizes.size(); ++level) {
            const bool first = k % levelSizes[level] == 0;
            if (first)
                m_levels[level].push_back({ k, k, sum, sum, current, current });
            Block& block = m_levels[level].back();
            if (!first && sum < block.minTotal) {
                block.minIndex = k;
                block.minTotal = sum;
                block.minBytes = current;
            }
            if (!first && sum > block.maxTotal) {
                block.maxIndex = k;
                block.maxTotal = sum;
                block.maxBytes = current;
            }
        }
        m_maxAllocated = std::max(m_maxAllocated, sum);
    }
    // The final state closes the last block, so a block skip always finds its end state.
    m_checkpoints.push_back(current);
    m_maxAllocated = std::max(m_maxAllocated, m_device ? m_device->peakAllocatedBytes : 0);
}

void TimelineData::buildReserved()
{
    uint64_t atDump = 0;
    if (m_analysis && m_analysis->snapshot && m_device) {
        for (const Segment& segment : m_analysis->snapshot->segments) {
            if (segment.device == m_device->device)
                atDump += segment.totalSize;
        }
    }
    int64_t net = 0;
    std::vector<ReservedPoint> deltas;
    if (m_trace) {
        for (size_t i = 0; i < m_trace->events.size(); ++i) {
            const TraceEvent& event = m_trace->events[i];
            int64_t delta = 0;
            if (event.action == TraceAction::SegmentAlloc || event.action == TraceAction::SegmentMap)
                delta = int64_t(event.size);
            else if (event.action == TraceAction::SegmentFree || event.action == TraceAction::SegmentUnmap)
                delta = -int64_t(event.size);
            if (delta != 0) {
                net += delta;
                deltas.push_back({ int64_t(i), uint64_t(delta) });
            }
        }
    }
    // The trace may start mid-run: what was reserved before it is the dump-time total minus
    // everything the trace added since.
    int64_t value = std::max<int64_t>(0, int64_t(atDump) - net);
    m_reserved.push_back({ -1, uint64_t(value) });
    m_maxReserved = uint64_t(value);
    for (const ReservedPoint& delta : deltas) {
        value = std::max<int64_t>(0, value + int64_t(delta.bytes));
        m_reserved.push_back({ delta.event, uint64_t(value) });
        m_maxReserved = std::max(m_maxReserved, uint64_t(value));
    }
    if (m_device)
        m_maxReserved = std::max(m_maxReserved, m_device->peakReservedBytes);
}

void TimelineData::buildPhases()
{
    if (!m_device)
        return;
    const auto& phases = m_device->eventPhase;
    for (size_t i = 0; i < phases.size() && i < m_time.size(); ++i) {
        if (!m_phaseRuns.empty() && m_phaseRuns.back().phase == phases[i] && m_phaseRuns.back().last == int64_t(i) - 1)
            m_phaseRuns.back().last = int64_t(i);
        else if (phases[i] != Phase::Unknown)
            m_phaseRuns.push_back({ int64_t(i), int64_t(i), phases[i] });
    }
    const auto& steps = m_device->eventStep;
    int32_t current = -1;
    for (size_t i = 0; i < steps.size() && i < m_time.size(); ++i) {
        if (steps[i] >= 0 && steps[i] != current) {
            current = steps[i];
            m_stepStarts.push_back({ int64_t(i), current });
        }
    }
}

int64_t TimelineData::timeOf(int64_t event) const
{
    if (m_time.empty() || event < 0)
        return 0;
    return m_time[size_t(std::min<int64_t>(event, eventCount() - 1))];
}

int64_t TimelineData::eventAtTime(int64_t timeUs) const
{
    const auto it = std::upper_bound(m_time.begin(), m_time.end(), timeUs);
    return it == m_time.begin() ? 0 : int64_t(it - m_time.begin()) - 1;
}

int64_t TimelineData::eventAtTime(int64_t timeUs, int64_t from) const
{
    from = std::clamp<int64_t>(from, 0, eventCount());
    if (from > 0 && m_time[size_t(from - 1)] > timeUs)
        return eventAtTime(timeUs);
    const auto it = gallop(m_time.begin() + from, m_time.end(), timeUs, [](int64_t t, int64_t v) { return t <= v; });
    return it == m_time.begin() ? 0 : int64_t(it - m_time.begin()) - 1;
}

size_t TimelineData::firstChangeAtOrAfter(int64_t event) const
{
    return size_t(std::lower_bound(m_changes.begin(), m_changes.end(), event, [](const Change& change, int64_t e) {
        return change.event < e;
    }) - m_changes.begin());
}

CategoryBytes TimelineData::stackAt(int64_t event) const
{
    const size_t end = firstChangeAtOrAfter(event + 1);
    const size_t block = std::min(end / checkpointStride, m_checkpoints.size() - 1);
    CategoryBytes bytes = m_checkpoints[block];
    for (size_t k = block * checkpointStride; k < end; ++k)
        apply(bytes, m_changes[k].category, m_changes[k].delta);
    return bytes;
}

uint64_t TimelineData::allocatedAt(int64_t event) const
{
    return total(stackAt(event));
}

uint64_t TimelineData::reservedAt(int64_t event) const
{
    const auto it = std::upper_bound(m_reserved.begin(), m_reserved.end(), event,
        [](int64_t e, const ReservedPoint& point) { return e < point.event; });
    return it == m_reserved.begin() ? m_reserved.front().bytes : std::prev(it)->bytes;
}

int32_t TimelineData::allocationOfEvent(int64_t event) const
{
    if (event < 0 || event >= eventCount())
        return -1;
    if (m_eventAllocation.empty())
        return m_device->eventAllocation[size_t(event)];
    return m_eventAllocation[size_t(event)];
}

std::vector<TimelineData::Point> TimelineData::downsample(const std::vector<int64_t>& boundaries) const
{
    std::vector<Point> points;
    if (boundaries.size() < 2)
        return points;
    points.reserve(boundaries.size() * 2 + 2);
    points.push_back({ boundaries.front(), stackAt(boundaries.front()) });

    const auto byEvent = [](const Change& change, int64_t e) { return change.event < e; };
    size_t k = firstChangeAtOrAfter(boundaries.front() + 1);
    CategoryBytes current = stackAt(boundaries.front());
    uint64_t currentTotal = total(current);
    for (size_t b = 0; b + 1 < boundaries.size(); ++b) {
        const size_t end = size_t(
            gallop(m_changes.begin() + ptrdiff_t(k), m_changes.end(), boundaries[b + 1], byEvent) - m_changes.begin());
        if (k >= end)
            continue;
        size_t minIndex = k, maxIndex = k;
        CategoryBytes minBytes {}, maxBytes {};
        uint64_t minTotal = UINT64_MAX, maxTotal = 0;
        auto consider = [&](size_t index, const CategoryBytes& bytes, uint64_t sum) {
            if (sum < minTotal) {
                minTotal = sum;
                minIndex = index;
                minBytes = bytes;
            }
            if (sum >= maxTotal) {
                maxTotal = sum;
                maxIndex = index;
                maxBytes = bytes;
            }
        };
        while (k < end) {
            bool skipped = false;
            for (size_t level = levelSizes.size(); level-- > 0;) {
                const size_t size = levelSizes[level];
                if (k % size == 0 && k + size <= end) {
                    const Block& block = m_levels[level][k / size];
                    consider(block.minIndex, block.minBytes, block.minTotal);
                    consider(block.maxIndex, block.maxBytes, block.maxTotal);
                    k += size;
                    current = m_checkpoints[k / checkpointStride];
                    currentTotal = total(current);
                    skipped = true;
                    break;
                }
            }
            if (skipped)
                continue;
            currentTotal += uint64_t(apply(current, m_changes[k].category, m_changes[k].delta));
            // Several changes can share one event only in malformed traces; keep the last state.
            if (k + 1 >= end || m_changes[k + 1].event != m_changes[k].event)
                consider(k, current, currentTotal);
            ++k;
        }
        if (minIndex <= maxIndex) {
            points.push_back({ m_changes[minIndex].event, minBytes });
            if (maxIndex != minIndex)
                points.push_back({ m_changes[maxIndex].event, maxBytes });
        } else {
            points.push_back({ m_changes[maxIndex].event, maxBytes });
            points.push_back({ m_changes[minIndex].event, minBytes });
        }
    }
    const int64_t last = boundaries.back() - 1;
    if (points.back().event < last)
        points.push_back({ last, current });
    return points;
}

std::vector<TimelineData::ReservedPoint> TimelineData::reservedPoints(const std::vector<int64_t>& boundaries) const
{
    std::vector<ReservedPoint> points;
    if (boundaries.size() < 2)
        return points;
    points.push_back({ boundaries.front(), reservedAt(boundaries.front()) });
    auto it = std::upper_bound(m_reserved.begin(), m_reserved.end(), boundaries.front(),
        [](int64_t e, const ReservedPoint& point) { return e < point.event; });
    for (size_t b = 0; b + 1 < boundaries.size() && it != m_reserved.end(); ++b) {
        const auto end = std::lower_bound(it, m_reserved.end(), boundaries[b + 1],
            [](const ReservedPoint& point, int64_t e) { return point.event < e; });
        if (it == end)
            continue;
        if (end - it <= 2) {
            points.insert(points.end(), it, end);
        } else {
            auto [lo, hi]
                = std::minmax_element(it, end, [](const auto& a, const auto& b) { return a.bytes < b.bytes; });
            if (lo->event > hi->event)
                std::swap(lo, hi);
            points.push_back(*lo);
            if (hi != lo)
                points.push_back(*hi);
            points.push_back(*std::prev(end));
        }
        it = end;
    }
    const int64_t last = boundaries.back() - 1;
    if (points.back().event < last)
        points.push_back({ last, reservedAt(last) });
    return points;
}

} // namespace oomlens
