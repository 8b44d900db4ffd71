#pragma once

#include <string_view>

namespace oomlens::report {

// The report's whole style sheet, inlined into <style>: the Content-Security-Policy allows no
// outside resources, so nothing may be linked. Light and dark via prefers-color-scheme, and
// an @media print block that opens every <details> section's content to paper.
std::string_view reportStyleSheet();

} // namespace oomlens::report
