#include "app/cli/truncatedinput.h"

#include <csignal>

#if defined(__unix__) || defined(__APPLE__)
#include <unistd.h>
#endif

namespace oomlens::cli {

namespace {

#if defined(__unix__) || defined(__APPLE__)
void onBusError(int)
{
    // Only async-signal-safe calls here: write(2) and _exit(2).
    static const char line[] = "oomlens: an input file became shorter while it was being read (still being "
                               "written or replaced?); read it again once it is complete\n";
    [[maybe_unused]] const ssize_t written = write(STDERR_FILENO, line, sizeof line - 1);
    _exit(1);
}
#endif

} // namespace

void reportTruncatedInputs()
{
#if defined(__unix__) || defined(__APPLE__)
    struct sigaction action = {};
    action.sa_handler = onBusError;
    sigemptyset(&action.sa_mask);
    sigaction(SIGBUS, &action, nullptr);
#endif
}

} // namespace oomlens::cli
