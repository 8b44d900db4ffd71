#include "app/cli/errorlines.h"

#include <cstdio>

namespace oomlens::cli {

void printErrorLine(const std::string& line)
{
    std::fprintf(stderr, "%s\n", line.c_str());
}

} // namespace oomlens::cli
