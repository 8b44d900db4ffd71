#include "views/plots/plotstyle.h"

#include "core/phase.h"
#include "views/categorycolors.h"
#include "views/viewutil.h"

#include <QStringList>
#include <qcustomplot.h>

namespace oomlens {

void styleAxis(QCPAxis* axis, const QPalette& palette)
{
    const QColor text = palette.color(QPalette::WindowText);
    QColor grid = text;
    grid.setAlpha(40);
    axis->setBasePen(QPen(text));
    axis->setTickPen(QPen(text));
    axis->setSubTickPen(QPen(text));
    axis->setTickLabelColor(text);
    axis->setLabelColor(text);
    axis->grid()->setPen(QPen(grid, 1, Qt::DotLine));
}

void stylePlot(QCustomPlot* plot, const QPalette& palette)
{
    plot->setBackground(palette.color(QPalette::Base));
    styleAxis(plot->xAxis, palette);
    styleAxis(plot->yAxis, palette);
}

QString categoryLegendHtml()
{
    QStringList legend;
    for (int i = 0; i < categoryCount; ++i) {
        const auto category = static_cast<Category>(i);
        legend << QStringLiteral("<span style='color:%1'>&#9632;</span>&nbsp;%2")
                      .arg(colors::category(category).name(), categoryText(category));
    }
    return legend.join(QStringLiteral("&nbsp;&nbsp; "));
}

} // namespace oomlens
