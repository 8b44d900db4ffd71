#include "app/cli/launch.h"

#include "app/cli/cli.h"

#include <QFileInfo>
#include <QtGlobal>

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
    const QFileInfo info(QString::fromLocal8Bit(path));
    return info.exists() || info.isSymLink();
}

bool asksForScreenshots(std::span<const char* const> arguments)
{
    return std::any_of(arguments.begin(), arguments.end(), [](const char* argument) {
        const std::string_view word(argument);
        return word == "--screenshot" || word.starts_with("--screenshot=");
    });
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

Launch stop(int exitStatus, const QString& line)
{
    return { Launch::Kind::Stop, false, exitStatus, line + QLatin1Char('\n') };
}

Launch unknownCommand(std::string_view word)
{
    const QString typed = QString::fromUtf8(word.data(), qsizetype(word.size()));
    const QString closest = closestCommand(word);
    const QString suggestion = closest.isEmpty() ? QString() : QStringLiteral("; did you mean '%1'?").arg(closest);
    return stop(2,
        QStringLiteral("oomlens: unknown command '%1' and no file of that name%2 ('oomlens --help' lists the commands)")
            .arg(typed, suggestion));
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
#if defined(Q_OS_UNIX) && !defined(Q_OS_MACOS) && !defined(Q_OS_ANDROID)
    environment.needsDisplay = true;
#else
    environment.needsDisplay = false;
#endif
    return environment;
}

QString closestCommand(std::string_view typed)
{
    // Close means a slip of one or two keys in a word of this length, not any short word.
    const size_t allowed = std::max<size_t>(1, std::min<size_t>(2, typed.size() / 3));
    QString best;
    size_t bestDistance = allowed + 1;
    for (const Command& command : commands()) {
        const size_t distance = editDistance(typed, command.name);
        if (distance < bestDistance) {
            bestDistance = distance;
            best = QString::fromUtf8(command.name);
        }
    }
    return best;
}

Launch decideLaunch(std::span<const char* const> arguments, const DisplayEnvironment& environment)
{
    if (arguments.size() >= 2) {
        const std::string_view first(arguments[1]);
        if (isCommand(first) || isHelpOrVersion(first))
            return { Launch::Kind::Command, false, 0, {} };
        if (!first.starts_with('-') && looksLikeCommandWord(first) && !pathExists(arguments[1]))
            return unknownCommand(first);
    }
    if (asksForScreenshots(arguments))
        return { Launch::Kind::Window, !environment.platformChosen, 0, {} };
    if (environment.needsDisplay && !environment.display && !environment.platformChosen)
        return stop(2,
            QStringLiteral("oomlens: no display (DISPLAY and WAYLAND_DISPLAY are unset), so the window cannot open; "
                           "'oomlens diagnose FILE...' prints the diagnosis here and 'oomlens report FILE... "
                           "-o report.html' writes it as a page to open elsewhere"));
    return { Launch::Kind::Window, false, 0, {} };
}

} // namespace oomlens::cli
