#pragma once

namespace oomlens {

// Moments of the app's start that bench/bench_firstpaint times from outside the process.
enum class StartupMark { WindowPainted, TimelinePainted, CaseComplete };

// With OOMLENS_STARTUP_TRACE set in the environment, writes
//   oomlens-startup <mark> <CLOCK_MONOTONIC ns> <ms since the process started> <process CPU ms>
// to stderr the first time each mark is reached; otherwise does nothing. The monotonic clock is
// the one a parent process reads before starting the app, so the difference is exact; the
// milliseconds since start come from /proc (10 ms steps) for a reader without such a parent. The
// CPU time (all threads) is the figure a loaded machine does not blur.
void markStartup(StartupMark mark);

} // namespace oomlens
