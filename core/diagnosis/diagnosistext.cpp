#include "core/diagnosis/diagnosistext.h"

#include "core/units.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <ostream>
#include <sstream>

namespace oomlens {

namespace {

std::string confidenceText(double confidence)
{
    char buffer[16];
    std::snprintf(buffer, sizeof buffer, "%.2f", confidence);
    return buffer;
}

std::string savingText(const Fix& fix)
{
    if (!fix.projectedSavingBytes)
        return {};
    std::string text = "saves " + formatBytes(static_cast<uint64_t>(*fix.projectedSavingBytes));
    if (fix.fitsAfter)
        text += *fix.fitsAfter ? ", fits" : ", not enough alone";
    return text;
}

// A rung that cannot make the run fit alone while another rung of the same ladder does.
bool outdone(const Fix& fix, bool ladderHasFit)
{
    return ladderHasFit && fix.fitsAfter == false;
}

void writeOutdone(std::ostringstream& out, const Diagnosis& diagnosis)
{
    std::string numbers;
    std::string names;
    int count = 0;
    for (size_t i = 0; i < diagnosis.fixes.size(); ++i) {
        const Fix& fix = diagnosis.fixes[i];
        if (!outdone(fix, true))
            continue;
        numbers += (count == 0 ? "" : ", ") + std::to_string(i + 1);
        names += (count == 0 ? "" : "; ") + fix.title;
        if (fix.projectedSavingBytes)
            names += " (saves " + formatBytes(static_cast<uint64_t>(*fix.projectedSavingBytes)) + ")";
        ++count;
    }
    if (count > 0)
        out << "   " << (count == 1 ? "fix " : "fixes ") << numbers << " would not be enough alone: " << names << "\n";
}

} // namespace

std::string fixHeadline(const Fix& fix)
{
    std::string line = fix.title;
    if (fix.changesExperiment)
        line += " [changes the experiment]";
    if (const std::string saving = savingText(fix); !saving.empty())
        line += " (" + saving + ")";
    return line;
}

void writeSnippet(std::ostream& out, const std::string& snippet, const std::string& indent)
{
    std::istringstream lines(snippet);
    for (std::string line; std::getline(lines, line);)
        out << indent << "| " << line << "\n";
}

void writeFix(std::ostream& out, const std::string& lead, const Fix& fix, const std::string& indent, bool withSnippet)
{
    out << lead << ": " << fixHeadline(fix) << '\n';
    if (!fix.detail.empty())
        out << indent << fix.detail << '\n';
    if (withSnippet && !fix.snippet.empty())
        writeSnippet(out, fix.snippet, indent);
}

std::string diagnosesToText(const std::vector<Diagnosis>& diagnoses, bool withSnippets)
{
    std::ostringstream out;
    if (diagnoses.empty()) {
        out << "No out-of-memory diagnosis: nothing in the inputs shows a failure.\n";
        return out.str();
    }
    std::map<std::string, std::string> snippetsShown; // snippet -> "fix 2 of diagnosis 1"
    int index = 0;
    for (const auto& diagnosis : diagnoses) {
        out << ++index << ". " << diagnosisIdName(diagnosis.id) << " (" << confidenceText(diagnosis.confidence) << ") "
            << diagnosis.title << "\n";
        if (!diagnosis.summary.empty())
            out << "   " << diagnosis.summary << "\n";
        for (const auto& evidence : diagnosis.evidence) {
            out << "   - " << evidence.text;
            if (evidence.link && evidence.link->eventIndex >= 0)
                out << " [event " << evidence.link->eventIndex << "]";
            out << "\n";
        }
        const bool ladderHasFit = std::any_of(diagnosis.fixes.begin(), diagnosis.fixes.end(),
            [](const Fix& fix) { return fix.fitsAfter.value_or(false); });
        int fixIndex = 0;
        for (const auto& fix : diagnosis.fixes) {
            ++fixIndex;
            if (outdone(fix, ladderHasFit))
                continue;
            writeFix(out, "   fix " + std::to_string(fixIndex), fix, "      ", false);
            if (!withSnippets || fix.snippet.empty())
                continue;
            const std::string here = "fix " + std::to_string(fixIndex) + " of diagnosis " + std::to_string(index);
            const auto [shown, first] = snippetsShown.emplace(fix.snippet, here);
            if (first)
                writeSnippet(out, fix.snippet, "      ");
            else
                out << "      | (the same code as " << shown->second << ")\n";
        }
        if (ladderHasFit)
            writeOutdone(out, diagnosis);
    }
    return out.str();
}

} // namespace oomlens
