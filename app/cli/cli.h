#pragma once

#include <QStringList>

#include <optional>
#include <span>

namespace oomlens::cli {

// One headless command: `oomlens NAME ...`. Each parses its own options with QCommandLineParser
// (see commandline.h) and returns the process exit status: 0 analyzed, 1 an input could not be
// read, 2 usage error.
struct Command
{
    const char* name;
    const char* synopsis; // the usage line after "oomlens ", e.g. "report INPUT... -o report.html"
    const char* summary; // what it does, for `oomlens --help`
    int (*run)(const QStringList& arguments); // the words after the command name
};

// Every headless command, in the order `oomlens --help` lists them.
std::span<const Command> commands();

// Runs a headless command; `arguments` is QCoreApplication::arguments() (program name first).
int run(const QStringList& arguments);

// The GUI's command line, `oomlens [--screenshot DIR] [FILE...]`.
struct GuiCommandLine
{
    QStringList files;
    QString screenshotDirectory; // `--screenshot DIR`: render every view to DIR as PNG and exit
    std::optional<int> exitStatus; // set when the program should stop here (help printed, usage error)
};
// `arguments` is QApplication::arguments(), with Qt's own options (-platform, -style, ...)
// already taken out by QApplication.
GuiCommandLine parseGuiCommandLine(const QStringList& arguments);

} // namespace oomlens::cli
