#pragma once

#include "core/case.h"
#include "parsers/snapshotreader.h"

#include <string>
#include <string_view>

namespace oomlens {

// Reads one input (a file's bytes, stdin or a paste) into the case: detects its kind from the
// content, parses it, and records either the result or one clear error line. Never throws.
void addInput(Case& target, const std::string& path, std::string_view bytes, const SnapshotReadOptions& options = {});

// Reads a file from disk then calls addInput; an unreadable file becomes an input error. A
// snapshot's capture sidecar beside it (NAME.oomlens.json) is read too.
void addFile(Case& target, const std::string& path, const SnapshotReadOptions& options = {});

// Moves everything found in one text into the case's findings.
void appendFindings(TextFindings& into, TextFindings&& from);

} // namespace oomlens
