#pragma once

#include "core/planner/memoryplan.h"
#include "core/planner/plancalibration.h"

#include <QWidget>

#include <optional>
#include <vector>

namespace oomlens {

// Stacked bars, one per GPU (all ranks hold the same plan; past eight, one bar stands for them
// all), or with pipeline parallelism one per stage (a GPU of each), banded in the timeline's
// category colours, with the card's capacity drawn across.
class WhatIfBars : public QWidget
{
    Q_OBJECT
public:
    explicit WhatIfBars(QWidget* parent = nullptr);

    void setPlan(const planner::BandBytes& bands, uint64_t capacityBytes, int gpus);
    // One bar per pipeline stage (empty: one per GPU); `bands` of setPlan stays the busiest's.
    void setStages(std::vector<planner::BandBytes> stages);
    int barCount() const;
    // The bands as drawn (the busiest stage's with pipeline parallelism).
    const planner::BandBytes& bands() const { return m_bands; }
    // The measured starting point: each band's tooltip then says what the formula said for the
    // measured run, what the run held and their ratio (the factor every what-if carries).
    void setCalibration(const std::optional<planner::PlanCalibration>& calibration);

    // What hovering a band (its slice of a bar, or its legend row) shows.
    QString bandToolTip(planner::Band band) const;
    // The band under a point of the widget, if any.
    std::optional<planner::Band> bandAt(QPoint point) const;

    QSize sizeHint() const override { return { 420, 320 }; }

protected:
    void paintEvent(QPaintEvent* event) override;
    bool event(QEvent* event) override;

private:
    QRect plotArea() const;
    int legendWidth() const;
    uint64_t axisTop() const;

    std::optional<planner::PlanCalibration> m_calibration;
    planner::BandBytes m_bands {};
    std::vector<planner::BandBytes> m_stages;
    uint64_t m_capacity = 0;
    int m_gpus = 1;
};

} // namespace oomlens
