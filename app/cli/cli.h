#pragma once

#include <QStringList>

namespace oomlens::cli {

// True when argv asks for a headless command (diagnose, report, --help, --version).
bool isCommandLineInvocation(int argc, char** argv);
// Runs a headless command; returns the process exit status (0 analyzed, 1 bad input, 2 usage).
int run(const QStringList& arguments);

} // namespace oomlens::cli
