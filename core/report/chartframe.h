#pragma once

#include <cstdint>

namespace oomlens::report {

class SvgWriter;

// Every chart's frame in one place: the SVG's size and where its plot sits inside it, so the
// report's charts line up with each other (same width, same axis column) and a change of layout is
// made here once.
struct PlotFrame
{
    double width = 0;
    double height = 0;
    double left = 0; // the plot area, in SVG units; the byte axis's labels end just left of it
    double right = 0;
    double top = 0;
    double bottom = 0;

    double plotWidth() const { return right - left; }
    double plotHeight() const { return bottom - top; }
};

// Charts of horizontal bars, one row each: label column left of barLeft, the bars up to barRight.
struct BarFrame
{
    double width = 0;
    double rowHeight = 0;
    double barLeft = 0;
    double barRight = 0;
};

namespace frames {

inline constexpr double fullWidth = 960; // the report's column: charts scale to it
inline constexpr double axisLeft = 72; // room for "1.5 GiB" left of the plot
inline constexpr double plotRight = 944;

inline constexpr PlotFrame timeline { fullWidth, 340, axisLeft, plotRight, 24, 296 };
inline constexpr PlotFrame jobRanks { fullWidth, 300, axisLeft, plotRight, 28, 268 };
inline constexpr PlotFrame compareOverlay { fullWidth, 300, axisLeft, plotRight, 16, 262 };
// Pinned host memory is a side note to the GPU's timeline: smaller.
inline constexpr PlotFrame pinnedHost { 720, 200, 64, 708, 10, 172 };

inline constexpr BarFrame breakdown { fullWidth, 34, 120, plotRight };
inline constexpr BarFrame allocatorMap { fullWidth, 16, 130, plotRight };
// Room right of the bars for the total and for the card's line.
inline constexpr BarFrame planPhases { fullWidth, 34, 130, 900 };

} // namespace frames

// Binary steps (256 MiB, 512 MiB, 1 GiB, ...) so ticks read like the sizes in OOM messages: at most
// five steps up to `maximum`.
uint64_t binaryByteStep(uint64_t maximum);

// A byte axis that never clips its highest value: `step` apart, from 0 past the top.
struct ByteAxis
{
    uint64_t step = 1;
    uint64_t max = 1;
};
ByteAxis byteAxisFor(uint64_t top);

// The axis's horizontal lines across the plot (the zero line as the axis) and their labels.
void drawByteGrid(SvgWriter& svg, const PlotFrame& frame, const ByteAxis& axis);

} // namespace oomlens::report
