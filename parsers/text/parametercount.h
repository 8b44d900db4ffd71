#pragma once

#include <cstdint>
#include <optional>
#include <vector>

namespace oomlens::text {

class TextLines;

// A parameter count the log printed, in the words of the library that printed it:
//   PEFT          "trainable params: 13,015,864,320 || all params: 13,015,864,320 || trainable%: 100.0000"
//   HF Trainer    "  Number of trainable parameters = 6,738,415,616"
//   Lightning     "124 M     Trainable params" / "124 M     Total params" (K, M, B, T suffixes)
//   torchinfo     "Trainable params: 124,439,808" / "Total params: 124,439,808"
//   plain prints  "Model has 6.7B trainable parameters", "number of parameters: 123.69M"
// "Non-trainable params" is neither: it is what the other two tell apart.
struct ParameterCount
{
    std::optional<uint64_t> trainable;
    std::optional<uint64_t> total; // all parameters, frozen ones included
    size_t lineIndex = 0; // 0-based index in the lines
};

std::vector<ParameterCount> findParameterCounts(const TextLines& lines);

} // namespace oomlens::text
