#include "views/plots/dumpstatepicture.h"

#include "core/analysis/poolowners.h"
#include "core/analysis/privatepools.h"
#include "core/presentation/historywords.h"
#include "views/categorycolors.h"
#include "views/viewutil.h"

#include <QFontMetrics>
#include <QPainter>

#include <algorithm>
#include <unordered_map>

namespace oomlens {

namespace {

constexpr int margin = 12;
constexpr int rowHeight = 16;
constexpr int labelWidth = 250;

} // namespace

DumpStatePicture::DumpStatePicture(const TimelineData& data, const QFont& font, const QPalette& palette)
    : m_font(font)
    , m_palette(palette)
{
    const DeviceAnalysis* device = data.device();
    if (!device)
        return;
    const Snapshot& snapshot = data.snapshot();
    const TraceHistory& history = device->history;
    // The same words the timeline shows in place of its chart.
    m_lines << QStringLiteral("No timeline: this snapshot holds no allocation history, only the allocator's state "
                              "at the dump (below).");
    for (const std::string& line : historyStatement(snapshot, history))
        m_lines << toQString(line);
    m_lines << toQString(historyAdvice(history));

    // Live blocks take their allocation's category: the stacks the dump keeps allow that much.
    std::unordered_map<uint64_t, Category> categoryAt;
    for (const Allocation& allocation : device->allocations)
        categoryAt.emplace(allocation.address, allocation.category);
    const PrivatePools pools = privatePools(snapshot, *device);
    uint64_t reserved = 0, allocated = 0;
    size_t segments = 0;
    for (const Segment& segment : snapshot.segments) {
        if (segment.device != device->device)
            continue;
        ++segments;
        reserved += segment.totalSize;
        if (m_bars.size() >= size_t(maxSegments)) {
            ++m_hiddenSegments;
            continue;
        }
        Bar bar;
        bar.address = segment.address;
        bar.size = segment.totalSize;
        for (uint32_t b = 0; b < segment.blockCount; ++b) {
            const Block& block = snapshot.blocks[segment.firstBlock + b];
            QColor color = colors::freeBlock();
            if (block.state == BlockState::ActiveAllocated || block.state == BlockState::ActivePendingFree) {
                const auto it = categoryAt.find(block.address);
                color = colors::category(it == categoryAt.end() ? Category::Unknown : it->second);
                allocated += block.state == BlockState::ActiveAllocated ? block.size : 0;
            }
            const uint64_t offset = block.address >= segment.address ? block.address - segment.address : 0;
            bar.pieces.push_back({ offset, block.size, color });
        }
        bar.label = QStringLiteral("%1 · 0x%2").arg(bytesText(segment.totalSize), QString::number(segment.address, 16));
        if (!segment.pool.isDefault())
            bar.label += QStringLiteral(" · ") + toQString(poolLabel(pools, segment.pool));
        m_largest = std::max(m_largest, segment.totalSize);
        m_bars.push_back(std::move(bar));
    }
    m_lines << QStringLiteral("Allocator state at the dump, device %1: %2 segments, %3 reserved, %4 allocated.")
                   .arg(device->device)
                   .arg(segments)
                   .arg(bytesText(reserved), bytesText(allocated));
}

int DumpStatePicture::textHeight(int width) const
{
    const QFontMetrics metrics(m_font);
    int height = 0;
    for (const QString& line : m_lines)
        height += metrics.boundingRect(QRect(0, 0, width - 2 * margin, 100000), Qt::TextWordWrap, line).height() + 4;
    return height;
}

int DumpStatePicture::height(int width) const
{
    const int rows = int(m_bars.size()) + (m_hiddenSegments > 0 ? 1 : 0);
    return margin + textHeight(width) + 8 + rows * rowHeight + margin;
}

void DumpStatePicture::draw(QPainter* painter, int width) const
{
    painter->save();
    painter->setFont(m_font);
    painter->fillRect(QRect(0, 0, width, height(width)), m_palette.color(QPalette::Base));
    const QFontMetrics metrics(m_font);
    int y = margin;
    painter->setPen(m_palette.color(QPalette::WindowText));
    for (const QString& line : m_lines) {
        const QRect box = metrics.boundingRect(QRect(margin, y, width - 2 * margin, 100000), Qt::TextWordWrap, line);
        painter->drawText(QRect(margin, y, width - 2 * margin, box.height()), Qt::TextWordWrap, line);
        y += box.height() + 4;
    }
    y += 8;
    const int barLeft = margin + labelWidth;
    const double scale = m_largest > 0 ? double(std::max(10, width - barLeft - margin)) / double(m_largest) : 0.0;
    for (const Bar& bar : m_bars) {
        painter->setPen(m_palette.color(QPalette::WindowText));
        painter->drawText(QRect(margin, y, labelWidth - 8, rowHeight), Qt::AlignLeft | Qt::AlignVCenter,
            metrics.elidedText(bar.label, Qt::ElideRight, labelWidth - 8));
        for (const Bar::Piece& piece : bar.pieces) {
            const QRectF rect(barLeft + double(piece.offset) * scale, y + 2, std::max(1.0, double(piece.size) * scale),
                rowHeight - 4);
            painter->fillRect(rect, piece.color);
        }
        painter->setPen(QPen(m_palette.color(QPalette::Mid), 1.0));
        painter->setBrush(Qt::NoBrush);
        painter->drawRect(QRectF(barLeft, y + 2, double(bar.size) * scale, rowHeight - 4));
        y += rowHeight;
    }
    if (m_hiddenSegments > 0) {
        painter->setPen(m_palette.color(QPalette::WindowText));
        painter->drawText(QRect(margin, y, width - 2 * margin, rowHeight), Qt::AlignLeft | Qt::AlignVCenter,
            QStringLiteral("… and %1 more segments").arg(m_hiddenSegments));
    }
    painter->restore();
}

} // namespace oomlens
