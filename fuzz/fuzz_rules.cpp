// Category rules (JSON or YAML), applied to the snapshot that follows: parseCategoryRules, analyzeCase, JSON.
#include "fuzz/fuzztargets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    oomlens::fuzz::abortOn(oomlens::fuzz::rulesTarget(data, size));
    return 0;
}
