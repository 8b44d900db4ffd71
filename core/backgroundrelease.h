#pragma once

#include <memory>

namespace oomlens {

// Drops `owner` (the last reference to a decoder's tables, a file's mapping) on a thread of its
// own instead of the caller's.
//
// Freeing is not free where it returns gigabytes to the kernel: unmapping a 2 GB snapshot's
// mapping took 190 ms on the 2-core development VM, and the decoder's tables another 100 ms,
// all on the path from "file chosen" to "timeline shown" while the second core sat idle in the
// single-threaded analysis that follows. Nothing waits for the release: the memory comes back
// a moment later than it would have.
//
// One thread serves the whole process, in the order releases were asked for, and finishes what
// it was given before the process exits.
void releaseInBackground(std::shared_ptr<void> owner);

// Returns once everything handed over so far is released (tests; a caller that needs the memory
// back before it goes on).
void waitForBackgroundReleases();

// Releases, on the calling thread, whatever the background thread has not started on yet; one it
// is releasing now is left to it. Called before the next big allocations (the analysis of a
// decoded snapshot), so that the file's mapping and the decoder's tables are given back before the
// analysis' memory is taken even where the releasing thread has not been scheduled yet: on a
// loaded machine it used to hold the 1M-event file's 200 MiB mapping through the analysis, and the
// peak was 336 MiB instead of 284 in 3 runs of 8 (bench/README.md). On an idle core the thread
// has long taken them, and this costs nothing.
void finishQueuedReleasesHere();

} // namespace oomlens
