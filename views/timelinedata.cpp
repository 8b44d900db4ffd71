#include "views/timelinedata.h"

#include <algorithm>

namespace oomlens {

namespace {

const DeviceAnalysis* findDevice(const std::shared_ptr<const SnapshotAnalysis>& analysis, int32_t device)
{
    return analysis ? analysis->device(device) : nullptr;
}

const DeviceAnalysis& deviceOrEmpty(const DeviceAnalysis* device)
{
    static const DeviceAnalysis none;
    return device ? *device : none;
}

// The first index in [from, end) whose value is not less than `value` (by `less`), searching
// outwards from `from` first: successive pixel columns lie close together, so this costs the
// log of the step instead of the log of the whole trace.
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
    , m_device(findDevice(m_analysis, device))
    , m_trace(m_analysis && m_analysis->snapshot ? m_analysis->snapshot->trace(device) : nullptr)
    , m_series(deviceOrEmpty(m_device))
{
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
    buildPhases();
    if (m_device)
        m_spans = oomlens::annotationSpans(*m_analysis->snapshot, *m_device);
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

int32_t TimelineData::allocationOfEvent(int64_t event) const
{
    if (!m_device || event < 0 || size_t(event) >= m_device->eventAllocation.size())
        return -1;
    return m_device->eventAllocation[size_t(event)];
}

} // namespace oomlens
