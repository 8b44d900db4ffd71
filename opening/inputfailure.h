#pragma once

// An input that could not be read, and the one wording of it every front end shows: the command
// line prints it, the MCP server returns it as a tool's error, the app puts it in its banner.

#include <string>

namespace oomlens {

struct InputFailure
{
    std::string path; // as given (a text's name: "(pasted)", "-")
    std::string reason;
    // A broken capture sidecar (the snapshot beside it was still read), or a file found in a folder
    // that is no input oomlens reads (LoadRequest::inFolder): listed, without failing the run.
    bool warningOnly = false;
    // A rank read from a summary: the summary that named the snapshot `path` the reason is about.
    std::string summarizedIn;

    // The path, and the summary it was named in where there is one: "FILE (summarized in SUMMARY)".
    std::string where() const;
};

// Who reads the line. A terminal, and an agent (who reads what a terminal user would), get the
// path as given; the app's banner the file's name alone (the tab's tooltip holds its folder).
enum class FailureReader { CommandLine, Banner };

// "oomlens: PATH: reason" on the command line and to an agent, "NAME: reason" in the app's
// banner ("pasted text: reason" for text the user pasted).
std::string failureLine(const InputFailure& failure, FailureReader reader);

// The reason an input that must be a snapshot (`compare`, `plan --snapshot`, an agent's
// `live_at`) gets when it is something else.
InputFailure notASnapshot(const std::string& path);

} // namespace oomlens
