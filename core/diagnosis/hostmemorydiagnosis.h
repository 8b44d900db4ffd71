#pragma once

#include "core/diagnosis.h"
#include "core/textinputs.h"

#include <optional>

namespace oomlens {

// The host's RAM ran out and its OOM killer (kernel, cgroup, container runtime) ended the run:
// "Out of memory: Killed process", a DataLoader worker killed by SIGKILL, a bare "Killed", exit
// status 137. Empty when the findings show no such kill. The fixes act on host memory only.
std::optional<Diagnosis> diagnoseHostMemory(const TextFindings& findings);

} // namespace oomlens
