#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

namespace oomlens::cli {

// One headless command: `oomlens NAME ...`. Each parses its own options (app/cli/commandline.h)
// and returns the process exit status: 0 analyzed, 1 an input could not be read, 2 usage error.
struct Command
{
    const char* name;
    const char* synopsis; // the usage line after "oomlens ", e.g. "report INPUT... -o report.html"
    const char* summary; // what it does, for `oomlens --help`
    int (*run)(const std::vector<std::string>& arguments); // the words after the command name
};

// Every headless command, in the order `oomlens --help` lists them.
std::span<const Command> commands();

// Whether this oomlens was built with its window (the GUI): `oomlens --help` lists it only then.
enum class Gui {
    Built,
    Absent, // a command-line-only build: every command but the window
};

// What `oomlens --help` prints: every command's synopsis, the window's first where it is built.
std::string usageText(Gui gui);

// Runs a headless command; `arguments` is argv (program name first).
int run(const std::vector<std::string>& arguments, Gui gui = Gui::Built);

// The GUI's command line, `oomlens [--screenshot DIR] [FILE...]`.
struct GuiCommandLine
{
    std::vector<std::string> files;
    std::string screenshotDirectory; // `--screenshot DIR`: render every view to DIR as PNG and exit
    std::optional<int> exitStatus; // set when the program should stop here (help printed, usage error)
};
// `arguments` is the window's argv (program name first), with Qt's own options (-platform,
// -style, ...) already taken out by QApplication.
GuiCommandLine parseGuiCommandLine(const std::vector<std::string>& arguments);

} // namespace oomlens::cli
