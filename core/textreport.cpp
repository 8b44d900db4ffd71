#include "core/textreport.h"

#include "core/analysis/cardreconciliation.h"
#include "core/diagnosis/diagnosistext.h"
#include "core/presentation/cardwords.h"
#include "core/presentation/devicesheld.h"
#include "core/presentation/explain.h"
#include "core/presentation/historywords.h"
#include "core/presentation/labels.h"
#include "core/presentation/poolstext.h"
#include "core/serving/servingtext.h"
#include "core/snapshotbackend.h"
#include "core/units.h"

#include <algorithm>
#include <iomanip>
#include <sstream>

namespace oomlens {

namespace {

void writeInputs(std::ostringstream& out, const Case& input)
{
    out << "Inputs\n";
    for (const auto& item : input.inputs) {
        out << "  " << item.path << ": ";
        if (item.error)
            out << "could not be read: " << *item.error << '\n';
        else
            out << inputKindLabel(item.kind) << '\n';
    }
}

void writeMessages(std::ostringstream& out, const Case& input)
{
    for (const auto& message : input.text.oomMessages) {
        out << "\nOOM message";
        if (message.backend != Backend::None)
            out << " (" << backendName(message.backend);
        if (message.templateId != OomTemplate::None)
            out << ", template " << oomTemplateName(message.templateId);
        if (!message.torchVersionHint.empty())
            out << ", PyTorch " << message.torchVersionHint;
        if (message.backend != Backend::None)
            out << ')';
        if (message.phase != Phase::Unknown)
            out << " in " << phaseInSentence(message.phase);
        out << '\n';
        for (const auto& line : explainOomMessage(message))
            out << "  " << line << '\n';
    }
    for (const auto& summary : input.text.summaries) {
        out << "\nmemory_summary() of device " << summary.device << '\n';
        for (const auto& line : explainSummary(summary))
            out << "  " << line << '\n';
    }
    for (const auto& table : input.text.nvidiaSmi) {
        out << "\nnvidia-smi\n";
        for (const auto& line : explainNvidiaSmi(table))
            out << "  " << line << '\n';
    }
    for (const auto& setting : input.text.allocConfs)
        out << "\nAllocator settings (" << setting.source << "): " << setting.raw << '\n';
}

// A heading and its lines, indented under it; nothing when there are no lines.
void writeLines(std::ostringstream& out, std::string_view heading, const std::vector<std::string>& lines)
{
    if (lines.empty())
        return;
    out << heading << '\n';
    for (const std::string& line : lines)
        out << "    " << line << '\n';
}

void writeSnapshots(std::ostringstream& out, const Case& input, const CaseAnalysis& analysis)
{
    for (size_t i = 0; i < analysis.snapshots.size(); ++i) {
        const SnapshotAnalysis& snapshot = analysis.snapshots[i];
        const DeviceAnalysis* device = snapshot.primary();
        std::string path;
        for (const auto& item : input.inputs) {
            if (item.snapshotIndex == static_cast<int>(i))
                path = item.path;
        }
        // Named when another backend wrote it in CUDA's format: "Snapshot x.pickle, Intel XPU device 0".
        const SnapshotBackend backend
            = snapshot.snapshot ? snapshotBackend(*snapshot.snapshot, input.text.oomMessages) : SnapshotBackend::Cuda;
        out << "\nSnapshot " << path << ", "
            << (backend == SnapshotBackend::Cuda ? std::string() : std::string(snapshotBackendLabel(backend)) + " ")
            << "device " << snapshot.primaryDevice << '\n';
        if (!device) {
            out << "  no allocations recorded on this device\n";
            continue;
        }
        TraceHistory history = device->history;
        history.backend = backend;
        if (history.segmentsOnly()) {
            // No trace: the figures are the dump's, and a "peak" would only be the dump again.
            out << "  allocated at the dump " << formatBytes(device->peakAllocatedBytes) << '\n';
        } else {
            out << "  peak allocated " << formatBytes(device->peakAllocatedBytes);
            if (device->peakTimeUs > 0)
                out << " at event " << device->peakEvent;
            out << '\n';
        }
        for (int c = 0; c < categoryCount; ++c) {
            if (device->categoriesAtPeak[c] == 0)
                continue;
            out << "    " << categoryLabel(static_cast<Category>(c)) << ": " << formatBytes(device->categoriesAtPeak[c])
                << '\n';
        }
        for (const auto& headroom : analysis.headroom) {
            if (headroom.snapshotIndex != static_cast<int>(i))
                continue;
            out << "  peak reserved " << formatBytes(headroom.peakReservedBytes);
            if (headroom.failed && headroom.capacityBytes) {
                out << " on a " << formatBytes(*headroom.capacityBytes) << " card, then a request failed";
            } else if (headroom.capacityBytes && headroom.headroomBytes) {
                out << " on a " << formatBytes(*headroom.capacityBytes) << " card: ";
                if (*headroom.headroomBytes >= 0)
                    out << formatBytes(static_cast<uint64_t>(*headroom.headroomBytes)) << " to spare";
                else
                    out << formatBytes(static_cast<uint64_t>(-*headroom.headroomBytes)) << " over";
            }
            out << '\n';
        }
        if (!device->ooms.empty())
            out << "  " << device->ooms.size() << " out-of-memory event(s) recorded\n";
        writeLines(out, "  every device of the snapshot:", devicesHeld(snapshot));
        writeLines(out, "  memory pools at the dump:", privatePoolLines(input, analysis, i));
        writeLines(out, "  frees that waited for another stream:", pendingFreeLines(analysis, i));
        if (history.segmentsOnly() || history.truncated()) {
            out << "  history: " << coverageName(history.coverage) << '\n';
            for (const std::string& line : historyStatement(*snapshot.snapshot, history))
                out << "    " << line << '\n';
            out << "    " << historyAdvice(history) << '\n';
        }
        if (!snapshot.rulesError.empty())
            out << "  category rules not applied: " << snapshot.rulesError << '\n';
    }
    if (!analysis.links.empty()) {
        out << "\nHow the inputs fit together\n";
        for (const auto& link : analysis.links)
            out << "  " << link << '\n';
    }
}

// The allocator's, the process's and the card's figures side by side, and what the rest of the
// card (outside PyTorch's allocator) usually is.
void writeCard(std::ostringstream& out, const CaseAnalysis& analysis)
{
    const CardReconciliation& card = analysis.card;
    if (!card.available())
        return;
    out << "\nThe card's memory: allocator, process, card (device " << card.device << ")\n";
    std::optional<CardFigure::View> view;
    for (const CardFigure& figure : card.figures) {
        if (figure.view != view) {
            view = figure.view;
            out << "  " << cardViewLabel(figure.view) << '\n';
        }
        out << "    " << std::left << std::setw(44) << figure.label << std::right << std::setw(12)
            << (figure.bytes ? formatBytes(*figure.bytes) : std::string("not given")) << "  " << figure.source << '\n';
    }
    for (const std::string& note : card.notes)
        out << "  " << note << '\n';
    if (card.restMatters) {
        out << "  The rest of the card is usually:\n";
        for (const RestOfCardPart& part : card.parts)
            out << "    " << part.name << ": " << part.typicalSize << ". Check: " << part.whatToCheck << ".\n";
    }
}

// torch.profiler's memory timelines: the peak in PyTorch's categories, each with the oomlens
// category it is drawn as.
void writeProfilerTimelines(std::ostringstream& out, const Case& input)
{
    for (const ProfilerTimeline& timeline : input.profilerTimelines) {
        const ProfilerTimeline::Point* peak = timeline.peak();
        if (!peak)
            continue;
        out << "\ntorch.profiler memory timeline " << timeline.path;
        if (timeline.device)
            out << ", " << *timeline.device;
        out << " (" << profilerTimelineFormatName(timeline.format) << ", " << timeline.events << " events)\n";
        out << "  peak " << formatBytes(static_cast<uint64_t>(std::max<int64_t>(peak->total(), 0))) << ", "
            << formatDurationUs(peak->timeUs - timeline.firstTimeUs()) << " after the first event\n";
        for (int p = 0; p < profilerCategoryCount; ++p) {
            const auto category = static_cast<ProfilerCategory>(p);
            const int64_t bytes = peak->bytes[static_cast<size_t>(p)];
            if (bytes > 0)
                out << "    " << profilerCategoryName(category) << ": " << formatBytes(static_cast<uint64_t>(bytes))
                    << " (" << categoryLabel(oomlensCategory(category)) << ")\n";
        }
        for (const std::string& warning : timeline.warnings)
            out << "  note: " << warning << '\n';
    }
}

void writeDiagnoses(std::ostringstream& out, const CaseAnalysis& analysis)
{
    if (analysis.diagnoses.empty()) {
        out << "\nNo out-of-memory diagnosis: nothing in the inputs shows a failure.\n";
        return;
    }
    out << "\nDiagnosis, most likely first\n" << diagnosesToText(analysis.diagnoses);
}

} // namespace

std::string caseToText(const Case& input, const CaseAnalysis& analysis)
{
    std::ostringstream out;
    writeInputs(out, input);
    writeMessages(out, input);
    writeCard(out, analysis);
    out << servingToText(analysis);
    writeSnapshots(out, input, analysis);
    writeProfilerTimelines(out, input);
    writeDiagnoses(out, analysis);
    return std::move(out).str();
}

} // namespace oomlens
