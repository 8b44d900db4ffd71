#pragma once

#include "app/cli/optionparser.h"
#include "core/analysis/snapshotanalysis.h"

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

namespace oomlens::cli {

// The parser's error after a failed parse(), naming an unknown option as it was typed
// ("unknown option --bogus", where the parser says "Unknown option 'bogus'.").
std::string parseError(const OptionParser& parser);

// Parses the words after a command (app/cli/optionparser.h's grammar: `--opt=value`, `--` ends
// the options, '-' is a positional argument) with oomlens's exit statuses: --help prints the
// command's help to stdout and stops with 0; an unknown option, a missing value or a problem
// reported later by the command prints one line, the usage line and stops with 2.
class CommandLine
{
public:
    // `synopsis` is the usage line after "oomlens ", e.g. "report INPUT... -o report.html".
    CommandLine(const char* synopsis, std::string description);

    OptionParser& parser() { return m_parser; }
    const OptionParser& parser() const { return m_parser; }

    // Returns the exit status when the command should stop here, std::nullopt to go on.
    std::optional<int> parse(const std::vector<std::string>& arguments);

    // Prints "oomlens COMMAND: message" and the usage line to stderr; returns 2.
    int usageError(const std::string& message) const;

    // `--device N` into `device` (left alone when the option is not given). Returns false after
    // printing a usage error when the value is not a device ordinal.
    bool readDevice(const Option& option, std::optional<int32_t>& device) const;

    // `--rules FILE` into options.rules (left alone when the option is not given). Rules the user
    // asked for are never skipped quietly: returns the exit status after printing the one line
    // saying why they cannot be used (1: an unreadable file, bad syntax, an unknown category, an
    // invalid regex; 2: no file named), std::nullopt to go on.
    std::optional<int> readRules(const Option& option, AnalysisOptions& options) const;

private:
    std::string helpText() const;

    OptionParser m_parser;
    std::string m_synopsis;
    std::string m_command; // the first word of the synopsis
};

} // namespace oomlens::cli
