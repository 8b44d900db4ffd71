#pragma once

#include "core/diagnosis.h"

#include <string>
#include <vector>

namespace oomlens {

// Diagnoses as plain text: the `oomlens diagnose` output without --json, and the golden files.
//   1. fragmentation (0.85) Free memory exists, but not in one piece
//      <summary>
//      - evidence ...
//      fix 1: <title> [changes the experiment] (saves 3.00 GiB, fits)
//         <detail>
//         | snippet line
std::string diagnosesToText(const std::vector<Diagnosis>& diagnoses, bool withSnippets = true);

} // namespace oomlens
