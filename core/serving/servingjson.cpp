#include "core/serving/servingjson.h"

namespace oomlens {

namespace {

using json = nlohmann::ordered_json;

json lineToJson(const ServingLine& line)
{
    return json { { "line", line.line }, { "text", line.text } };
}

json optionalLine(const std::optional<ServingLine>& line)
{
    return line ? lineToJson(*line) : json(nullptr);
}

} // namespace

json servingToJson(const CaseAnalysis& analysis)
{
    if (!analysis.serving)
        return nullptr;
    const ServingView& view = *analysis.serving;
    const ServingRun& run = view.run;
    json settings = json::array();
    for (const ServingSetting& setting : run.settings)
        settings.push_back(
            { { "key", setting.key }, { "value", setting.value }, { "source", lineToJson(setting.source) } });
    json figures = json::array();
    for (const ServingFigure& figure : run.figures)
        figures.push_back(
            { { "key", figure.key }, { "bytes", figure.bytes }, { "source", lineToJson(figure.source) } });
    json budget = json::array();
    for (const ServingBudgetRow& row : view.rows)
        budget.push_back(
            { { "key", row.key }, { "label", row.label }, { "bytes", row.bytes }, { "source", row.source } });
    return json { { "workload", "inference" }, { "engine", servingEngineName(run.engine) },
        { "engine_label", servingEngineLabel(run.engine) }, { "engine_source", lineToJson(run.engineEvidence) },
        { "version", run.version.empty() ? json(nullptr) : json(run.version) },
        { "version_source", optionalLine(run.versionEvidence) },
        { "generation", run.generation.empty() ? json(nullptr) : json(run.generation) },
        { "failure", servingFailureName(run.failure) }, { "failure_source", optionalLine(run.failureLine) },
        { "settings", std::move(settings) }, { "figures", std::move(figures) }, { "budget", std::move(budget) },
        { "card_total_bytes", view.cardTotalBytes ? json(*view.cardTotalBytes) : json(nullptr) },
        { "kv_bytes_per_token", view.kvBytesPerToken ? json(*view.kvBytesPerToken) : json(nullptr) },
        { "kv_bytes_per_token_source", view.kvBytesPerTokenSource } };
}

} // namespace oomlens
