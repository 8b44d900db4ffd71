#pragma once

#include "core/caseanalysis.h"

#include <nlohmann/json.hpp>

namespace oomlens {

// The `diagnose --json` keys of core/presentation: "card_reconciliation" at the top (null when no
// input gives the card's total and free memory) and "history" in every snapshot entry (how much of
// the run its trace saw). Added to the document caseToJson builds; nothing there is renamed.
nlohmann::ordered_json withPresentationKeys(nlohmann::ordered_json document, const CaseAnalysis& analysis);

nlohmann::ordered_json cardReconciliationToJson(const CardReconciliation& card);
nlohmann::ordered_json traceHistoryToJson(const SnapshotAnalysis& analysis);

} // namespace oomlens
