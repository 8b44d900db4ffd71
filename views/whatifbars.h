#pragma once

#include "core/planner/memoryplan.h"

#include <QWidget>

namespace oomlens {

// Stacked bars, one per GPU (all ranks hold the same plan; past eight, one bar stands for them
// all), banded in the timeline's category colours, with the card's capacity drawn across.
class WhatIfBars : public QWidget
{
    Q_OBJECT
public:
    explicit WhatIfBars(QWidget* parent = nullptr);

    void setPlan(const planner::BandBytes& bands, uint64_t capacityBytes, int gpus);

    QSize sizeHint() const override { return { 420, 320 }; }

protected:
    void paintEvent(QPaintEvent* event) override;

private:
    planner::BandBytes m_bands {};
    uint64_t m_capacity = 0;
    int m_gpus = 1;
};

} // namespace oomlens
