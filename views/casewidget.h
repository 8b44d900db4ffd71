#pragma once

#include "core/analysis/cardtimeline.h"
#include "core/diagnosis.h"
#include "opening/analyzedcase.h"
#include "views/caseloader.h"

#include <QWidget>

#include <memory>
#include <optional>

class QComboBox;
class QLabel;
class QTabWidget;

namespace oomlens {

class AllocatorStateWidget;
class EventsView;
class LiveAllocationsView;
class OverviewPage;
class PinnedHostView;
class TimelineData;
class TimelineWidget;
class WhatIfView;
class ProfilerTimelineView;

// One open case: the overview, and for snapshots the timeline with the views linked to its
// time cursor (live allocations, allocator state, event list).
class CaseWidget : public QWidget
{
    Q_OBJECT
public:
    enum Page { OverviewTab, TimelineTab, EventsTab, WhatIfTab, PinnedHostTab, ProfilerTab };

    explicit CaseWidget(QWidget* parent = nullptr);
    void setCase(AnalyzedCasePtr loaded);
    // A big snapshot's timeline before its diagnosis (CaseLoader::timelineReady): the timeline
    // and the views below it show it, the overview waits for setCase() with the same case, which
    // keeps this timeline rather than building it again.
    void showTimelineFirst(const TimelineFirst& first);
    // True between showTimelineFirst() and setCase().
    bool awaitingDiagnosis() const { return m_awaitingDiagnosis; }
    // Meanwhile, the case being completed; only its inputs and snapshots' analyses may be read.
    AnalyzedCasePtr caseBeingDiagnosed() const { return m_awaitingDiagnosis ? m_partial : nullptr; }
    AnalyzedCasePtr loadedCase() const { return m_case; }

    // Shows snapshot `snapshotIndex`, device `device` in the timeline views.
    void selectDevice(int snapshotIndex, int32_t device);
    int64_t cursorEvent() const { return m_cursorEvent; }
    void showPage(Page page);
    // Moves the cursor to the allocation peak / the first OOM event of the shown device.
    bool goToPeak();
    bool goToOom();
    // Puts the keyboard in the search box of the page on screen.
    void focusSearch();

    OverviewPage* overview() const { return m_overview; }
    TimelineWidget* timeline() const { return m_timeline; }
    // The views that follow the time cursor off the overview are made the first time their tab is
    // shown or they are asked for, then start at the current timeline and cursor: a case opens
    // without building their tables, its allocator pools or its event list for tabs not on screen.
    LiveAllocationsView* liveAllocations();
    AllocatorStateWidget* allocatorState();
    EventsView* events();
    // Made the first time it is asked for or its tab is shown: a case opens without paying for
    // the planner's forty controls, and the view then starts from this case's run.
    WhatIfView* whatIf();
    PinnedHostView* pinnedHost() const { return m_pinnedHost; }
    ProfilerTimelineView* profiler() const { return m_profiler; }
    QTabWidget* tabs() const { return m_tabs; }
    // Below the timeline: live allocations and allocator state.
    QTabWidget* detailTabs() const { return m_details; }

public slots:
    void setCursorEvent(int64_t event);
    void showEvidence(const oomlens::EvidenceLink& link);

signals:
    void cursorChanged(int64_t event);

private:
    // What the tab on screen shows, made now if it was waiting for its first show.
    void makeShownViews();
    void fillDeviceChoices();
    void showTimelineData(std::shared_ptr<const TimelineData> data);
    // What the What-if view starts from: the measured device and the case's config.json models.
    void setWhatIfStart(std::shared_ptr<const SnapshotAnalysis> analysis, int32_t device,
        std::vector<std::pair<planner::ModelSpec, QString>> configs);
    // The pinned host memory of snapshot `snapshotIndex`, else of the case's first snapshot that
    // recorded any; the tab is disabled when none did.
    void showPinnedHost(int snapshotIndex);

    AnalyzedCasePtr m_case;
    AnalyzedCasePtr m_partial; // showTimelineFirst's case, until setCase
    std::shared_ptr<const SnapshotAnalysis> m_analysis;
    std::shared_ptr<const TimelineData> m_data;
    QTabWidget* m_tabs = nullptr;
    QTabWidget* m_details = nullptr;
    OverviewPage* m_overview = nullptr;
    QWidget* m_timelinePage = nullptr;
    QComboBox* m_deviceBox = nullptr;
    QLabel* m_deviceLabel = nullptr;
    TimelineWidget* m_timeline = nullptr;
    // The pages the lazily made views go in, and the views once made.
    QWidget* m_livePage = nullptr;
    QWidget* m_allocatorPage = nullptr;
    QWidget* m_eventsPage = nullptr;
    LiveAllocationsView* m_live = nullptr;
    AllocatorStateWidget* m_allocator = nullptr;
    EventsView* m_events = nullptr;
    QWidget* m_whatIfPage = nullptr; // the tab's page; the view goes in on first use
    WhatIfView* m_whatIf = nullptr;
    struct WhatIfStart
    {
        std::shared_ptr<const SnapshotAnalysis> analysis;
        int32_t device = 0;
        std::vector<std::pair<planner::ModelSpec, QString>> configs;
    } m_whatIfStart;
    PinnedHostView* m_pinnedHost = nullptr;
    ProfilerTimelineView* m_profiler = nullptr;
    int64_t m_cursorEvent = -1;
    bool m_settingCursor = false;
    bool m_awaitingDiagnosis = false;
};

} // namespace oomlens
