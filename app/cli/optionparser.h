#pragma once

// The command line's own parser: the words after a command read the way every Qt tool reads them
// (QCommandLineParser's grammar, which oomlens's users and tests already know), with the standard
// library only. `--opt=value` and `--opt value`; `-o value`, `-ovalue` and `-o=value`; `-abc` is
// `-a -b -c` until one of them takes a value (the rest is that value); `--` ends the options;
// '-' alone is a positional argument (standard input); options may follow positional arguments.
// The help text is laid out as QCommandLineParser lays it out, column for column.

#include <initializer_list>
#include <map>
#include <string>
#include <vector>

namespace oomlens::cli {

// One option a command takes: its names ("o" and "output"; one letter is `-o`, more is
// `--output`), its line in the help, and the name of its value there ("FILE"). Without a value
// name it is a switch.
struct Option
{
    // One name; a `const char*` so that `{ "o", "output" }` can only mean the names below.
    Option(const char* name, std::string description, std::string valueName = {});
    Option(std::vector<std::string> names, std::string description, std::string valueName = {});

    bool takesValue() const { return !valueName.empty(); }

    std::vector<std::string> names;
    std::string description;
    std::string valueName;
    bool hiddenFromHelp = false;
};

class OptionParser
{
public:
    void setDescription(std::string description) { m_description = std::move(description); }
    void addHelpOption(); // -h, --help and --help-all
    void addVersionOption(); // -v, --version
    // False when a name is taken already (the option is then not added).
    bool addOption(const Option& option);
    void addOptions(std::initializer_list<Option> options);
    // For the help: `name` and `description` under "Arguments:", `syntax` (default `name`) on the
    // usage line.
    void addPositionalArgument(std::string name, std::string description, std::string syntax = {});

    // `words` are the arguments after the program's (or the command's) name. False when an option
    // is unknown, lacks its value or has one it does not take: errorText() says which.
    bool parse(const std::vector<std::string>& words);

    // Whether the option was given, by any of its names.
    bool isSet(const Option& option) const { return isSet(option.names.front()); }
    bool isSet(const std::string& name) const;
    // The option's last value; empty when it was not given or takes none.
    std::string value(const Option& option) const;
    // Every value given, in order.
    std::vector<std::string> values(const Option& option) const;
    const std::vector<std::string>& positionalArguments() const { return m_positional; }
    // The unknown options' names as typed, without dashes, in order.
    const std::vector<std::string>& unknownOptionNames() const { return m_unknown; }
    // What went wrong in parse(): "Unknown option 'x'.", "Missing value after '--device'.", ...
    std::string errorText() const;

    // "Usage: PROGRAM [options] ARGS...", the description, then "Options:" and "Arguments:" with
    // each description wrapped to 79 columns.
    std::string helpText(const std::string& program) const;

private:
    struct Positional
    {
        std::string name;
        std::string description;
        std::string syntax;
    };

    const Option* find(const std::string& name, size_t* index = nullptr) const;
    bool registerFound(const std::string& name);
    bool readValue(const std::string& name, const std::string& word, size_t& at, const std::vector<std::string>& words);
    bool readCompactedShortOptions(const std::string& word, size_t& at, const std::vector<std::string>& words);

    std::vector<Option> m_options;
    std::map<std::string, size_t> m_names; // every name of every option -> its index in m_options
    std::vector<Positional> m_positionalHelp;
    std::string m_description;

    // The last parse().
    std::map<size_t, std::vector<std::string>> m_values; // by option index
    std::vector<std::string> m_found; // the names of the options given, as typed
    std::vector<std::string> m_positional;
    std::vector<std::string> m_unknown;
    std::string m_error; // a missing or unexpected value
};

} // namespace oomlens::cli
