#pragma once

#include "core/report/htmlwriter.h"
#include "core/report/reportcontext.h"

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

// The report's sections, one per file (report<section>.cpp). Each writes its markup from the
// context and writes nothing when the case has nothing for it; which sections a report has and in
// which order is htmlreport.cpp's.
namespace oomlens::report::sections {

// The page: <head> with the title and style sheet, the header, the table of contents, the footer
// (reportpage.cpp).
void head(HtmlWriter& html, const ReportContext& context);
void header(HtmlWriter& html, const ReportContext& context);
void navigation(HtmlWriter& html, const ReportContext& context);
void footer(HtmlWriter& html, const ReportContext& context);

// Written first when a job of rank files was opened: every rank's peak, the failing rank.
void job(HtmlWriter& html, const ReportContext& context);
// The verdict at a glance, before the timeline (reportverdict.cpp); every diagnosis and its whole
// ladder after it (reportdiagnoses.cpp).
void verdict(HtmlWriter& html, const ReportContext& context);
void diagnoses(HtmlWriter& html, const ReportContext& context);
void comparison(HtmlWriter& html, const ReportContext& context);
void plan(HtmlWriter& html, const ReportContext& context);
// Every snapshot's timeline, breakdown, allocator state and largest allocations (reportsnapshots.cpp).
void snapshots(HtmlWriter& html, const ReportContext& context);
// The card's memory: allocator, process and card side by side.
void card(HtmlWriter& html, const ReportContext& context);
// An inference engine's own budget and settings (reportserving.cpp).
void serving(HtmlWriter& html, const ReportContext& context);
void profilerTimelines(HtmlWriter& html, const ReportContext& context);
void oomMessages(HtmlWriter& html, const ReportContext& context);
void summaries(HtmlWriter& html, const ReportContext& context);
void captureAdvice(HtmlWriter& html, const ReportContext& context);
void inputs(HtmlWriter& html, const ReportContext& context);

// The parts of one snapshot's section, in the order snapshots() writes them; each needs a device.
void timeline(HtmlWriter& html, const ReportContext& context, const ShownSnapshot& shown);
void breakdown(HtmlWriter& html, const ShownSnapshot& shown);
void allocatorMap(HtmlWriter& html, const ReportContext& context, const ShownSnapshot& shown);
void privatePools(HtmlWriter& html, const ReportContext& context, const ShownSnapshot& shown);
void pendingFrees(HtmlWriter& html, const ReportContext& context, const ShownSnapshot& shown);
// The notes the program attached to its allocations (torch.cuda.memory._annotate_tensor).
void annotations(HtmlWriter& html, const ReportContext& context, const ShownSnapshot& shown);
void topAllocations(HtmlWriter& html, const ReportContext& context, const ShownSnapshot& shown);
// Also written for a snapshot without a GPU device: host memory has its own.
void pinnedHostMemory(HtmlWriter& html, const ShownSnapshot& shown);

} // namespace oomlens::report::sections

// Pieces more than one section writes (reportparts.cpp).
namespace oomlens::report::parts {

// One allocation's stack as a <details> under `summary`, at most `maxFrames` frames.
void stack(HtmlWriter& html, const Snapshot& snapshot, StackId id, std::string_view summary, size_t maxFrames);
// The legend entries of the categories that `held` says a chart draws, and of those listed even
// when empty (labels.h's listedWhenEmpty), each followed by a space.
void categoryLegend(HtmlWriter& html, const std::function<bool(Category)>& held);
// A category's swatch and label in a table cell.
void categoryCell(HtmlWriter& html, Category category);
// "event 1,001,681", or "before the trace began" for memory older than the trace.
std::string eventLabel(int64_t event);
// Without a trace the only moment is the dump: "at the peak" would promise a curve that is not there.
bool dumpStateOnly(const DeviceAnalysis& device);
// A diagnosis card's heading: its title with the confidence, then its summary; the verdict and
// every diagnosis's card open the same way.
void diagnosisHeading(HtmlWriter& html, const Diagnosis& diagnosis);

} // namespace oomlens::report::parts
