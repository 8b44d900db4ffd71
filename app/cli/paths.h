#pragma once

// What the command line asks of the file system beyond parsers/filepaths.h (which spells, joins
// and lists the paths every front end shares).

#include <string>

namespace oomlens::cli {

// Whether anything is at `path`, a dangling symbolic link included.
bool existsOrIsLink(const std::string& path);

// `path` and every missing folder above it, made; true when it is a folder now.
bool makeFolders(const std::string& path);

} // namespace oomlens::cli
