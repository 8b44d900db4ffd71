#include "core/diagnosis/diagnosistext.h"

#include "core/units.h"

#include <cstdio>
#include <sstream>

namespace oomlens {

namespace {

std::string confidenceText(double confidence)
{
    char buffer[16];
    std::snprintf(buffer, sizeof buffer, "%.2f", confidence);
    return buffer;
}

} // namespace

std::string diagnosesToText(const std::vector<Diagnosis>& diagnoses, bool withSnippets)
{
    std::ostringstream out;
    if (diagnoses.empty()) {
        out << "No out-of-memory diagnosis: nothing in the inputs shows a failure.\n";
        return out.str();
    }
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
        int fixIndex = 0;
        for (const auto& fix : diagnosis.fixes) {
            out << "   fix " << ++fixIndex << ": " << fix.title;
            if (fix.changesExperiment)
                out << " [changes the experiment]";
            if (fix.projectedSavingBytes) {
                out << " (saves " << formatBytes(static_cast<uint64_t>(*fix.projectedSavingBytes));
                if (fix.fitsAfter)
                    out << (*fix.fitsAfter ? ", fits" : ", not enough alone");
                out << ")";
            }
            out << "\n      " << fix.detail << "\n";
            if (withSnippets && !fix.snippet.empty()) {
                std::istringstream lines(fix.snippet);
                for (std::string line; std::getline(lines, line);)
                    out << "      | " << line << "\n";
            }
        }
    }
    return out.str();
}

} // namespace oomlens
