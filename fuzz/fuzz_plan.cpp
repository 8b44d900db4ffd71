// oomlens plan flags, one "name value" a line: the planner's name tables, setupProblem, makePlan, JSON and text.
#include "fuzz/fuzztargets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    oomlens::fuzz::abortOn(oomlens::fuzz::planFlagsTarget(data, size));
    return 0;
}
