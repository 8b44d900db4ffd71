#include "views/timelinewidget.h"

#include "views/categorycolors.h"
#include "views/plots/dumpstatepicture.h"
#include "views/viewutil.h"

#include <QFileDialog>
#include <QLabel>
#include <QPainter>
#include <QSvgGenerator>
#include <qcustomplot.h>

#include <algorithm>

namespace oomlens {

int TimelineWidget::drawExportLegend(QPainter* painter, int width) const
{
    // The on-screen legend is a label beside the plot; a saved chart must explain itself.
    const QFontMetrics metrics(font());
    const int height = metrics.height() * 2;
    const QPalette palette = this->palette();
    painter->save();
    painter->setFont(font());
    painter->fillRect(QRect(0, 0, width, height), palette.color(QPalette::Base));
    int x = 12;
    const int middle = height / 2;
    const int swatch = metrics.ascent() - 2;
    for (Category category : stackOrder) {
        painter->fillRect(QRect(x, middle - swatch / 2, swatch, swatch), colors::category(category));
        x += swatch + 5;
        const QString text = categoryText(category);
        painter->setPen(palette.color(QPalette::WindowText));
        painter->drawText(QPoint(x, middle + metrics.ascent() / 2 - 1), text);
        x += metrics.horizontalAdvance(text) + 16;
    }
    painter->setPen(QPen(colors::reservedLine(), 1.6, Qt::DashLine));
    painter->drawLine(QPointF(x, middle), QPointF(x + 22, middle));
    x += 27;
    painter->setPen(palette.color(QPalette::WindowText));
    painter->drawText(QPoint(x, middle + metrics.ascent() / 2 - 1), QStringLiteral("Reserved"));
    painter->restore();
    return height;
}

bool TimelineWidget::exportImage(const QString& path)
{
    if (m_noHistory && m_data && m_data->device())
        return exportDumpState(path);
    const int width = std::max(800, m_plot->width());
    const int height = std::max(400, m_plot->height());
    const int legend = QFontMetrics(font()).height() * 2;
    if (path.endsWith(QLatin1String(".svg"), Qt::CaseInsensitive)) {
        QSvgGenerator generator;
        generator.setFileName(path);
        generator.setSize(QSize(width, height + legend));
        generator.setViewBox(QRect(0, 0, width, height + legend));
        generator.setTitle(QStringLiteral("oomlens timeline"));
        QCPPainter painter;
        if (!painter.begin(&generator))
            return false;
        painter.translate(0, drawExportLegend(&painter, width));
        m_plot->toPainter(&painter, width, height);
        return painter.end();
    }
    // At the screen's pixel ratio (at least 2×) so the PNG stays sharp on HiDPI screens and slides.
    const double scale = std::max(2.0, devicePixelRatioF());
    QImage image(QSize(int(width * scale), int((height + legend) * scale)), QImage::Format_ARGB32_Premultiplied);
    image.fill(palette().color(QPalette::Base));
    QCPPainter painter;
    if (!painter.begin(&image))
        return false;
    // Line widths scale with the picture, as QCustomPlot's own savePng does.
    painter.setMode(QCPPainter::pmNonCosmetic);
    painter.scale(scale, scale);
    painter.translate(0, drawExportLegend(&painter, width));
    m_plot->toPainter(&painter, width, height);
    painter.end();
    return image.save(path, "PNG");
}

// No history, no curve: the file holds the statement of what is missing over the allocator's
// state at the dump, so an exported chart never comes out empty.
bool TimelineWidget::exportDumpState(const QString& path) const
{
    const DumpStatePicture picture(*m_data, font(), palette());
    const int width = std::max(800, this->width());
    const int height = picture.height(width);
    if (path.endsWith(QLatin1String(".svg"), Qt::CaseInsensitive)) {
        QSvgGenerator generator;
        generator.setFileName(path);
        generator.setSize(QSize(width, height));
        generator.setViewBox(QRect(0, 0, width, height));
        generator.setTitle(QStringLiteral("oomlens allocator state at the dump"));
        QPainter painter;
        if (!painter.begin(&generator))
            return false;
        picture.draw(&painter, width);
        return painter.end();
    }
    const double scale = std::max(2.0, devicePixelRatioF());
    QImage image(QSize(int(width * scale), int(height * scale)), QImage::Format_ARGB32_Premultiplied);
    image.fill(palette().color(QPalette::Base));
    QPainter painter;
    if (!painter.begin(&image))
        return false;
    painter.scale(scale, scale);
    picture.draw(&painter, width);
    painter.end();
    return image.save(path, "PNG");
}

void TimelineWidget::exportDialog()
{
    const QString path = QFileDialog::getSaveFileName(this, QStringLiteral("Export chart"),
        QStringLiteral("timeline.png"), QStringLiteral("PNG image (*.png);;SVG drawing (*.svg)"));
    if (!path.isEmpty() && !exportImage(path))
        m_info->setText(QStringLiteral("Could not write %1").arg(path.toHtmlEscaped()));
}

} // namespace oomlens
