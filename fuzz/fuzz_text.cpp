// parseText and classifyText on any bytes, findings serialized to JSON.
#include "fuzz/fuzztargets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    oomlens::fuzz::abortOn(oomlens::fuzz::textTarget(data, size));
    return 0;
}
