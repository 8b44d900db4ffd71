#pragma once

#include "core/case.h"

#include <QStringList>

namespace oomlens::cli {

// Reads every INPUT ('-' = stdin) into one case. Each input that cannot be read gets one line
// on stderr ("oomlens: PATH: reason"); the others are still analyzed. Returns the number of
// inputs that failed.
int loadInputs(const QStringList& paths, Case& into);

} // namespace oomlens::cli
