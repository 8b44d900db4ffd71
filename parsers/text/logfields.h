#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace oomlens::text {

// One number a progress line prints under a name, whatever the logging style: "seq_len 412",
// "max_mem 17.9 GiB", "torch.cuda.memory_allocated()=6.02GB", "{'loss': 1.93", "Step [120/1000]",
// "padded to 4096 tokens", "mem_gb=6.02", "Memory (MiB): 6120".
struct LogField
{
    // Lower case, quotes and call parentheses dropped, the last dotted part only, a preceding word
    // joined with '_': "max_mem", "memory_allocated", "padded_to", "longest_sample".
    std::string key;
    std::optional<uint64_t> integer; // the value when it is a whole number ("1,200" reads 1200)
    std::optional<uint64_t> bytes; // a size: a unit after the number ("17.9 GiB") or in the name ("mem_gb")
    std::string after; // the word right after the value, lower case: "tokens", "it/s" ("/" kept)
    size_t begin = 0; // where the value starts in the line
};

// Every named number of the line, left to right. Numbers inside words ("fp16", "h100"), the
// denominator of "120/1000", percentages and exponents of "4.9e-05" are not fields.
std::vector<LogField> logFields(std::string_view line);

// Whether the key, split at '_', has `word` as one of its parts: "max_mem" has "mem", "memory" has not "mem".
bool keyHasPart(std::string_view key, std::string_view word);

} // namespace oomlens::text
