#pragma once

#include "core/textinputs.h"
#include "parsers/text/oomtemplates.h"

#include <string>
#include <vector>

namespace oomlens::text {

class TextLines;

// One OOM message found in the input, with the lines it covers so tracebacks can be linked to it.
struct FoundOom
{
    OomMessage message;
    OomFamily family = OomFamily::Caching;
    size_t firstLine = 0; // 0-based index into TextLines
    size_t lastLine = 0;
    std::vector<size_t> repeatLines; // first lines of verbatim repeats folded into this one
    std::string core; // normalized text from the anchor phrase on, for de-duplication
};

// Every OOM and near-OOM message in the text, in input order. A message repeated verbatim a few
// lines later (a logger echoing the exception, pytest's short summary) is kept once, with a note.
std::vector<FoundOom> findOomMessages(const TextLines& lines);

} // namespace oomlens::text
