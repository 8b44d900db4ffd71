#pragma once

#include "core/caseanalysis.h"

#include <string>

namespace oomlens {

// The inference run in the text output, beside the card's memory table and in its columns: the
// engine (and version), the card as the engine split it, the settings seen and the KV cache per
// token. Empty when the case shows no inference run.
std::string servingToText(const CaseAnalysis& analysis);

// "Workload: inference, vLLM 0.6.3 (V0 engine)": one line for summaries (MCP, the overview).
std::string servingWorkloadLine(const ServingView& view);

} // namespace oomlens
