#include "core/report/reportcontext.h"

#include "core/planner/planresult.h"

namespace oomlens::report {

namespace {

std::optional<uint64_t> findCapacity(const Case& input)
{
    for (const OomMessage& message : input.text.oomMessages) {
        if (message.totalBytes)
            return message.totalBytes;
    }
    for (const NvidiaSmiTable& table : input.text.nvidiaSmi) {
        for (const NvidiaSmiGpu& gpu : table.gpus) {
            if (gpu.totalBytes)
                return gpu.totalBytes;
        }
    }
    return std::nullopt;
}

std::string reportTitle(const ReportContext& context)
{
    if (!context.options.title.empty())
        return context.options.title;
    if (!context.analysis.diagnoses.empty())
        return "Out of memory: " + context.analysis.diagnoses.front().title;
    if (context.planOnly)
        return "Memory plan: " + context.options.plan->model.name;
    if (!context.input.text.oomMessages.empty())
        return "Out of memory report";
    return "GPU memory report";
}

bool anyStack(const Snapshot& snapshot)
{
    for (const DeviceTrace& trace : snapshot.traces) {
        for (const TraceEvent& event : trace.events) {
            if (event.stack != FrameTable::emptyStack())
                return true;
        }
    }
    return false;
}

std::string adviceReason(const ReportContext& context)
{
    if (context.planOnly)
        return {}; // before the run there is nothing to capture yet
    if (context.input.snapshots.empty())
        return "No memory snapshot was among the inputs, so there is no timeline, no categories and no stacks of "
               "what was live at the peak. A snapshot recorded as below shows all of that.";
    for (size_t i = 0; i < context.input.snapshots.size(); ++i) {
        const Snapshot& snapshot = *context.input.snapshots[i];
        if (snapshot.totalTraceEvents() == 0)
            return "The snapshot holds no allocation trace (history was not recorded, or the PyTorch version is too "
                   "old), so the report cannot show how memory grew. Record history as below.";
        if (!anyStack(snapshot))
            return "The snapshot carries no Python stacks, so allocations cannot be traced to the code that made "
                   "them. Record with stacks (the default) as below.";
        if (i < context.analysis.snapshots.size()) {
            for (const DeviceAnalysis& device : context.analysis.snapshots[i].devices) {
                if (device.traceTruncated)
                    return "The trace's ring buffer overflowed: the beginning of the run (often where the parameters "
                           "and optimizer state were allocated) is missing. Raise max_entries as below.";
            }
        }
    }
    return {};
}

const DeviceAnalysis* shownDevice(const SnapshotAnalysis& analysis)
{
    for (const DeviceAnalysis& device : analysis.devices) {
        if (device.device == analysis.primaryDevice)
            return &device;
    }
    return analysis.devices.empty() ? nullptr : &analysis.devices.front();
}

ShownSnapshot showSnapshot(const Case& input, const SnapshotAnalysis& analysis, size_t index)
{
    ShownSnapshot shown;
    shown.index = index;
    shown.analysis = &analysis;
    if (!analysis.snapshot)
        return shown;
    shown.device = shownDevice(analysis);
    shown.backend = snapshotBackend(*analysis.snapshot, input.text.oomMessages);
    if (shown.device) {
        shown.history = shown.device->history;
        shown.history.backend = shown.backend;
        shown.annotations = AllocationAnnotations(*analysis.snapshot, *shown.device);
    }
    for (const CaseInput& caseInput : input.inputs) {
        if (caseInput.snapshotIndex == static_cast<int>(index))
            shown.path = caseInput.path;
    }
    return shown;
}

} // namespace

ReportContext::ReportContext(
    const Case& reportedCase, const CaseAnalysis& caseAnalysis, const ReportOptions& reportOptions)
    : input(reportedCase)
    , analysis(caseAnalysis)
    , options(reportOptions)
    , planOnly(reportOptions.plan && reportedCase.inputs.empty())
    , capacityBytes(findCapacity(reportedCase))
    , card(caseAnalysis.card)
{
    title = reportTitle(*this);
    captureAdviceReason = adviceReason(*this);
    snapshots.reserve(caseAnalysis.snapshots.size());
    for (size_t i = 0; i < caseAnalysis.snapshots.size(); ++i)
        snapshots.push_back(showSnapshot(reportedCase, caseAnalysis.snapshots[i], i));
}

} // namespace oomlens::report
