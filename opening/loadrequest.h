#pragma once

#include <string>

namespace oomlens {

// One input to open: a file, or text the user pasted or dropped (or the CLI read from standard
// input).
struct LoadRequest
{
    std::string path; // file path; empty for text
    std::string text; // the text when path is empty
    // The text's name among the case's inputs and in its errors: "(pasted)", "-" for stdin.
    std::string textName;
    // Set when the text could not be taken in (standard input beyond its bound): the input is
    // then listed under textName with this reason.
    std::string error;
    // A file found in a folder the user gave rather than named itself: when it is no kind of input
    // oomlens reads (a picture, a README), it is listed as not read without failing the run.
    bool inFolder = false;

    static LoadRequest file(std::string path, bool inFolder = false)
    {
        return { std::move(path), {}, {}, {}, inFolder };
    }
    static LoadRequest pasted(std::string text, std::string name = "(pasted)")
    {
        return { {}, std::move(text), std::move(name), {}, false };
    }
    static LoadRequest unreadable(std::string name, std::string reason)
    {
        return { {}, {}, std::move(name), std::move(reason), false };
    }
    bool isFile() const { return !path.empty(); }
};

} // namespace oomlens
