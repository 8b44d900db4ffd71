#pragma once

#include "core/analysis/pinnedhostmemory.h"

#include <QWidget>

#include <optional>

class QCustomPlot;
class QLabel;

namespace oomlens {

// The "Pinned host memory" page: what PyTorch's pinned host allocator held in host RAM over its
// trace (record_pinned_host_memory=True), on its own plot so that it is never read as GPU memory.
// Time on the x axis, like the GPU timeline's time mode, from the host trace's first entry.
class PinnedHostView : public QWidget
{
    Q_OBJECT
public:
    explicit PinnedHostView(QWidget* parent = nullptr);

    // `oomTimeUs`: the GPU's first OOM, marked on the plot when inside the host trace.
    void setTimeline(std::optional<PinnedHostTimeline> timeline, std::optional<int64_t> oomTimeUs);
    bool hasTimeline() const { return m_timeline.has_value(); }

    QCustomPlot* plot() const { return m_plot; }
    QLabel* summary() const { return m_summary; }

protected:
    void changeEvent(QEvent* event) override;

private:
    void rebuild();

    std::optional<PinnedHostTimeline> m_timeline;
    std::optional<int64_t> m_oomTimeUs;
    QLabel* m_summary = nullptr;
    QCustomPlot* m_plot = nullptr;
};

} // namespace oomlens
