#include "app/cli/launch.h"

#include "app/cli/paths.h"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace oomlens::cli {

namespace {

bool isSet(const char* variable)
{
    const char* value = std::getenv(variable);
    return value && *value;
}

bool isHelpOrVersion(std::string_view word)
{
    for (std::string_view option : { "-h", "--help", "--help-all", "-v", "--version" }) {
        if (word == option)
            return true;
    }
    return false;
}

bool isCommand(std::string_view word)
{
    const std::span<const Command> all = commands();
    return std::any_of(all.begin(), all.end(), [word](const Command& command) { return word == command.name; });
}

// A word a user means as a command rather than a file: no path separator, no extension.
bool looksLikeCommandWord(std::string_view word)
{
    return !word.empty() && std::all_of(word.begin(), word.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' || c == '_';
    });
}

// Whether anything is at `path`, a dangling symbolic link included (the window then says why it
// cannot be read).
bool pathExists(const char* path)
{
    return existsOrIsLink(path);
}

bool asksForScreenshots(std::span<const char* const> arguments)
{
    return std::any_of(arguments.begin(), arguments.end(), [](const char* argument) {
        const std::string_view word(argument);
        return word == "--screenshot" || word.starts_with("--screenshot=");
    });
}

// `-x`, `--name`: not '-' alone, which names standard input.
bool isOptionWord(std::string_view word)
{
    return word.size() > 1 && word.starts_with('-');
}

size_t editDistance(std::string_view a, std::string_view b)
{
    std::vector<size_t> previous(b.size() + 1);
    std::vector<size_t> current(b.size() + 1);
    for (size_t j = 0; j <= b.size(); ++j)
        previous[j] = j;
    for (size_t i = 1; i <= a.size(); ++i) {
        current[0] = i;
        for (size_t j = 1; j <= b.size(); ++j) {
            const size_t substitution = previous[j - 1] + (a[i - 1] == b[j - 1] ? 0 : 1);
            current[j] = std::min({ previous[j] + 1, current[j - 1] + 1, substitution });
        }
        std::swap(previous, current);
    }
    return previous[b.size()];
}

Launch stop(int exitStatus, const std::string& line)
{
    return { Launch::Kind::Stop, false, exitStatus, line + '\n' };
}

Launch unknownCommand(std::string_view word)
{
    const std::string closest = closestCommand(word);
    const std::string suggestion = closest.empty() ? std::string() : "; did you mean '" + closest + "'?";
    return stop(2,
        "oomlens: unknown command '" + std::string(word) + "' and no file of that name" + suggestion
            + " ('oomlens --help' lists the commands)");
}

} // namespace

DisplayEnvironment DisplayEnvironment::current(std::span<const char* const> arguments)
{
    DisplayEnvironment environment;
    environment.display = isSet("DISPLAY") || isSet("WAYLAND_DISPLAY");
    environment.platformChosen
        = isSet("QT_QPA_PLATFORM") || std::any_of(arguments.begin(), arguments.end(), [](const char* argument) {
              return std::strcmp(argument, "-platform") == 0 || std::strcmp(argument, "--platform") == 0;
          });
#if defined(__unix__) && !defined(__APPLE__) && !defined(__ANDROID__)
    environment.needsDisplay = true;
#else
    environment.needsDisplay = false;
#endif
    return environment;
}

std::string closestCommand(std::string_view typed)
{
    // Close means a slip of one or two keys in a word of this length, not any short word.
    const size_t allowed = std::max<size_t>(1, std::min<size_t>(2, typed.size() / 3));
    std::string best;
    size_t bestDistance = allowed + 1;
    for (const Command& command : commands()) {
        const size_t distance = editDistance(typed, command.name);
        if (distance < bestDistance) {
            bestDistance = distance;
            best = command.name;
        }
    }
    return best;
}

Launch decideLaunch(std::span<const char* const> arguments, const DisplayEnvironment& environment, Gui gui)
{
    if (arguments.size() >= 2) {
        const std::string_view first(arguments[1]);
        if (isCommand(first) || isHelpOrVersion(first))
            return { Launch::Kind::Command, false, 0, {} };
        if (!first.starts_with('-') && looksLikeCommandWord(first) && !pathExists(arguments[1]))
            return unknownCommand(first);
    }
    if (gui == Gui::Absent) {
        // An option the window does not take either: the usage error says which (cli::run).
        if (arguments.size() >= 2 && isOptionWord(arguments[1]) && !asksForScreenshots(arguments.subspan(1, 1)))
            return { Launch::Kind::Command, false, 0, {} };
        return stop(2,
            "oomlens: this build has no GUI; 'oomlens diagnose FILE...' prints the diagnosis here and 'oomlens report "
            "FILE... -o report.html' writes it as a page to open elsewhere ('oomlens --help' lists the commands)");
    }
    if (asksForScreenshots(arguments))
        return { Launch::Kind::Window, !environment.platformChosen, 0, {} };
    if (environment.needsDisplay && !environment.display && !environment.platformChosen)
        return stop(2,
            "oomlens: no display (DISPLAY and WAYLAND_DISPLAY are unset), so the window cannot open; "
            "'oomlens diagnose FILE...' prints the diagnosis here and 'oomlens report FILE... "
            "-o report.html' writes it as a page to open elsewhere");
    return { Launch::Kind::Window, false, 0, {} };
}

} // namespace oomlens::cli
