#pragma once

#include "core/textinputs.h"

#include <vector>

namespace oomlens::text {

class TextLines;

// Progress lines of a training loop that print a step and memory or a sequence length, in the
// loop's own words: "iter 300  allocated 10.80 GB  reserved 11.30 GB  batch 16x512",
// "step 4410 | seq_len 512 | mem 15.1 GiB | loss 1.90". At most one point per line.
std::vector<MemoryLogPoint> findMemoryLog(const TextLines& lines);

} // namespace oomlens::text
