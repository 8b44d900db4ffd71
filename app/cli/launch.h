#pragma once

// What `oomlens ARGS...` is asked to do, decided from argv and the environment before any
// QCoreApplication or QApplication exists: a QApplication without a display aborts inside Qt
// (exit 134 and a core dump), so the window is only attempted where it can open.

#include <QString>

#include <span>
#include <string_view>

namespace oomlens::cli {

struct Launch
{
    enum class Kind {
        Command, // a headless command, --help or --version: run under QCoreApplication
        Window, // the GUI (`oomlens [FILE...]`, `--screenshot`)
        Stop, // nothing to run: `message` goes to stderr and the process ends with `exitStatus`
    };
    Kind kind = Kind::Window;
    bool offscreen = false; // Window: render without a display (`--screenshot` where none is set)
    int exitStatus = 0; // Stop
    QString message; // Stop: the lines to print, each ending in '\n'
};

// What the process environment says about a display; read once, passed in so tests can vary it.
struct DisplayEnvironment
{
    bool display = false; // DISPLAY or WAYLAND_DISPLAY names one
    bool platformChosen = false; // QT_QPA_PLATFORM set, or `-platform NAME` among the arguments
    bool needsDisplay = true; // false where a window needs no display server (Windows, macOS)

    static DisplayEnvironment current(std::span<const char* const> arguments);
};

// `arguments` is argv (program name first).
Launch decideLaunch(std::span<const char* const> arguments, const DisplayEnvironment& environment);

// The command name closest to a mistyped one ("diagnos" -> "diagnose"); empty when none is close.
QString closestCommand(std::string_view typed);

} // namespace oomlens::cli
