// Inputs loaded as the CLI loads them, analyzeCase, and the JSON and text outputs.
#include "fuzz/fuzztargets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    oomlens::fuzz::abortOn(oomlens::fuzz::caseTarget(data, size));
    return 0;
}
