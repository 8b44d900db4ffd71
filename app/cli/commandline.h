#pragma once

#include "core/analysis/snapshotanalysis.h"

#include <QCommandLineParser>

#include <cstdint>
#include <optional>

namespace oomlens::cli {

// Parses the words after a command the way every Qt tool does (`--opt=value`, `--` ends the
// options, '-' is a positional argument) with oomlens's exit statuses: --help prints the
// command's help to stdout and stops with 0; an unknown option, a missing value or `problem`
// reported later by the command prints one line, the usage line and stops with 2.
// QCommandLineParser's error after a failed parse(), but naming an unknown option as it was
// typed ("unknown option --bogus"; Qt says "Unknown option 'bogus'.").
QString parseError(const QCommandLineParser& parser);

class CommandLine
{
public:
    // `synopsis` is the usage line after "oomlens ", e.g. "report INPUT... -o report.html".
    CommandLine(const char* synopsis, const QString& description);

    QCommandLineParser& parser() { return m_parser; }

    // Returns the exit status when the command should stop here, std::nullopt to go on.
    std::optional<int> parse(const QStringList& arguments);

    // Prints "oomlens COMMAND: message" and the usage line to stderr; returns 2.
    int usageError(const QString& message) const;

    // `--device N` into `device` (left alone when the option is not given). Returns false after
    // printing a usage error when the value is not a device ordinal.
    bool readDevice(const QCommandLineOption& option, std::optional<int32_t>& device) const;

    // `--rules FILE` into options.rules (left alone when the option is not given). Rules the user
    // asked for are never skipped quietly: returns the exit status after printing the one line
    // saying why they cannot be used (1: an unreadable file, bad syntax, an unknown category, an
    // invalid regex; 2: no file named), std::nullopt to go on.
    std::optional<int> readRules(const QCommandLineOption& option, AnalysisOptions& options) const;

private:
    QString helpText() const;

    QCommandLineParser m_parser;
    QString m_synopsis;
    QString m_command; // the first word of the synopsis
};

} // namespace oomlens::cli
