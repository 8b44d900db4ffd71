#pragma once

#include <cstdint>
#include <string_view>

namespace oomlens {

// Where in a training program an allocation or a failure happened.
// The string forms are part of the JSON contract (product.md §5).
enum class Phase : uint8_t { Unknown, Load, Forward, Backward, Optimizer, Eval, Data };

std::string_view phaseName(Phase phase);
Phase phaseFromName(std::string_view name);

// What an allocation is for. The string forms are the JSON keys of categories_at_peak.
// Communication (buffers that move data between ranks) and KvCache (an inference engine's
// key/value cache) came with wave 3 (product.md §3); Unknown stays last.
enum class Category : uint8_t {
    Parameters,
    Gradients,
    OptimizerState,
    Activations,
    Temporaries,
    Inputs,
    Communication,
    KvCache,
    Unknown
};
constexpr int categoryCount = 9;

std::string_view categoryName(Category category);
Category categoryFromName(std::string_view name);

} // namespace oomlens
