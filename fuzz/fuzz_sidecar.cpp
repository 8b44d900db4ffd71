// The capture sidecar, alone or after a snapshot: parseCaptureSidecar, addInput, analyzeCase, JSON and text.
#include "fuzz/fuzztargets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    oomlens::fuzz::abortOn(oomlens::fuzz::sidecarTarget(data, size));
    return 0;
}
