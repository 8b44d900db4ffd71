// oomlens mcp: JSON-RPC lines answered in order by one server (lifecycle, tools/list, every tool's arguments).
#include "fuzz/fuzztargets.h"
#include "fuzz/mcptarget.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size)
{
    oomlens::fuzz::abortOn(oomlens::fuzz::mcpTarget(data, size));
    return 0;
}
