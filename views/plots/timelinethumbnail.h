#pragma once

#include "views/plots/timelinedata.h"

#include <QWidget>

#include <memory>

namespace oomlens {

// The timeline as a picture for the overview: the stacked categories over the whole trace (one
// pixel column each, the column's fullest moment), the reserved line, the peak and the OOM
// events, in the timeline's colours. No axes to drive, no QCustomPlot: it paints from the same
// TimelineData the timeline tab uses, so it costs one downsample at its width. A click asks for
// the timeline itself.
class TimelineThumbnail : public QWidget
{
    Q_OBJECT
public:
    explicit TimelineThumbnail(QWidget* parent = nullptr);

    void setTimeline(std::shared_ptr<const TimelineData> data);
    std::shared_ptr<const TimelineData> timeline() const { return m_data; }
    // Pixel columns drawn by the last paint (for tests).
    int paintedColumns() const { return m_paintedColumns; }

    QSize sizeHint() const override { return { 720, 170 }; }
    QSize minimumSizeHint() const override { return { 240, 110 }; }

signals:
    void activated();

protected:
    void paintEvent(QPaintEvent* event) override;
    void mouseReleaseEvent(QMouseEvent* event) override;

private:
    // The chart's rectangle, beside the axis' top figure (`topLabel`) and above the peak's label.
    QRect plotArea(const QString& topLabel) const;

    std::shared_ptr<const TimelineData> m_data;
    int m_paintedColumns = 0;
};

} // namespace oomlens
