#include "core/serving/servingtext.h"

#include "core/serving/servingfixes.h"
#include "core/strings.h"
#include "core/units.h"

#include <cstdio>
#include <sstream>

namespace oomlens {

namespace {

constexpr size_t shownSourceChars = 110;

std::string shortened(const std::string& text)
{
    return text.size() <= shownSourceChars ? text : text.substr(0, shownSourceChars) + "…";
}

} // namespace

std::string servingWorkloadLine(const ServingView& view)
{
    std::string line = "Workload: inference, " + view.engineText();
    if (view.run.failure != ServingFailure::None)
        line += "; failed in " + std::string(servingFailureLabel(view.run.failure));
    return line;
}

std::string servingToText(const CaseAnalysis& analysis)
{
    if (!analysis.serving)
        return {};
    const ServingView& view = *analysis.serving;
    std::ostringstream out;
    out << '\n'
        << servingWorkloadLine(view) << " ("
        << shortened(view.run.engineEvidence.line > 0 ? view.run.engineEvidence.cite() : view.run.engineEvidence.text)
        << ")\n";
    if (view.run.versionEvidence)
        out << "  version from " << shortened(view.run.versionEvidence->cite()) << '\n';
    if (!view.rows.empty()) {
        out << "The card's memory as " << view.engineText() << " split it\n";
        for (const ServingBudgetRow& row : view.rows)
            out << "    " << padRight(row.label, 44) << padLeft(signedBytesText(row.bytes), 12) << "  "
                << shortened(row.source) << '\n';
    }
    if (!view.run.settings.empty()) {
        out << "  Settings seen:";
        const char* separator = " ";
        for (const ServingSetting& setting : view.run.settings) {
            if (view.run.setting(setting.key) != &setting)
                continue; // a later line set it again
            out << separator << setting.key << ' ' << settingText(setting.value) << " (line " << setting.source.line
                << ')';
            separator = ", ";
        }
        out << '\n';
    }
    if (view.kvBytesPerToken)
        out << "  KV cache per token: " << formatBytes(static_cast<uint64_t>(*view.kvBytesPerToken)) << ", from "
            << view.kvBytesPerTokenSource << '\n';
    return std::move(out).str();
}

} // namespace oomlens
