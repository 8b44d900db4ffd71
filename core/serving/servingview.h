#pragma once

#include "core/case.h"
#include "core/serving/servingrun.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace oomlens {

// One row of the card's memory as the engine split it: weights, the profile run's activation
// peak, memory outside PyTorch, CUDA graphs, the KV cache, what is left. Negative where the
// engine printed a negative rest.
struct ServingBudgetRow
{
    std::string key; // the JSON key: "card_total", "budget", "weights", "activation_peak", "non_torch", ...
    std::string label; // "Model weights"
    int64_t bytes = 0;
    std::string source; // "line 4: Model loading took 5.20 GiB", or "derived: …"
};

// An inference run, read once for every view: the engine and its version, the settings seen,
// the card's split, and the KV cache's bytes per token where the log or a config.json tells it.
struct ServingView
{
    ServingRun run;
    std::vector<ServingBudgetRow> rows;
    std::optional<uint64_t> cardTotalBytes;
    std::string cardTotalSource;
    std::optional<double> kvBytesPerToken; // one token's cache on one GPU
    std::string kvBytesPerTokenSource;

    const ServingBudgetRow* row(std::string_view key) const;
    // "vLLM 0.6.4.post1 (V0 engine)", "TGI".
    std::string engineText() const;
};

// A budget figure: "5.20 GiB", and "-1.05 GiB" where the engine printed a negative rest.
std::string signedBytesText(int64_t bytes);

// Nothing when the inputs show no inference run.
std::optional<ServingView> servingView(const Case& input);

} // namespace oomlens
