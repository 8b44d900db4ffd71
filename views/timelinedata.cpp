#include "views/timelinedata.h"

#include "core/analysis/recomputespans.h"

#include <algorithm>
#include <limits>

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

} // namespace

TimelineData::TimelineData(std::shared_ptr<const SnapshotAnalysis> analysis, int32_t device)
    : m_analysis(std::move(analysis))
    , m_device(findDevice(m_analysis, device))
    , m_trace(m_analysis && m_analysis->snapshot ? m_analysis->snapshot->trace(device) : nullptr)
    , m_series(deviceOrEmpty(m_device))
{
    m_eventCount = m_trace ? int64_t(m_trace->events.size()) : 0;
    if (m_device && m_trace) {
        for (const TraceEvent& event : m_trace->events) {
            if (event.timeUs != 0) {
                m_firstTime = event.timeUs;
                break;
            }
        }
        m_hasTime = m_eventCount > 1 && timeOf(m_eventCount - 1) > 0;
    }
    buildPhases();
    if (m_device) {
        m_spans = oomlens::annotationAndRecomputeSpans(*m_analysis->snapshot, *m_device);
        m_allocationAnnotations = AllocationAnnotations(*m_analysis->snapshot, *m_device);
    }
}

void TimelineData::buildPhases()
{
    if (!m_device)
        return;
    const auto& phases = m_device->eventPhase;
    for (size_t i = 0; i < phases.size() && i < size_t(m_eventCount); ++i) {
        if (!m_phaseRuns.empty() && m_phaseRuns.back().phase == phases[i] && m_phaseRuns.back().last == int64_t(i) - 1)
            m_phaseRuns.back().last = int64_t(i);
        else if (phases[i] != Phase::Unknown)
            m_phaseRuns.push_back({ int64_t(i), int64_t(i), phases[i] });
    }
    const auto& steps = m_device->eventStep;
    int32_t current = -1;
    for (size_t i = 0; i < steps.size() && i < size_t(m_eventCount); ++i) {
        if (steps[i] >= 0 && steps[i] != current) {
            current = steps[i];
            m_stepStarts.push_back({ int64_t(i), current });
        }
    }
}

int64_t TimelineData::timeOf(int64_t event) const
{
    if (!m_device || m_eventCount == 0 || event < 0)
        return 0;
    // Events before the first with a time, and jitter below it, sit at zero.
    return std::max<int64_t>(0, runningMaxTime(*m_device, *m_trace, event) - m_firstTime);
}

int64_t TimelineData::eventAtTime(int64_t timeUs) const
{
    if (!m_device || m_eventCount == 0 || timeUs < 0)
        return 0;
    if (timeUs >= std::numeric_limits<int64_t>::max() - std::max<int64_t>(m_firstTime, 0))
        return m_eventCount - 1;
    // The first event whose time passes timeUs, less one.
    return std::max<int64_t>(0, oomlens::eventAtTime(*m_device, *m_trace, m_firstTime + timeUs + 1) - 1);
}

int32_t TimelineData::allocationOfEvent(int64_t event) const
{
    if (!m_device || event < 0 || size_t(event) >= m_device->eventAllocation.size())
        return -1;
    return m_device->eventAllocation[size_t(event)];
}

} // namespace oomlens
