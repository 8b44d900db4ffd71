#pragma once

#include "core/analysis/cardtimeline.h"
#include "core/analysis/pendingfrees.h"
#include "core/analysis/privatepools.h"
#include "core/phase.h"
#include "views/plots/timelinedata.h"

#include <QStringList>
#include <QVector>
#include <QWidget>

#include <array>
#include <memory>
#include <optional>
#include <vector>

class QCustomPlot;
class QCPGraph;
class QCPRange;
class QCPItemLine;
class QCPItemStraightLine;
class QCPItemText;
class QCheckBox;
class QLabel;
class QMouseEvent;
class QPainter;
class QComboBox;

namespace oomlens {

// Stacked categories of allocated memory over the trace, with the reserved line, peak and
// OOM markers, phase shading and step ticks. Redraws at the plot's pixel width via
// TimelineData's min/max downsampling, so the peak survives any zoom level.
class StackedBands;

class TimelineWidget : public QWidget
{
    Q_OBJECT
public:
    enum class Axis { Time, Events };

    explicit TimelineWidget(QWidget* parent = nullptr);
    ~TimelineWidget() override;

    void setTimeline(std::shared_ptr<const TimelineData> data);
    // The rest of the card (context, libraries, other processes) as a band above reserved, with
    // the card's total as a line; drawn on timelines of its device. The band is the case analysis'
    // for the snapshot shown (CaseAnalysis::cardBandOn). Set it before the timeline.
    void setCardBand(std::optional<CardTimelineBand> band);
    // The band as drawn on the current timeline: nothing when none is set or the device differs.
    const CardTimelineBand* shownCardBand() const;
    // Top of the card band right after `event`: reserved + the rest of the card; 0 without one.
    uint64_t cardBandTopAt(int64_t event) const;
    std::shared_ptr<const TimelineData> timeline() const { return m_data; }
    void setAxis(Axis axis);
    Axis axis() const { return m_axis; }
    // The axis a newly set timeline starts on (Settings); time falls back to events without time_us.
    void setPreferredAxis(Axis axis) { m_preferredAxis = axis; }
    // Re-reads category colours and the palette (after Settings changed them).
    void refreshColors() { applyColors(); }

    int64_t cursorEvent() const { return m_cursorEvent; }
    // Visible event range, for tests and the status line.
    std::pair<int64_t, int64_t> visibleEvents() const;
    void zoomToEvents(int64_t first, int64_t last);
    void resetZoom();
    // Stacked graph tops as last drawn: number of points per band (for tests and benchmarks).
    int plottedPointCount() const;
    // Hover text for the event nearest to the plot coordinate; what the tooltip shows.
    QString describe(int64_t event, double bytesAtPointer) const;

    // PNG or SVG by the extension. A snapshot without history exports the allocator's state at
    // the dump with the statement of what is missing (views/plots/dumpstatepicture.h).
    bool exportImage(const QString& path);
    QCustomPlot* plot() const { return m_plot; }

    // Fixed state at the bottom, per-step memory on top: the top edge then shows what varies
    // (the overview's picture stacks them the same way).
    static constexpr std::array<Category, categoryCount> stackOrder
        = { Category::Parameters, Category::Gradients, Category::OptimizerState, Category::KvCache, Category::Inputs,
              Category::Communication, Category::Activations, Category::Temporaries, Category::Unknown };

public slots:
    void setCursorEvent(int64_t event);

signals:
    void cursorChanged(int64_t event);

protected:
    void changeEvent(QEvent* event) override;
    bool eventFilter(QObject* watched, QEvent* event) override;

private:
    void buildStatic();
    QCPRange clampedRange(QCPRange range) const;
    std::vector<int64_t> columnBoundaries(const QCPRange& range) const;
    uint64_t setBands(const std::vector<TimelineData::Point>& points, const QVector<double>& keys);
    QVector<double> setReserved(const std::vector<TimelineData::ReservedPoint>& reserved, uint64_t& visibleMax);
    void setPendingFrees(const std::vector<TimelineData::Point>& points, const QVector<double>& keys);
    void setCardGap(const std::vector<TimelineData::ReservedPoint>& reserved, const QVector<double>& reservedKeys,
        uint64_t& visibleMax);
    void addPhaseShading();
    void addHistoryToLegend(QStringList& legend);
    void colorMarkers(const QPalette& palette);
    void addAnnotationStrip();
    void addStepTicks();
    void addMarker(const QString& kind, int64_t event, double y, const QString& text);
    void applyColors();
    void rebuildVisible();
    void rescaleValueAxis(uint64_t visibleMax);
    double keyOf(int64_t event) const;
    int64_t eventAt(double key) const;
    void onMouseMove(QMouseEvent* event);
    void onMousePress(QMouseEvent* event);
    void onMouseRelease(QMouseEvent* event);
    void exportDialog();
    bool exportDumpState(const QString& path) const;
    // Draws the category legend across the top of an exported chart; returns its height.
    int drawExportLegend(QPainter* painter, int width) const;

    QCustomPlot* m_plot = nullptr;
    QComboBox* m_axisBox = nullptr;
    QLabel* m_info = nullptr;
    QLabel* m_legend = nullptr;
    StackedBands* m_bands = nullptr; // one band per category, in stackOrder from the bottom
    QCPGraph* m_reserved = nullptr;
    QCPGraph* m_privatePools = nullptr; // reserved by CUDA graphs' and MemPools' private pools, hatched
    PrivatePools m_pools; // derived once per timeline
    // Freed by the program, not yet reusable: waiting for another stream (record_stream), cross-hatched.
    QCPGraph* m_pendingFrees = nullptr;
    PendingFrees m_pending; // derived once per timeline
    QCPGraph* m_cardGap = nullptr; // reserved + the rest of the card, filled down to m_reserved
    QCPItemStraightLine* m_cardTotal = nullptr; // the card's capacity
    std::optional<CardTimelineBand> m_card; // as set
    std::optional<CardTimelineBand> m_cardShown; // m_card when the shown device is its own
    void updateShownCard();
    QCPItemStraightLine* m_cursorLine = nullptr;
    std::shared_ptr<const TimelineData> m_data;
    Axis m_axis = Axis::Time;
    Axis m_preferredAxis = Axis::Time;
    int64_t m_cursorEvent = -1;
    bool m_rebuilding = false;
    bool m_noHistory = false; // no curve to draw: segments only, or no trace events
    bool m_drawn = false; // replotted once: layers have paint buffers to replot on their own
    QPoint m_pressPos;
    int m_lastPointCount = 0;
};

} // namespace oomlens
