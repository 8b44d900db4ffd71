#pragma once

#include <QStringList>

namespace oomlens::cli {

// `oomlens plan`: the memory planner (product.md §5, Wave-2 commands). Returns 0 when planned
// (whether or not it fits), 1 when a model or snapshot file cannot be read, 2 for usage errors.
int runPlan(const QStringList& arguments);

} // namespace oomlens::cli
