// Container sniffing and unwrapping: gzip, torch.save ZIP (ZIP64), JSON, memory_viz HTML.
#include "fuzz/fuzztargets.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    oomlens::fuzz::abortOn(oomlens::fuzz::containerTarget(data, size));
    return 0;
}
