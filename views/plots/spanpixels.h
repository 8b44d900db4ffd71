#pragma once

#include <optional>
#include <vector>

class QCPAxis;

namespace oomlens {

// Time spans (phase runs, annotation bars) to pixel columns along the key axis. A trace holds
// thousands of spans thinner than a pixel; a span that would only repaint columns already painted
// in its lane is dropped, so drawing costs the plot's width, not the trace's length. Spans must come
// in lower-key order per lane.
class SpanPixels
{
public:
    // When a span is worth painting after the spans before it in its lane.
    enum class Keep {
        // Its columns, at least one, reach past the painted ones: every run gets a column of its own
        // where there is room (the phase shading, which fills whole columns).
        NewColumn,
        // It ends past the painted columns: a bar starting inside the last painted column adds
        // nothing (the annotation strip, whose bars have an edge and a label).
        EndPastPainted,
    };

    struct Placed
    {
        double x0; // pixels, clamped to the pixel space's low and high edges
        double x1;
        int firstColumn; // floor(x0)
        int freshColumn; // the first column not painted before in the lane
        int endColumn; // one past the last column the span paints
    };

    // Keys map to pixels as (axis->coordToPixel(key) - origin) * scale; x0 is clamped from below to
    // `low` and x1 from above to `high`.
    SpanPixels(const QCPAxis* axis, double origin, double scale, double low, double high, Keep keep, int lanes = 1);

    std::optional<Placed> place(double lower, double upper, int lane = 0);

private:
    double pixel(double key) const;

    const QCPAxis* m_axis;
    double m_origin;
    double m_scale;
    double m_low;
    double m_high;
    Keep m_keep;
    std::vector<int> m_paintedTo; // per lane: one past the last painted column
};

} // namespace oomlens
