// A Hugging Face config.json: modelFromHfConfig, makePlan, the plan's JSON and text, addInput.
#include "fuzz/fuzztargets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    oomlens::fuzz::abortOn(oomlens::fuzz::configTarget(data, size));
    return 0;
}
