#include "opening/inputfailure.h"

#include "parsers/filepaths.h"

namespace oomlens {

std::string InputFailure::where() const
{
    return summarizedIn.empty() ? path : path + " (summarized in " + summarizedIn + ")";
}

std::string failureLine(const InputFailure& failure, FailureReader reader)
{
    if (reader == FailureReader::CommandLine)
        return "oomlens: " + failure.where() + ": " + failure.reason;
    const std::string shown = failure.path == "(pasted)" ? std::string("pasted text") : fileNameOf(failure.path);
    return shown + ": " + failure.reason;
}

InputFailure notASnapshot(const std::string& path)
{
    return { path, "not a memory snapshot", false, {} };
}

} // namespace oomlens
