#pragma once

#include "core/diagnosis.h"

#include <iosfwd>
#include <string>
#include <vector>

namespace oomlens {

// Diagnoses as plain text: `oomlens diagnose --full`, and the golden files.
//   1. fragmentation (0.85) Free memory exists, but not in one piece
//      <summary>
//      - evidence ...
//      fix 1: <title> [changes the experiment] (saves 3.00 GiB, fits)
//         <detail>
//         | snippet line
//      fixes 3, 4 would not be enough alone: <title> (saves 65.52 MiB), <title> (saves 1.20 GiB)
// Each snippet is printed once: a rung that repeats one says where it stands. Rungs projected not
// to fit while another rung of the same ladder fits are collapsed onto one line (the JSON keeps
// them whole): they cannot make this run fit by themselves.
std::string diagnosesToText(const std::vector<Diagnosis>& diagnoses, bool withSnippets = true);

// "<title> [changes the experiment] (saves 3.00 GiB, fits)": how a rung is named wherever it is
// listed in text.
std::string fixHeadline(const Fix& fix);

// The snippet's lines, each as "<indent>| line".
void writeSnippet(std::ostream& out, const std::string& snippet, const std::string& indent);

// "<lead>: <headline>", then the fix's detail and, with `withSnippet`, its code, each under
// `indent`: the brief answer's fix and every rung of the full ladder are printed by this one.
void writeFix(std::ostream& out, const std::string& lead, const Fix& fix, const std::string& indent, bool withSnippet);

} // namespace oomlens
