#include "core/diagnosis/textrules.h"

namespace oomlens::textrules {

void addEvidence(Diagnosis& diagnosis, std::string text)
{
    diagnosis.evidence.push_back({ std::move(text), std::nullopt });
}

bool mentions(const OomFacts& facts, std::initializer_list<const char*> needles)
{
    for (const auto& function : facts.tracebackFunctions) {
        for (const char* needle : needles) {
            if (function.find(needle) != std::string::npos)
                return true;
        }
    }
    return false;
}

const SummaryRow* summaryRow(const MemorySummary& summary, const char* key)
{
    const auto it = summary.rows.find(key);
    return it == summary.rows.end() ? nullptr : &it->second;
}

const MemorySummary* summaryFor(const TextFindings& findings, int device)
{
    const MemorySummary* found = nullptr;
    for (const auto& summary : findings.summaries) {
        if (summary.device == device)
            found = &summary; // the last table printed is the one nearest the failure
    }
    return found;
}

} // namespace oomlens::textrules
