#pragma once

#include "core/textinputs.h"
#include "parsers/text/oomtemplates.h"
#include "parsers/text/sizeparse.h"

#include <limits>
#include <optional>
#include <string_view>

// Helpers shared by the OOM template parsers (oomtemplates.cpp, oomfields.cpp), and the
// smaller families' field readers (XLA, TensorFlow, near-OOM errors)..

namespace oomlens::text {

constexpr int openEnd = std::numeric_limits<int>::max();

// Version ranges as major*100+minor, so "1.10" < "1.13" < "2.1".
struct VersionRange
{
    int low = 0;
    int high = openEnd;
};

// Sets torchVersionHint from the wording's era, narrowed by the printed exception class
// (formats.md §2.1) when `byClass` is set.
void setVersionHint(OomMessage& message, VersionRange range, bool byClass = true);

std::optional<int> intAfter(std::string_view text, std::string_view marker, size_t from = 0);

// The size that ends right before `markerPos`: "8.27 GiB allowed;" -> 8.27 GiB.
std::optional<SizeToken> sizeBefore(std::string_view text, size_t markerPos);

// Stores a parsed size, or a note when the printed value is the 2^64 "not available" garbage.
void setSize(
    std::optional<uint64_t>& field, const std::optional<SizeToken>& token, OomMessage& message, std::string_view what);

void parseXla(std::string_view body, OomMessage& message);
void parseBfc(std::string_view body, OomMessage& message);
void parseTf(std::string_view body, OomMessage& message);
void parseNearOom(OomFamily family, std::string_view body, OomMessage& message);

} // namespace oomlens::text
