#pragma once

// The inputs a person named (command-line arguments, files dropped or chosen in the app, an
// agent's "inputs"), turned into the requests opening/opening.h reads, the same way for all.

#include "opening/loadrequest.h"

#include <string>
#include <vector>

namespace oomlens {

// One input named: a file, or '-', standard input, read here as text named "-" (an input of its
// own that fails, with the reason, when it is larger than a stream may be).
LoadRequest requestFor(const std::string& path);

// The inputs named, each folder standing for what it holds (opening/jobfiles.h's expandFolders):
// a file found in a folder rather than named is marked LoadRequest::inFolder, so that one that is
// no input oomlens reads (a README) is listed without failing the run.
std::vector<LoadRequest> requestsFor(const std::vector<std::string>& given);

} // namespace oomlens
