#include "app/cli/cli.h"
#include "app/cli/launch.h"
#include "app/cli/truncatedinput.h"
#ifdef OOMLENS_WITH_GUI
#include "app/window.h"
#endif

#include <cstdio>
#include <span>
#include <string>
#include <vector>

int main(int argc, char** argv)
{
    using namespace oomlens;
    cli::reportTruncatedInputs();
#ifdef OOMLENS_WITH_GUI
    constexpr cli::Gui gui = cli::Gui::Built;
#else
    constexpr cli::Gui gui = cli::Gui::Absent;
#endif
    // Decided before any window toolkit starts: the headless commands never touch a display, and
    // a window is only attempted where one can open (QApplication aborts otherwise) and was built.
    const std::span<const char* const> arguments(argv, size_t(argc));
    const cli::Launch launch = cli::decideLaunch(arguments, cli::DisplayEnvironment::current(arguments), gui);
    if (launch.kind == cli::Launch::Kind::Stop) {
        std::fputs(launch.message.c_str(), stderr);
        return launch.exitStatus;
    }
    if (launch.kind == cli::Launch::Kind::Command)
        return cli::run(std::vector<std::string>(argv, argv + argc), gui);
#ifdef OOMLENS_WITH_GUI
    return runWindow(argc, argv, launch.offscreen);
#else
    return 2; // not reached: without a window built, decideLaunch never asks for one
#endif
}
