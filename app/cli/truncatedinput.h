#pragma once

namespace oomlens::cli {

// Snapshots are decoded from a memory map of the file (parsers/filemapping.h). When another
// process truncates the file while it is being decoded, the kernel answers the next read of the
// vanished pages with SIGBUS, which would end the process with a core dump and no word. This
// turns it into one line on stderr and exit status 1. A file that changes without shrinking is
// caught after the read (parsers/inputfile.h) and reported as that input's error.
void reportTruncatedInputs();

} // namespace oomlens::cli
