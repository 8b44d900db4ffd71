#pragma once

#include "core/textinputs.h"

#include <vector>

namespace oomlens::text {

class TextLines;

// Signs that the host's RAM ran out, not the GPU's: the kernel's or a cgroup's OOM killer, a
// DataLoader worker killed by SIGKILL, a shell's bare "Killed", exit status 137 or torchrun's
// "exitcode: -9". Several lines of one kill (the kernel's report, then the shell's "Killed") are
// kept as separate findings; the diagnosis weighs them together.
std::vector<HostMemoryKill> findHostMemoryKills(const TextLines& lines);

} // namespace oomlens::text
