#pragma once

#include "core/profilercomparison.h"
#include "core/profilertimeline.h"

#include <QWidget>

#include <vector>

class QComboBox;
class QCustomPlot;
class QLabel;
class QTableWidget;

namespace oomlens {

// The "Profiler memory" page: a torch.profiler memory timeline (export_memory_timeline, or a
// Kineto trace's [memory] events) as stacked bands in oomlens's categories over the profiler's
// time, PyTorch's own category names in the summary, and, with a snapshot of the same run open,
// the two categorisations side by side at their peaks.
class ProfilerTimelineView : public QWidget
{
    Q_OBJECT
public:
    explicit ProfilerTimelineView(QWidget* parent = nullptr);

    void setTimelines(std::vector<ProfilerTimeline> timelines, std::vector<ProfilerComparison> comparisons);
    bool hasTimelines() const { return !m_timelines.empty(); }

    QCustomPlot* plot() const { return m_plot; }
    QLabel* summary() const { return m_summary; }
    QTableWidget* comparisonTable() const { return m_table; }
    QComboBox* fileBox() const { return m_fileBox; }

protected:
    void changeEvent(QEvent* event) override;

private:
    void rebuild();
    void plotTimeline(const ProfilerTimeline& timeline);
    // The snapshot's categories beside the profiler's, at their peaks; hidden without one.
    void showComparison(const ProfilerComparison* comparison);

    std::vector<ProfilerTimeline> m_timelines;
    std::vector<ProfilerComparison> m_comparisons;
    QComboBox* m_fileBox = nullptr;
    QLabel* m_summary = nullptr;
    QCustomPlot* m_plot = nullptr;
    QTableWidget* m_table = nullptr;
};

} // namespace oomlens
