#pragma once

#include "core/case.h"
#include "core/caseanalysis.h"

#include <QString>

#include <memory>

namespace oomlens {

// One open case as the GUI holds it: the inputs and their analysis, immutable once built.
// Adding inputs to a case produces a new LoadedCase; views swap to it as a whole.
struct LoadedCase
{
    Case input;
    CaseAnalysis analysis;
    QString title;
};

using LoadedCasePtr = std::shared_ptr<const LoadedCase>;

} // namespace oomlens
