#include "core/presentation/cardreconciliationjson.h"

#include "core/analysis/cardreconciliation.h"
#include "core/presentation/cardwords.h"
#include "core/presentation/historywords.h"

namespace oomlens {

using json = nlohmann::ordered_json;

json cardReconciliationToJson(const CardReconciliation& card)
{
    if (!card.available())
        return nullptr;
    json figures = json::array();
    for (const CardFigure& figure : card.figures) {
        figures.push_back({ { "view", cardViewName(figure.view) }, { "key", figure.key }, { "label", figure.label },
            { "bytes", figure.bytes ? json(*figure.bytes) : json(nullptr) }, { "source", figure.source },
            { "meaning", figure.meaning } });
    }
    json bands = json::array();
    for (const CardBand& band : card.bands)
        bands.push_back({ { "key", cardBandName(band.kind) }, { "label", band.label }, { "bytes", band.bytes } });
    json parts = json::array();
    for (const RestOfCardPart& part : card.parts) {
        parts.push_back({ { "key", part.key }, { "name", part.name }, { "typical_size", part.typicalSize },
            { "what_to_check", part.whatToCheck } });
    }
    json checks = json::array();
    for (const OomFigureCheck& check : card.oomChecks) {
        checks.push_back({ { "key", check.key }, { "label", check.label }, { "message_bytes", check.messageBytes },
            { "snapshot_bytes", check.snapshotBytes }, { "agrees", check.agrees } });
    }
    return json { { "device", card.device }, { "figures", std::move(figures) }, { "bands", std::move(bands) },
        { "rest_of_card_bytes", card.restOfCardBytes ? json(*card.restOfCardBytes) : json(nullptr) },
        { "rest_of_card", std::move(parts) }, { "notes", card.notes },
        { "oom_event", card.oomEvent >= 0 ? json(card.oomEvent) : json(nullptr) },
        { "message_vs_snapshot", std::move(checks) } };
}

json traceHistoryToJson(const SnapshotAnalysis& analysis)
{
    const DeviceAnalysis* device = analysis.primary();
    if (!analysis.snapshot || !device)
        return nullptr;
    const TraceHistory& history = device->history;
    return json { { "coverage", coverageName(history.coverage) }, { "trace_events", history.traceEvents },
        { "alloc_events", history.allocEvents }, { "ghost_frees", history.ghostFrees },
        { "ghost_free_bytes", history.ghostFreeBytes }, { "older_live_blocks", history.olderLiveBlocks },
        { "older_live_bytes", history.olderLiveBytes }, { "older_than_trace_allocations", history.olderBlocks() },
        { "older_than_trace_bytes", history.olderBytes() },
        { "statement", historyStatement(*analysis.snapshot, history) }, { "advice", historyAdvice(history) } };
}

json withPresentationKeys(json document, const CaseAnalysis& analysis)
{
    json& snapshots = document["snapshots"];
    for (size_t i = 0; i < snapshots.size() && i < analysis.snapshots.size(); ++i)
        snapshots[i]["history"] = traceHistoryToJson(analysis.snapshots[i]);
    document["card_reconciliation"] = cardReconciliationToJson(analysis.card);
    return document;
}

} // namespace oomlens
