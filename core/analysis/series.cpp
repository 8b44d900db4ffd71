#include "core/analysis/series.h"

#include <algorithm>
#include <limits>

namespace oomlens {

namespace {

// Returns the change of the total, so callers can keep a running sum.
int64_t apply(CategoryBytes& bytes, Category category, int64_t delta)
{
    uint64_t& slot = bytes[size_t(category)];
    if (delta >= 0) {
        slot += uint64_t(delta);
        return delta;
    }
    // The reconstruction clamps the live total at zero; so does every band.
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

uint64_t total(const CategoryBytes& bytes)
{
    uint64_t sum = 0;
    for (uint64_t value : bytes)
        sum += value;
    return sum;
}

uint64_t TimelineSeries::Point::total() const
{
    return oomlens::total(bytes);
}

TimelineSeries::TimelineSeries(const DeviceAnalysis& d)
    : m_eventCount(int64_t(d.eventAllocation.size()))
    , m_allocations(d.allocations.data())
{
    CategoryBytes current {};
    for (const Allocation& a : d.allocations) {
        if (a.requestedSize > 0)
            m_heldCategories |= 1u << unsigned(a.category);
        if (a.allocEvent < 0)
            apply(current, a.category, int64_t(a.requestedSize));
    }
    m_maxAllocated = total(current);
    uint64_t sum = m_maxAllocated;
    // One pass over the events: the analysis maps each to the allocation it concerns, in event
    // order (no sort), and each change's allocation is read once, while it is at hand, for the
    // checkpoints and the min/max levels too.
    m_changes.reserve(d.allocations.size() * 2);
    m_checkpoints.reserve(d.allocations.size() * 2 / checkpointStride + 2);
    for (size_t level = 0; level < levelSizes.size(); ++level)
        m_levels[level].reserve(d.allocations.size() * 2 / levelSizes[level] + 1);
    for (int64_t i = 0; i < m_eventCount; ++i) {
        const int32_t index = d.eventAllocation[size_t(i)];
        if (index < 0)
            continue;
        const Allocation& a = d.allocations[size_t(index)];
        int64_t delta = 0;
        if (a.allocEvent == i)
            delta = int64_t(a.requestedSize);
        else if (a.freeEvent == i)
            delta = -int64_t(a.requestedSize);
        else
            continue;
        const size_t k = m_changes.size();
        m_changes.push_back(changeOf(i, uint32_t(index), a, delta < 0));
        if (k % checkpointStride == 0)
            m_checkpoints.push_back(current);
        sum += uint64_t(apply(current, a.category, delta));
        for (size_t level = 0; level < levelSizes.size(); ++level) {
            if (k % levelSizes[level] == 0) {
                m_levels[level].push_back({ k, k, sum, sum, current, current });
                continue;
            }
            Block& block = m_levels[level].back();
            if (sum < block.minTotal) {
                block.minIndex = k;
                block.minTotal = sum;
                block.minBytes = current;
            }
            if (sum > block.maxTotal) {
                block.maxIndex = k;
                block.maxTotal = sum;
                block.maxBytes = current;
            }
        }
        m_maxAllocated = std::max(m_maxAllocated, sum);
    }
    // The final state closes the last block, so a block skip always finds its end state.
    m_checkpoints.push_back(current);

    // Reserved memory changes only at segment events: keep just those moments.
    uint64_t reserved = d.initialReservedBytes;
    m_reserved.push_back({ -1, reserved });
    m_maxReserved = reserved;
    for (size_t i = 0; i < d.reservedAfter.size(); ++i) {
        if (d.reservedAfter[i] == reserved)
            continue;
        reserved = d.reservedAfter[i];
        m_reserved.push_back({ int64_t(i), reserved });
        m_maxReserved = std::max(m_maxReserved, reserved);
    }
}

size_t TimelineSeries::firstChangeAtOrAfter(int64_t event) const
{
    return size_t(std::lower_bound(m_changes.begin(), m_changes.end(), event, [](const Change& change, int64_t e) {
        return change.event < e;
    }) - m_changes.begin());
}

CategoryBytes TimelineSeries::categoriesAt(int64_t event) const
{
    const size_t end = firstChangeAtOrAfter(event + 1);
    const size_t block = std::min(end / checkpointStride, m_checkpoints.size() - 1);
    CategoryBytes bytes = m_checkpoints[block];
    for (size_t k = block * checkpointStride; k < end; ++k) {
        const Step step = stepOf(m_changes[k]);
        apply(bytes, step.category, step.delta);
    }
    return bytes;
}

TimelineSeries::Change TimelineSeries::changeOf(int64_t event, uint32_t allocation, const Allocation& a, bool removal)
{
    // An allocation index needs 31 bits only past two billion allocations, which no trace the
    // decoder accepts can hold (each takes an alloc entry).
    if (a.requestedSize >= inlineBytesLimit)
        return { uint32_t(event), indirectBit | allocation };
    return { uint32_t(event),
        (removal ? removalBit : 0u) | (uint32_t(a.category) << categoryShift) | uint32_t(a.requestedSize) };
}

TimelineSeries::Step TimelineSeries::stepOf(const Change& change) const
{
    if (change.step & indirectBit) {
        const Allocation& a = m_allocations[change.step & ~indirectBit];
        const auto bytes = int64_t(a.requestedSize);
        return { a.category, a.allocEvent == int64_t(change.event) ? bytes : -bytes };
    }
    const auto bytes = int64_t(change.step & (inlineBytesLimit - 1));
    const auto category = Category((change.step & ~removalBit) >> categoryShift);
    return { category, change.step & removalBit ? -bytes : bytes };
}

uint64_t TimelineSeries::allocatedAt(int64_t event) const
{
    return total(categoriesAt(event));
}

uint64_t TimelineSeries::reservedAt(int64_t event) const
{
    const auto it = std::upper_bound(m_reserved.begin(), m_reserved.end(), event,
        [](int64_t e, const ReservedPoint& point) { return e < point.event; });
    return it == m_reserved.begin() ? m_reserved.front().bytes : std::prev(it)->bytes;
}

std::vector<int64_t> TimelineSeries::evenBoundaries(int64_t first, int64_t last, int64_t columns)
{
    std::vector<int64_t> boundaries;
    const int64_t span = last - first;
    if (span <= 0 || columns <= 0)
        return boundaries;
    const int64_t count = std::min(columns, span);
    boundaries.reserve(size_t(count) + 1);
    for (int64_t b = 0; b <= count; ++b)
        boundaries.push_back(first + span * b / count);
    return boundaries;
}

std::vector<TimelineSeries::Point> TimelineSeries::downsample(const std::vector<int64_t>& boundaries) const
{
    std::vector<Point> points;
    if (boundaries.size() < 2)
        return points;
    points.reserve(boundaries.size() * 2 + 2);
    points.push_back({ boundaries.front(), categoriesAt(boundaries.front()) });

    const auto byEvent = [](const Change& change, int64_t e) { return change.event < e; };
    size_t k = firstChangeAtOrAfter(boundaries.front() + 1);
    CategoryBytes current = points.front().bytes;
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
            const Step step = stepOf(m_changes[k]);
            currentTotal += uint64_t(apply(current, step.category, step.delta));
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

std::vector<TimelineSeries::ReservedPoint> TimelineSeries::reservedPoints(const std::vector<int64_t>& boundaries) const
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
            if (std::prev(end) != hi)
                points.push_back(*std::prev(end));
        }
        it = end;
    }
    const int64_t last = boundaries.back() - 1;
    if (points.back().event < last)
        points.push_back({ last, reservedAt(last) });
    return points;
}

uint64_t allocatedAt(const DeviceAnalysis& d, int64_t event)
{
    if (event < 0 || d.allocatedAfter.empty())
        return d.initialAllocatedBytes;
    return d.allocatedAfter[static_cast<size_t>(
        std::min<int64_t>(event, static_cast<int64_t>(d.allocatedAfter.size()) - 1))];
}

uint64_t reservedAt(const DeviceAnalysis& d, int64_t event)
{
    if (event < 0 || d.reservedAfter.empty())
        return d.initialReservedBytes;
    return d
        .reservedAfter[static_cast<size_t>(std::min<int64_t>(event, static_cast<int64_t>(d.reservedAfter.size()) - 1))];
}
void buildTimeCheckpoints(const DeviceTrace* trace, DeviceAnalysis& d)
{
    d.timeCheckpoints.clear();
    d.timeAxis = {};
    if (!trace)
        return;
    const size_t n = trace->events.size();
    d.timeCheckpoints.reserve(n / DeviceAnalysis::checkpointInterval + 1);
    int64_t runningMax = INT64_MIN;
    for (size_t i = 0; i < n; ++i) {
        if (i % DeviceAnalysis::checkpointInterval == 0)
            d.timeCheckpoints.push_back(runningMax);
        runningMax = std::max(runningMax, trace->events[i].timeUs);
    }
    if (n == 0)
        return;
    d.timeAxis.firstUs = trace->events.front().timeUs;
    d.timeAxis.lastUs = trace->events.back().timeUs;
    const auto timed = std::find_if(
        trace->events.begin(), trace->events.end(), [](const TraceEvent& event) { return event.timeUs != 0; });
    d.timeAxis.originUs = timed == trace->events.end() ? 0 : timed->timeUs;
    d.timeAxis.hasTime = n > 1 && runningMax - d.timeAxis.originUs > 0;
}

int64_t timeSinceStart(const DeviceAnalysis& d, const DeviceTrace& trace, int64_t event)
{
    if (trace.events.empty() || event < 0)
        return 0;
    // Events before the first with a time, and jitter below it, sit at zero.
    return std::max<int64_t>(0, runningMaxTime(d, trace, event) - d.timeAxis.originUs);
}

int64_t eventAtTimeSinceStart(const DeviceAnalysis& d, const DeviceTrace& trace, int64_t sinceStartUs)
{
    const auto n = static_cast<int64_t>(trace.events.size());
    if (n == 0 || sinceStartUs < 0)
        return 0;
    if (sinceStartUs >= std::numeric_limits<int64_t>::max() - std::max<int64_t>(d.timeAxis.originUs, 0))
        return n - 1;
    // The first event whose time passes sinceStartUs, less one.
    return std::max<int64_t>(0, eventAtTime(d, trace, d.timeAxis.originUs + sinceStartUs + 1) - 1);
}

int64_t eventAtTime(const DeviceAnalysis& d, const DeviceTrace& trace, int64_t timeUs)
{
    const auto n = static_cast<int64_t>(trace.events.size());
    if (n == 0)
        return n;
    // The last checkpoint whose running maximum is still below timeUs: the answer lies in its
    // interval or later, and the running maximum is non-decreasing. An analysis built by hand,
    // without checkpoints, is scanned from the start.
    auto it = std::partition_point(
        d.timeCheckpoints.begin(), d.timeCheckpoints.end(), [&](int64_t runningMax) { return runningMax < timeUs; });
    const auto k = static_cast<int64_t>(it - d.timeCheckpoints.begin()) - 1;
    if (k < 0 && !d.timeCheckpoints.empty())
        return 0;
    int64_t runningMax = k < 0 ? INT64_MIN : d.timeCheckpoints[static_cast<size_t>(k)];
    for (int64_t i = std::max<int64_t>(k, 0) * DeviceAnalysis::checkpointInterval; i < n; ++i) {
        runningMax = std::max(runningMax, trace.events[static_cast<size_t>(i)].timeUs);
        if (runningMax >= timeUs)
            return i;
    }
    return n;
}

int64_t runningMaxTime(const DeviceAnalysis& d, const DeviceTrace& trace, int64_t event)
{
    event = std::min(event, static_cast<int64_t>(trace.events.size()) - 1);
    if (event < 0)
        return INT64_MIN;
    const auto through = static_cast<size_t>(event);
    size_t from = 0;
    int64_t runningMax = INT64_MIN;
    if (!d.timeCheckpoints.empty()) {
        const size_t k = std::min(through / size_t(DeviceAnalysis::checkpointInterval), d.timeCheckpoints.size() - 1);
        from = k * size_t(DeviceAnalysis::checkpointInterval);
        runningMax = d.timeCheckpoints[k];
    }
    for (size_t i = from; i <= through; ++i)
        runningMax = std::max(runningMax, trace.events[i].timeUs);
    return runningMax;
}

} // namespace oomlens
