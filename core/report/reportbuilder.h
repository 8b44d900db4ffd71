#pragma once

#include "core/report/htmlreport.h"

#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oomlens::report {

// Writes the report section by section. The text sections (inputs, diagnoses, OOM messages,
// summaries, capture advice) live in reportbuilder.cpp and reporttextsections.cpp, the
// snapshot sections in reportsnapshotsections.cpp.
class ReportBuilder
{
public:
    ReportBuilder(const Case& input, const CaseAnalysis& analysis, const ReportOptions& options);
    std::string build();

private:
    void writeHead();
    void writeHeader();
    void writeNavigation();
    void writeInputs();
    void writeDiagnoses();
    void writeJob(); // reportjob.cpp
    void writeComparison(); // reportcompare.cpp
    void writePlan(); // reportplan.cpp
    void writePlanLayout(const planner::PlanResult& plan); // reportplan.cpp
    void writeOomMessages();
    void writeSummaries();
    void writeSnapshots();
    void writeSnapshot(size_t index, const SnapshotAnalysis& analysis);
    void writeTimeline(const SnapshotAnalysis& analysis, const DeviceAnalysis& device);
    void writeBreakdown(const DeviceAnalysis& device);
    void writeAllocatorMap(const SnapshotAnalysis& analysis, const DeviceAnalysis& device);
    void writeTopAllocations(const SnapshotAnalysis& analysis, const DeviceAnalysis& device);
    void writePrivatePools(size_t index); // reportprivatepools.cpp
    void writePinnedHostMemory(size_t index); // reportpinnedhost.cpp
    void writeCaptureAdvice();
    void writeFooter();

    std::string title() const;
    // A report of a plan alone (`oomlens plan --report`): no inputs, so no diagnosis or inputs.
    bool planOnly() const { return m_options.plan && m_case.inputs.empty(); }
    std::string planTitle() const; // reportplan.cpp
    std::string planSubtitle() const; // reportplan.cpp
    std::string captureAdviceReason() const;
    std::optional<uint64_t> capacityBytes() const;

    // Markup helpers: `text` is escaped, `raw` is trusted markup written by this class.
    void raw(std::string_view markup) { m_out += markup; }
    void text(std::string_view content);
    void element(std::string_view tag, std::string_view content, std::string_view cssClass = {});
    void beginSection(std::string_view id, std::string_view heading);
    void endSection() { raw("</section>\n"); }
    void keyValueRow(std::string_view key, std::string_view value);
    void writeList(const std::vector<std::string>& items);
    void stack(const Snapshot& snapshot, StackId id, std::string_view summary);

    const Case& m_case;
    const CaseAnalysis& m_analysis;
    const ReportOptions& m_options;
    std::string m_out;
};

} // namespace oomlens::report
