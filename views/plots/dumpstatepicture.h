#pragma once

#include "views/plots/timelinedata.h"

#include <QFont>
#include <QPalette>

class QPainter;

namespace oomlens {

// What an exported timeline holds when the snapshot has no allocation history (segments only:
// `include_traces=False`, `memory_snapshot()`, pre-2.0 files): there is no curve, so the picture
// is the statement of what the file lacks and how to record it, over the allocator's state at the
// dump — one bar per segment, its blocks coloured by category (live) or as free (cached).
class DumpStatePicture
{
public:
    DumpStatePicture(const TimelineData& data, const QFont& font, const QPalette& palette);

    // The height the picture needs at `width` pixels.
    int height(int width) const;
    void draw(QPainter* painter, int width) const;

    // The text lines it writes above the bars: the statement, the advice, the totals.
    const QStringList& lines() const { return m_lines; }

    static constexpr int maxSegments = 400; // beyond: "and N more segments"

private:
    struct Bar
    {
        uint64_t address = 0;
        uint64_t size = 0;
        struct Piece
        {
            uint64_t offset = 0;
            uint64_t size = 0;
            QColor color;
        };
        std::vector<Piece> pieces;
        QString label;
    };
    int textHeight(int width) const;

    QFont m_font;
    QPalette m_palette;
    QStringList m_lines;
    std::vector<Bar> m_bars;
    uint64_t m_largest = 0;
    size_t m_hiddenSegments = 0;
};

} // namespace oomlens
