// readSnapshot with the native decoder only: the unpickler and the snapshot model builder.
#include "fuzz/fuzztargets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    oomlens::fuzz::abortOn(oomlens::fuzz::pickleTarget(data, size));
    return 0;
}
