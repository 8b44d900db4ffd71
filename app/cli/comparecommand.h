#pragma once

#include <string>
#include <vector>

namespace oomlens::cli {

// `oomlens compare A B` or `oomlens compare A --window STEP:STEP --window STEP:STEP` (product.md
// §5, Wave-2 commands): the comparison as text, as JSON (--json) or as the HTML report's
// comparison section (-o FILE.html). Returns 0 when compared, 1 when an input cannot be read or
// is not a snapshot, 2 for usage errors.
int runCompare(const std::vector<std::string>& arguments);

} // namespace oomlens::cli
