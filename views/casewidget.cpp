#include "views/casewidget.h"

#include "core/profilercomparison.h"

#include "views/allocatorstatewidget.h"
#include "views/eventsview.h"
#include "views/liveallocationsview.h"
#include "views/overviewpage.h"
#include "views/pinnedhostview.h"
#include "views/plots/timelinedata.h"
#include "views/profilertimelineview.h"
#include "views/timelinewidget.h"
#include "views/whatifview.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QSplitter>
#include <QTabWidget>
#include <QVBoxLayout>

namespace oomlens {

namespace {

// A tab's page whose view is made on first show (CaseWidget::makeShownViews).
QWidget* emptyPage(QWidget* parent)
{
    auto* page = new QWidget(parent);
    auto* layout = new QVBoxLayout(page);
    layout->setContentsMargins(0, 0, 0, 0);
    return page;
}

// The rest of the card over one device's timeline, as the case's analysis holds it.
std::optional<CardTimelineBand> cardBandOf(const AnalyzedCase& loaded, size_t snapshot, int32_t device)
{
    const CardTimelineBand* band = loaded.analysis.cardBandOn(snapshot, device);
    return band ? std::optional<CardTimelineBand>(*band) : std::nullopt;
}

} // namespace

CaseWidget::CaseWidget(QWidget* parent)
    : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(0, 0, 0, 0);
    m_tabs = new QTabWidget(this);
    m_tabs->setDocumentMode(true);
    layout->addWidget(m_tabs);

    m_overview = new OverviewPage(this);
    m_tabs->addTab(m_overview, QStringLiteral("Overview"));

    m_timelinePage = new QWidget(this);
    auto* timelineLayout = new QVBoxLayout(m_timelinePage);
    timelineLayout->setContentsMargins(0, 4, 0, 0);
    auto* deviceRow = new QHBoxLayout;
    deviceRow->setContentsMargins(8, 0, 8, 0);
    auto* deviceLabel = new QLabel(QStringLiteral("Show:"), m_timelinePage);
    deviceRow->addWidget(deviceLabel);
    m_deviceBox = new QComboBox(m_timelinePage);
    m_deviceLabel = deviceLabel;
    deviceRow->addWidget(m_deviceBox);
    deviceRow->addStretch(1);
    timelineLayout->addLayout(deviceRow);
    auto* splitter = new QSplitter(Qt::Vertical, m_timelinePage);
    m_timeline = new TimelineWidget(splitter);
    auto* below = new QTabWidget(splitter);
    m_details = below;
    m_livePage = emptyPage(below);
    m_allocatorPage = emptyPage(below);
    below->addTab(m_livePage, QStringLiteral("Live allocations"));
    below->addTab(m_allocatorPage, QStringLiteral("Allocator state at cursor"));
    splitter->addWidget(m_timeline);
    splitter->addWidget(below);
    splitter->setStretchFactor(0, 3);
    splitter->setStretchFactor(1, 2);
    splitter->setSizes({ 560, 340 });
    timelineLayout->addWidget(splitter, 1);
    m_tabs->addTab(m_timelinePage, QStringLiteral("Timeline"));

    m_eventsPage = emptyPage(this);
    m_tabs->addTab(m_eventsPage, QStringLiteral("Events"));

    m_whatIfPage = new QWidget(this);
    auto* whatIfLayout = new QVBoxLayout(m_whatIfPage);
    whatIfLayout->setContentsMargins(0, 0, 0, 0);
    m_tabs->addTab(m_whatIfPage, QStringLiteral("What if"));

    m_pinnedHost = new PinnedHostView(this);
    m_tabs->addTab(m_pinnedHost, QStringLiteral("Pinned host memory"));
    m_tabs->setTabEnabled(PinnedHostTab, false);

    m_profiler = new ProfilerTimelineView(this);
    m_tabs->addTab(m_profiler, QStringLiteral("Profiler memory"));
    m_tabs->setTabEnabled(ProfilerTab, false);

    connect(m_overview, &OverviewPage::evidenceActivated, this, &CaseWidget::showEvidence);
    connect(m_overview, &OverviewPage::timelineRequested, this, [this] { showPage(TimelineTab); });
    connect(m_timeline, &TimelineWidget::cursorChanged, this, &CaseWidget::setCursorEvent);
    connect(m_tabs, &QTabWidget::currentChanged, this, [this] { makeShownViews(); });
    connect(m_details, &QTabWidget::currentChanged, this, [this] { makeShownViews(); });
    connect(m_deviceBox, &QComboBox::activated, this, [this](int index) {
        const QPoint choice = m_deviceBox->itemData(index).toPoint();
        selectDevice(choice.x(), choice.y());
    });
}

void CaseWidget::makeShownViews()
{
    switch (m_tabs->currentIndex()) {
    case TimelineTab:
        if (m_details->currentIndex() == 0)
            liveAllocations();
        else
            allocatorState();
        break;
    case EventsTab:
        events();
        break;
    case WhatIfTab:
        whatIf();
        break;
    default:
        break;
    }
}

LiveAllocationsView* CaseWidget::liveAllocations()
{
    if (!m_live) {
        m_live = new LiveAllocationsView(m_livePage);
        m_livePage->layout()->addWidget(m_live);
        connect(m_live, &LiveAllocationsView::cursorRequested, this, &CaseWidget::setCursorEvent);
        if (m_data) {
            m_live->setTimeline(m_data);
            if (m_cursorEvent >= 0)
                m_live->setEvent(m_cursorEvent);
        }
    }
    return m_live;
}

AllocatorStateWidget* CaseWidget::allocatorState()
{
    if (!m_allocator) {
        m_allocator = new AllocatorStateWidget(m_allocatorPage);
        m_allocatorPage->layout()->addWidget(m_allocator);
        if (m_data) {
            m_allocator->setTimeline(m_data);
            if (m_cursorEvent >= 0)
                m_allocator->setEvent(m_cursorEvent);
        }
    }
    return m_allocator;
}

EventsView* CaseWidget::events()
{
    if (!m_events) {
        m_events = new EventsView(m_eventsPage);
        m_eventsPage->layout()->addWidget(m_events);
        connect(m_events, &EventsView::cursorRequested, this, &CaseWidget::setCursorEvent);
        if (m_data) {
            m_events->setTimeline(m_data);
            if (m_cursorEvent >= 0)
                m_events->setEvent(m_cursorEvent);
        }
    }
    return m_events;
}

void CaseWidget::showTimelineFirst(const TimelineFirst& first)
{
    // The partial case is not this widget's case yet: only its snapshots are complete, and
    // everything that reads the case (overview, device choices, card band, what-if) waits.
    m_awaitingDiagnosis = true;
    m_partial = first.partial;
    m_tabs->setTabEnabled(TimelineTab, true);
    m_tabs->setTabEnabled(EventsTab, true);
    m_tabs->setTabEnabled(OverviewTab, false);
    m_tabs->setTabText(OverviewTab, QStringLiteral("Overview (diagnosing…)"));
    m_tabs->setTabToolTip(
        OverviewTab, QStringLiteral("The diagnosis is still being worked out; the timeline is ready"));
    m_deviceBox->clear();
    m_deviceBox->setVisible(false);
    m_deviceLabel->setVisible(false);
    m_analysis = std::shared_ptr<const SnapshotAnalysis>(
        first.partial, &first.partial->analysis.snapshots[size_t(first.snapshotIndex)]);
    showTimelineData(first.timeline);
    showPage(TimelineTab);
}

void CaseWidget::setCase(AnalyzedCasePtr loaded)
{
    // A timeline shown first stays: the same case's snapshot is not built into series again.
    std::shared_ptr<const TimelineData> early;
    if (m_awaitingDiagnosis && m_data && loaded && m_analysis && !loaded->analysis.snapshots.empty()
        && m_analysis.get() == &loaded->analysis.snapshots.front())
        early = m_data;
    m_awaitingDiagnosis = false;
    m_partial.reset();
    m_tabs->setTabEnabled(OverviewTab, true);
    m_tabs->setTabText(OverviewTab, QStringLiteral("Overview"));
    m_tabs->setTabToolTip(OverviewTab, QString());
    m_case = std::move(loaded);
    m_overview->setCase(m_case);
    fillDeviceChoices();
    const bool hasSnapshot = m_deviceBox->count() > 0;
    m_tabs->setTabEnabled(TimelineTab, hasSnapshot);
    m_tabs->setTabEnabled(EventsTab, hasSnapshot);
    const QString hint = QStringLiteral("Open a memory snapshot (torch.cuda.memory._dump_snapshot) in this case to see "
                                        "what filled the card over time");
    m_tabs->setTabToolTip(TimelineTab, hasSnapshot ? QString() : hint);
    m_tabs->setTabToolTip(EventsTab, hasSnapshot ? QString() : hint);
    if (hasSnapshot && early && early->device() == m_case->analysis.snapshots.front().primary()) {
        m_deviceBox->setCurrentIndex(0);
        m_timeline->setCardBand(cardBandOf(*m_case, 0, early->device()->device));
    } else if (hasSnapshot) {
        const QPoint choice = m_deviceBox->itemData(0).toPoint();
        selectDevice(choice.x(), choice.y());
    }
    // The overview's picture is the timeline the Timeline tab opens on, built once.
    m_overview->showTimeline(m_data);
    // A config.json plans that model; opened alone it is a question for the planner, so the
    // What-if tab is where the answer is.
    std::vector<std::pair<planner::ModelSpec, QString>> configs;
    for (const CaseInput& input : m_case->input.inputs) {
        if (input.kind == InputKind::ModelConfig && !input.error && configs.size() < m_case->input.models.size())
            configs.emplace_back(
                m_case->input.models[configs.size()], QString::fromStdString(input.path).section(QLatin1Char('/'), -1));
    }
    // The planner starts from what this run measured at its peak.
    setWhatIfStart(hasSnapshot ? m_analysis : nullptr, hasSnapshot ? m_deviceBox->itemData(0).toPoint().y() : 0,
        std::move(configs));
    showPinnedHost(hasSnapshot ? m_deviceBox->itemData(m_deviceBox->currentIndex()).toPoint().x() : 0);
    if (!m_whatIfStart.configs.empty() && !hasSnapshot && m_case->input.text.empty())
        m_tabs->setCurrentIndex(WhatIfTab);
    // torch.profiler's memory timeline: its own page, beside the snapshot's categories when both
    // are open; opened alone, it is what the user came to see.
    const bool hasProfiler = !m_case->input.profilerTimelines.empty();
    m_profiler->setTimelines(
        m_case->input.profilerTimelines, compareProfilerWithSnapshots(m_case->input, m_case->analysis));
    m_tabs->setTabEnabled(ProfilerTab, hasProfiler);
    m_tabs->setTabToolTip(ProfilerTab,
        hasProfiler ? QString()
                    : QStringLiteral("Open a torch.profiler memory timeline (prof.export_memory_timeline) in this "
                                     "case to see PyTorch's own categories over time"));
    if (hasProfiler && !hasSnapshot && m_case->input.text.empty())
        m_tabs->setCurrentIndex(ProfilerTab);
}

void CaseWidget::setWhatIfStart(std::shared_ptr<const SnapshotAnalysis> analysis, int32_t device,
    std::vector<std::pair<planner::ModelSpec, QString>> configs)
{
    m_whatIfStart = { std::move(analysis), device, std::move(configs) };
    if (m_whatIf) {
        m_whatIf->setMeasured(m_whatIfStart.analysis, m_whatIfStart.device);
        m_whatIf->setConfigModels(m_whatIfStart.configs);
    }
}

WhatIfView* CaseWidget::whatIf()
{
    if (!m_whatIf) {
        m_whatIf = new WhatIfView(m_whatIfPage);
        m_whatIfPage->layout()->addWidget(m_whatIf);
        m_whatIf->setMeasured(m_whatIfStart.analysis, m_whatIfStart.device);
        m_whatIf->setConfigModels(m_whatIfStart.configs);
    }
    return m_whatIf;
}

void CaseWidget::fillDeviceChoices()
{
    m_deviceBox->clear();
    if (!m_case)
        return;
    const auto& snapshots = m_case->analysis.snapshots;
    for (size_t s = 0; s < snapshots.size(); ++s) {
        QString name = QStringLiteral("snapshot %1").arg(s + 1);
        for (const CaseInput& input : m_case->input.inputs) {
            if (input.snapshotIndex == int(s))
                name = QString::fromStdString(input.path).section(QLatin1Char('/'), -1);
        }
        // The primary device first: it is the one the diagnosis talks about.
        std::vector<int32_t> devices;
        devices.push_back(snapshots[s].primaryDevice);
        for (const DeviceAnalysis& device : snapshots[s].devices) {
            if (device.device != snapshots[s].primaryDevice)
                devices.push_back(device.device);
        }
        for (int32_t device : devices) {
            if (!snapshots[s].device(device))
                continue;
            m_deviceBox->addItem(QStringLiteral("%1 · device %2").arg(name).arg(device), QPoint(int(s), device));
        }
    }
    m_deviceBox->setVisible(m_deviceBox->count() > 1);
    m_deviceLabel->setVisible(m_deviceBox->count() > 1);
}

void CaseWidget::selectDevice(int snapshotIndex, int32_t device)
{
    if (!m_case || snapshotIndex < 0 || size_t(snapshotIndex) >= m_case->analysis.snapshots.size())
        return;
    // Alias into the case so the views keep the whole case alive, not a copy of the analysis.
    m_analysis = std::shared_ptr<const SnapshotAnalysis>(m_case, &m_case->analysis.snapshots[size_t(snapshotIndex)]);
    const int choice = m_deviceBox->findData(QPoint(snapshotIndex, device));
    if (choice >= 0)
        m_deviceBox->setCurrentIndex(choice);
    m_timeline->setCardBand(cardBandOf(*m_case, size_t(snapshotIndex), device));
    showTimelineData(std::make_shared<TimelineData>(m_analysis, device));
    showPinnedHost(snapshotIndex);
}

void CaseWidget::showPinnedHost(int snapshotIndex)
{
    std::optional<PinnedHostTimeline> timeline;
    std::optional<int64_t> oomTime;
    static const std::vector<SnapshotAnalysis> none;
    const std::vector<SnapshotAnalysis>& snapshots = m_case ? m_case->analysis.snapshots : none;
    auto pick = [&](size_t index) {
        if (timeline || index >= snapshots.size() || !snapshots[index].snapshot)
            return;
        timeline = pinnedHostTimeline(*snapshots[index].snapshot);
        const DeviceAnalysis* device = snapshots[index].primary();
        if (timeline && device && !device->ooms.empty())
            oomTime = device->ooms.front().timeUs;
    };
    pick(static_cast<size_t>(std::max(0, snapshotIndex)));
    for (size_t i = 0; i < snapshots.size(); ++i)
        pick(i);
    m_tabs->setTabEnabled(PinnedHostTab, timeline.has_value());
    m_tabs->setTabToolTip(PinnedHostTab,
        timeline ? QString()
                 : QStringLiteral("Record pinned host memory with "
                                  "_record_memory_history(record_pinned_host_memory=True), PyTorch 2.14 or newer"));
    m_pinnedHost->setTimeline(std::move(timeline), oomTime);
}

void CaseWidget::showTimelineData(std::shared_ptr<const TimelineData> data)
{
    m_data = std::move(data);
    m_cursorEvent = -1;
    m_timeline->setTimeline(m_data);
    if (m_live)
        m_live->setTimeline(m_data);
    if (m_allocator)
        m_allocator->setTimeline(m_data);
    if (m_events)
        m_events->setTimeline(m_data);
    if (m_data->device() && m_data->eventCount() > 0)
        setCursorEvent(std::max<int64_t>(0, m_data->device()->peakEvent));
}

void CaseWidget::setCursorEvent(int64_t event)
{
    if (m_settingCursor || !m_data || m_data->eventCount() == 0)
        return;
    event = std::clamp<int64_t>(event, 0, m_data->eventCount() - 1);
    m_settingCursor = true;
    m_cursorEvent = event;
    m_timeline->setCursorEvent(event);
    if (m_live)
        m_live->setEvent(event);
    if (m_allocator)
        m_allocator->setEvent(event);
    if (m_events)
        m_events->setEvent(event);
    m_settingCursor = false;
    emit cursorChanged(event);
}

void CaseWidget::showEvidence(const EvidenceLink& link)
{
    if (link.snapshotIndex < 0)
        return;
    const QPoint current = m_deviceBox->currentData().toPoint();
    if (current != QPoint(link.snapshotIndex, link.device))
        selectDevice(link.snapshotIndex, link.device);
    showPage(TimelineTab);
    int64_t event = link.eventIndex;
    if (event < 0 && m_data && m_data->hasTime())
        event = m_data->eventAtTime(link.timeUs - m_data->device()->timeAxis.originUs); // on the axis
    setCursorEvent(event);
}

void CaseWidget::showPage(Page page)
{
    m_tabs->setCurrentIndex(page);
}

bool CaseWidget::goToPeak()
{
    if (!m_data || !m_data->device() || m_data->eventCount() == 0)
        return false;
    if (m_tabs->currentIndex() == OverviewTab)
        showPage(TimelineTab);
    setCursorEvent(std::max<int64_t>(0, m_data->device()->peakEvent));
    return true;
}

bool CaseWidget::goToOom()
{
    if (!m_data || !m_data->device())
        return false;
    for (const OomAnalysis& oom : m_data->device()->ooms) {
        if (oom.eventIndex >= 0) {
            if (m_tabs->currentIndex() == OverviewTab)
                showPage(TimelineTab);
            setCursorEvent(oom.eventIndex);
            return true;
        }
    }
    return false;
}

void CaseWidget::focusSearch()
{
    if (m_tabs->currentIndex() == EventsTab)
        events()->focusSearch();
    else if (m_tabs->isTabEnabled(TimelineTab)) {
        showPage(TimelineTab);
        m_details->setCurrentIndex(0);
        liveAllocations()->filter()->setFocus(Qt::ShortcutFocusReason);
        liveAllocations()->filter()->selectAll();
    }
}

} // namespace oomlens
