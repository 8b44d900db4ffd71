#pragma once

#include "core/serving/servingrun.h"

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

// The pieces servinglog.cpp reads an inference run with: the input's lines as printed (launcher
// prefixes kept for the engine's signs, stripped for the content), numbers and sizes after a
// marker, and the three readers of the version, the budget and the failure.
namespace oomlens::text {

struct RawLine
{
    size_t number = 0; // 1-based
    std::string_view raw; // as printed, prefixes and all
    std::string_view content; // launcher and logger prefixes stripped, trimmed
    ServingLine cite() const; // the whole line, clipped
    // The part of the line that carries one figure, [begin, end) of `content`, with the line's
    // lead sentence before it and "…" where the line goes on: "Load weight end. … mem usage=32.89 GB".
    ServingLine quote(size_t begin, size_t end) const;
};

std::vector<RawLine> rawLines(std::string_view input);

// A number as engines print them: "-1.05", "150,745", "0.9"; starts at `pos` after spaces.
std::optional<double> numberAt(std::string_view text, size_t pos, size_t* end = nullptr);
std::optional<double> numberAfter(std::string_view text, std::string_view marker);
// A number followed by a unit ("5.20GiB", "19.9073 GB", "-1.05GiB"): bytes, negative when printed so.
std::optional<int64_t> bytesAt(std::string_view text, size_t pos, size_t* end = nullptr);
std::optional<int64_t> bytesAfter(std::string_view text, std::string_view marker);

// servingfigures.cpp: the version the text dates the engine with, and the budget and settings.
void readVersion(const std::vector<RawLine>& lines, ServingRun& run);
void readFigures(const std::vector<RawLine>& lines, ServingRun& run);
// servingfailure.cpp: the engine's failure, from its own message, its frames, or the start-up
// stage its last progress line opened (`oomInText`: an OOM message was found in the text).
void readFailure(const std::vector<RawLine>& lines, bool oomInText, ServingRun& run);

} // namespace oomlens::text
