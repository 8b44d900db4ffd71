#pragma once

#include "core/textinputs.h"

#include <vector>

namespace oomlens::text {

class TextLines;

// nvidia-smi tables (the 79-column and the wider 545+ layout, GPU rows and the Processes table),
// the CSV query form, and torch.cuda.list_gpu_processes() output. Rows are matched one by one,
// never by column offsets, because widths differ between driver versions.
std::vector<NvidiaSmiTable> findNvidiaSmiTables(const TextLines& lines);

} // namespace oomlens::text
