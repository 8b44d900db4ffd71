#include "core/report/chartframe.h"

#include "core/report/charts.h"
#include "core/report/svgwriter.h"

namespace oomlens::report {

uint64_t binaryByteStep(uint64_t maximum)
{
    uint64_t step = 1;
    while (maximum / step > 5)
        step *= 2;
    return step;
}

ByteAxis byteAxisFor(uint64_t top)
{
    ByteAxis axis;
    axis.step = binaryByteStep(top);
    axis.max = (top / axis.step + 1) * axis.step;
    return axis;
}

void drawByteGrid(SvgWriter& svg, const PlotFrame& frame, const ByteAxis& axis)
{
    for (uint64_t tick = 0; tick <= axis.max; tick += axis.step) {
        const double y = frame.bottom - frame.plotHeight() * static_cast<double>(tick) / static_cast<double>(axis.max);
        svg.line(frame.left, y, frame.right, y, tick == 0 ? "axis" : "grid");
        svg.text(frame.left - 6, y + 4, formatAxisBytes(tick), "tick", SvgWriter::Anchor::End);
    }
}

} // namespace oomlens::report
