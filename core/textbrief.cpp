#include "core/textbrief.h"

#include "core/diagnosis/diagnosistext.h"
#include "core/phasewords.h"
#include "core/presentation/devicesheld.h"
#include "core/presentation/explain.h"
#include "core/presentation/labels.h"
#include "core/presentation/poolstext.h"
#include "core/presentation/verdict.h"
#include "core/units.h"

#include <cmath>
#include <cstdlib>
#include <sstream>

namespace oomlens {

namespace {

// Beyond this many inputs a line each would push the answer off the screen: they are counted, and
// only the unreadable ones are named (an input is never dropped in silence).
constexpr size_t inputsListedOneByOne = 3;

void writeInputs(std::ostringstream& out, const Case& input)
{
    const bool oneByOne = input.inputs.size() <= inputsListedOneByOne;
    size_t unreadable = 0;
    for (const CaseInput& item : input.inputs) {
        if (item.error) {
            ++unreadable;
            out << "Could not read " << item.path << ": " << *item.error << '\n';
        } else if (oneByOne) {
            out << "Read " << item.path << " (" << inputKindLabel(item.kind) << ")\n";
        }
    }
    if (!oneByOne)
        out << "Read " << input.inputs.size() - unreadable << " of " << input.inputs.size() << " inputs\n";
}

// What failed, in the message's own figures (the first line of its plain-words reading), in the
// phase the texts show (TextFindings::failingPhase, as `--json` gives it).
void writeFailure(std::ostringstream& out, const Case& input)
{
    const Phase phase = input.text.failingPhase();
    const std::string where = phase == Phase::Unknown ? std::string() : " in " + phaseInSentence(phase);
    if (input.text.oomMessages.empty()) {
        if (!where.empty())
            out << "A traceback shows the failure" << where << '\n';
        return;
    }
    // The last message is the one diagnosed first (diagnosis/textdiagnosis.h).
    const OomMessage& message = input.text.oomMessages.back();
    const std::vector<std::string> lines = explainOomMessage(message);
    out << "Out of memory" << where;
    if (message.rank)
        out << " on rank " << *message.rank;
    if (input.text.oomMessages.size() > 1)
        out << " (the last of " << input.text.oomMessages.size() << " messages)";
    out << (lines.empty() ? std::string(".") : ": " + lines.front()) << '\n';
}

void writeSnapshots(std::ostringstream& out, const Case& input, const CaseAnalysis& analysis)
{
    for (const SnapshotHeadroom& headroom : analysis.headroom) {
        out << "Snapshot device " << headroom.device << ": peak " << formatBytes(headroom.peakAllocatedBytes)
            << " allocated, " << formatBytes(headroom.peakReservedBytes) << " reserved";
        if (headroom.failed)
            out << ", then a request failed";
        else if (headroom.capacityBytes && headroom.headroomBytes)
            out << " on a " << formatBytes(*headroom.capacityBytes) << " card ("
                << formatBytes(static_cast<uint64_t>(std::llabs(*headroom.headroomBytes)))
                << (*headroom.headroomBytes >= 0 ? " to spare)" : " over)");
        out << '\n';
        if (headroom.snapshotIndex < 0 || static_cast<size_t>(headroom.snapshotIndex) >= analysis.snapshots.size())
            continue;
        const auto index = static_cast<size_t>(headroom.snapshotIndex);
        for (const std::string& line : devicesHeld(analysis.snapshots[index]))
            out << "  " << line << '\n';
        // Whose pools hold the card (an inference engine's KV cache beside a trainer) and frees still
        // waiting for a stream: the JSON's private_pools and pending_frees, in words.
        for (const std::string& line : privatePoolLines(input, analysis, index))
            out << "  " << line << '\n';
        for (const std::string& line : pendingFreeLines(analysis, index))
            out << "  " << line << '\n';
    }
}

void writeVerdict(std::ostringstream& out, const Verdict& verdict)
{
    const Diagnosis& diagnosis = *verdict.diagnosis;
    out << "\nVerdict: " << diagnosis.title << " (" << diagnosisIdName(diagnosis.id) << ", confidence "
        << static_cast<int>(std::lround(diagnosis.confidence * 100)) << "%)\n";
    if (!diagnosis.summary.empty())
        out << "  " << diagnosis.summary << '\n';
    if (!verdict.evidence.empty()) {
        out << "Evidence:\n";
        for (const Evidence* evidence : verdict.evidence)
            out << "  - " << evidence->text << '\n';
    }
    if (verdict.fix) {
        std::string lead = "\nFix";
        if (verdict.fixRung > 1)
            lead += " (rung " + std::to_string(verdict.fixRung) + " of the ladder, the first projected to fit)";
        writeFix(out, lead, *verdict.fix, "  ", true);
    }
    if (!verdict.alternatives.empty()) {
        out << "\nAlso possible:";
        std::string separator = " ";
        for (const Diagnosis* other : verdict.alternatives) {
            out << separator << diagnosisIdName(other->id) << " ("
                << static_cast<int>(std::lround(other->confidence * 100)) << "%)";
            separator = ", ";
        }
        out << '\n';
    }
}

} // namespace

std::string caseToBriefText(const Case& input, const CaseAnalysis& analysis)
{
    std::ostringstream out;
    writeInputs(out, input);
    writeFailure(out, input);
    writeSnapshots(out, input, analysis);
    const Verdict verdict = verdictOf(analysis);
    if (verdict.empty())
        out << "\nNo out-of-memory diagnosis: nothing in the inputs shows a failure.\n";
    else
        writeVerdict(out, verdict);
    out << "\nEvery input's figures, each diagnosis and the whole ladder of fixes: oomlens diagnose --full\n";
    return std::move(out).str();
}

} // namespace oomlens
