#pragma once

// What `oomlens ARGS...` is asked to do, decided from argv and the environment before any
// window toolkit is started: a QApplication without a display aborts inside Qt (exit 134 and a
// core dump), so the window is only attempted where it can open, and only in a build that has it.

#include "app/cli/cli.h"

#include <span>
#include <string>
#include <string_view>

namespace oomlens::cli {

struct Launch
{
    enum class Kind {
        Command, // a headless command, --help or --version: cli::run
        Window, // the GUI (`oomlens [FILE...]`, `--screenshot`)
        Stop, // nothing to run: `message` goes to stderr and the process ends with `exitStatus`
    };
    Kind kind = Kind::Window;
    bool offscreen = false; // Window: render without a display (`--screenshot` where none is set)
    int exitStatus = 0; // Stop
    std::string message; // Stop: the lines to print, each ending in '\n'
};

// What the process environment says about a display; read once, passed in so tests can vary it.
struct DisplayEnvironment
{
    bool display = false; // DISPLAY or WAYLAND_DISPLAY names one
    bool platformChosen = false; // QT_QPA_PLATFORM set, or `-platform NAME` among the arguments
    bool needsDisplay = true; // false where a window needs no display server (Windows, macOS)

    static DisplayEnvironment current(std::span<const char* const> arguments);
};

// `arguments` is argv (program name first). Where `gui` is Gui::Absent, whatever would open the
// window (`oomlens`, `oomlens FILE`, `--screenshot`) stops with one line saying this build has
// none, exit status 2.
Launch decideLaunch(
    std::span<const char* const> arguments, const DisplayEnvironment& environment, Gui gui = Gui::Built);

// The command name closest to a mistyped one ("diagnos" -> "diagnose"); empty when none is close.
std::string closestCommand(std::string_view typed);

} // namespace oomlens::cli
