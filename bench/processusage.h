#pragma once

// What the benchmark process itself has used so far, as getrusage reports it: every bench program
// prints these beside its wall times.

namespace oomlens::bench {

double cpuSeconds(); // user + system
double peakRssMiB(); // the resident set's high-water mark
double currentRssMiB(); // the resident set now (VmRSS), for growth between two moments

} // namespace oomlens::bench
