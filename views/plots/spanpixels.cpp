#include "views/plots/spanpixels.h"

#include <qcustomplot.h>

#include <algorithm>
#include <climits>
#include <cmath>

namespace oomlens {

SpanPixels::SpanPixels(const QCPAxis* axis, double origin, double scale, double low, double high, Keep keep, int lanes)
    : m_axis(axis)
    , m_origin(origin)
    , m_scale(scale)
    , m_low(low)
    , m_high(high)
    , m_keep(keep)
    , m_paintedTo(size_t(std::max(lanes, 1)), INT_MIN)
{ }

double SpanPixels::pixel(double key) const
{
    return (m_axis->coordToPixel(key) - m_origin) * m_scale;
}

std::optional<SpanPixels::Placed> SpanPixels::place(double lower, double upper, int lane)
{
    int& paintedTo = m_paintedTo[size_t(lane)];
    const double x0 = std::max(pixel(lower), m_low);
    const double x1 = std::min(pixel(upper), m_high);
    const int first = int(std::floor(x0));
    int end = 0;
    switch (m_keep) {
    case Keep::NewColumn:
        end = std::max(first + 1, int(std::floor(x1)));
        if (end <= paintedTo || first >= m_high)
            return std::nullopt;
        break;
    case Keep::EndPastPainted:
        if (int(std::floor(x1)) <= paintedTo)
            return std::nullopt;
        end = int(std::floor(std::max(x1, x0 + 1)));
        break;
    }
    const Placed placed { x0, x1, first, std::max(first, paintedTo), end };
    paintedTo = end;
    return placed;
}

} // namespace oomlens
