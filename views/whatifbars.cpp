#include "views/whatifbars.h"

#include "core/presentation/planbands.h"
#include "core/units.h"
#include "views/categorycolors.h"
#include "views/viewutil.h"

#include <QHelpEvent>
#include <QPaintEvent>
#include <QPainter>
#include <QToolTip>

#include <cstdio>

#include <algorithm>

namespace oomlens {

namespace {

constexpr int maxBars = 8;

// Overhead has no tensor behind it and is drawn in the palette's neutral colour.
QColor bandColor(planner::Band band, const QPalette& palette)
{
    const std::optional<Category> category = bandCategory(band);
    return category ? colors::category(*category) : palette.color(QPalette::Mid);
}

QString bandText(planner::Band band)
{
    return toQString(bandLabel(band));
}

} // namespace

WhatIfBars::WhatIfBars(QWidget* parent)
    : QWidget(parent)
{
    setMinimumSize(260, 220);
}

void WhatIfBars::setPlan(const planner::BandBytes& bands, uint64_t capacityBytes, int gpus)
{
    m_bands = bands;
    m_capacity = capacityBytes;
    m_gpus = std::max(gpus, 1);
    update();
}

void WhatIfBars::setStages(std::vector<planner::BandBytes> stages)
{
    m_stages = std::move(stages);
    update();
}

int WhatIfBars::barCount() const
{
    return m_stages.empty() ? std::min(m_gpus, maxBars) : static_cast<int>(m_stages.size());
}

void WhatIfBars::setCalibration(const std::optional<planner::PlanCalibration>& calibration)
{
    m_calibration = calibration;
}

QRect WhatIfBars::plotArea() const
{
    const QFontMetrics metrics(font());
    return rect().adjusted(metrics.horizontalAdvance(QStringLiteral("000.00 GiB")) + 12, metrics.height(),
        -8 - legendWidth() - 24, -metrics.height() - 8);
}

int WhatIfBars::legendWidth() const
{
    const QFontMetrics metrics(font());
    int widest = 0;
    for (int b = 0; b < planner::bandCount; ++b)
        widest = std::max(widest, metrics.horizontalAdvance(bandText(static_cast<planner::Band>(b))));
    return widest;
}

uint64_t WhatIfBars::axisTop() const
{
    return std::max<uint64_t>({ planner::bandTotal(m_bands), m_capacity, 1 }) * 11 / 10;
}

QString WhatIfBars::bandToolTip(planner::Band band) const
{
    QString tip = QStringLiteral("%1: %2 per GPU")
                      .arg(bandText(band), QString::fromStdString(formatBytes(m_bands[static_cast<size_t>(band)])));
    if (!m_calibration)
        return tip;
    const planner::BandCalibration& measured = m_calibration->band(band);
    tip += QStringLiteral("\nMeasured run: the formula said %1, the snapshot held %2")
               .arg(QString::fromStdString(formatBytes(measured.formula)),
                   QString::fromStdString(formatBytes(measured.measured)));
    if (measured.formula > 0 && measured.measured > 0) {
        char ratio[32];
        std::snprintf(ratio, sizeof ratio, "%.2fx", measured.ratio);
        tip += QStringLiteral(" (%1); this what-if is projected with that ratio").arg(QString::fromLatin1(ratio));
    } else {
        tip += QStringLiteral("; no ratio, so this what-if takes the formula's figure");
    }
    return tip;
}

std::optional<planner::Band> WhatIfBars::bandAt(QPoint point) const
{
    const QRect area = plotArea();
    const QFontMetrics metrics(font());
    if (point.x() > area.right() + 12) {
        // The legend, top band first.
        const int row = (point.y() - area.top()) / (metrics.height() + 2);
        if (point.y() < area.top() || row >= planner::bandCount)
            return std::nullopt;
        return static_cast<planner::Band>(planner::bandCount - 1 - row);
    }
    if (!area.contains(point))
        return std::nullopt;
    const uint64_t top = axisTop();
    const double bytes = static_cast<double>(area.bottom() - point.y()) / area.height() * static_cast<double>(top);
    // With stages, the bar under the pointer; otherwise every bar is the same.
    const int slot = std::max(area.width() / barCount(), 1);
    const int bar = std::clamp((point.x() - area.left()) / slot, 0, barCount() - 1);
    const planner::BandBytes& bands = m_stages.empty() ? m_bands : m_stages[static_cast<size_t>(bar)];
    uint64_t below = 0;
    for (int b = 0; b < planner::bandCount; ++b) {
        below += bands[static_cast<size_t>(b)];
        if (bytes < static_cast<double>(below))
            return static_cast<planner::Band>(b);
    }
    return std::nullopt;
}

bool WhatIfBars::event(QEvent* event)
{
    if (event->type() == QEvent::ToolTip) {
        const auto* help = static_cast<QHelpEvent*>(event);
        if (const auto band = bandAt(help->pos()))
            QToolTip::showText(help->globalPos(), bandToolTip(*band), this);
        else
            QToolTip::hideText();
        return true;
    }
    return QWidget::event(event);
}

void WhatIfBars::paintEvent(QPaintEvent*)
{
    QPainter painter(this);
    painter.setRenderHint(QPainter::Antialiasing, false);
    const QFontMetrics metrics(font());
    const uint64_t total = planner::bandTotal(m_bands);
    const uint64_t top = axisTop();
    const QRect area = plotArea();
    if (area.width() < 20 || area.height() < 20)
        return;
    const auto yOf = [&](uint64_t bytes) {
        return area.bottom() - static_cast<int>(static_cast<double>(bytes) / static_cast<double>(top) * area.height());
    };

    // Axis labels: zero and the top.
    painter.setPen(palette().color(QPalette::WindowText));
    painter.drawLine(area.bottomLeft(), area.bottomRight());
    painter.drawText(QRect(0, area.bottom() - metrics.height() / 2, area.left() - 6, metrics.height()),
        Qt::AlignRight | Qt::AlignVCenter, QStringLiteral("0"));

    const int bars = barCount();
    const int slot = area.width() / bars;
    const int barWidth = std::max(4, slot * 6 / 10);
    for (int g = 0; g < bars; ++g) {
        const int x = area.left() + g * slot + (slot - barWidth) / 2;
        const planner::BandBytes& bands = m_stages.empty() ? m_bands : m_stages[static_cast<size_t>(g)];
        uint64_t below = 0;
        for (int b = 0; b < planner::bandCount; ++b) {
            const uint64_t bytes = bands[static_cast<size_t>(b)];
            if (bytes == 0)
                continue;
            const int y0 = yOf(below);
            const int y1 = yOf(below + bytes);
            painter.fillRect(
                QRect(x, y1, barWidth, std::max(1, y0 - y1)), bandColor(static_cast<planner::Band>(b), palette()));
            below += bytes;
        }
        if (!m_stages.empty()) {
            painter.drawText(QRect(x - slot / 4, area.bottom() + 4, barWidth + slot / 2, metrics.height()),
                Qt::AlignHCenter, bars > 8 ? QString::number(g) : QStringLiteral("stage %1").arg(g));
            continue;
        }
        const QString label = m_gpus > maxBars && g == 0 ? QStringLiteral("each of %1 GPUs").arg(m_gpus)
                                                         : QStringLiteral("GPU %1").arg(g);
        if (m_gpus <= maxBars || g == 0)
            painter.drawText(
                QRect(x - slot / 4, area.bottom() + 4, barWidth + slot / 2, metrics.height()), Qt::AlignHCenter, label);
    }

    // The total beside the bars, and the card across them.
    painter.drawText(QRect(0, yOf(total) - metrics.height() / 2, area.left() - 6, metrics.height()),
        Qt::AlignRight | Qt::AlignVCenter, QString::fromStdString(formatBytes(total)));
    if (m_capacity > 0) {
        const int y = yOf(m_capacity);
        QPen pen(total > m_capacity ? colors::oomMarker() : colors::reservedLine(), 2, Qt::DashLine);
        painter.setPen(pen);
        painter.drawLine(area.left(), y, area.right(), y);
        painter.drawText(QRect(area.left() + 4, y - metrics.height() - 2, area.width(), metrics.height()),
            Qt::AlignLeft, QStringLiteral("card: %1").arg(QString::fromStdString(formatBytes(m_capacity))));
    }

    // Legend, top band first like the stack.
    int legendY = area.top();
    const int legendX = area.right() + 16;
    painter.setPen(palette().color(QPalette::WindowText));
    for (int b = planner::bandCount - 1; b >= 0; --b) {
        const auto band = static_cast<planner::Band>(b);
        painter.fillRect(QRect(legendX, legendY + 2, 10, metrics.height() - 4), bandColor(band, palette()));
        painter.drawText(QPoint(legendX + 14, legendY + metrics.ascent()), bandText(band));
        legendY += metrics.height() + 2;
    }
}

} // namespace oomlens
