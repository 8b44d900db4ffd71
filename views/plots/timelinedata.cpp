#include "views/plots/timelinedata.h"

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
    if (m_device)
        m_allocationAnnotations = AllocationAnnotations(*m_analysis->snapshot, *m_device);
}

bool TimelineData::hasTime() const
{
    return m_device && m_trace && m_device->timeAxis.hasTime;
}

int64_t TimelineData::timeOf(int64_t event) const
{
    return m_device && m_trace ? timeSinceStart(*m_device, *m_trace, event) : 0;
}

int64_t TimelineData::eventAtTime(int64_t timeUs) const
{
    return m_device && m_trace ? eventAtTimeSinceStart(*m_device, *m_trace, timeUs) : 0;
}

const std::vector<PhaseRun>& TimelineData::phaseRuns() const
{
    return deviceOrEmpty(m_device).phaseRuns;
}

const std::vector<StepStart>& TimelineData::stepStarts() const
{
    return deviceOrEmpty(m_device).stepStarts;
}

const std::vector<AnnotationSpan>& TimelineData::annotationSpans() const
{
    return deviceOrEmpty(m_device).annotationSpans;
}

int32_t TimelineData::allocationOfEvent(int64_t event) const
{
    if (!m_device || event < 0 || size_t(event) >= m_device->eventAllocation.size())
        return -1;
    return m_device->eventAllocation[size_t(event)];
}

} // namespace oomlens
