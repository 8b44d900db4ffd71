#include "views/overviewpage.h"

#include "core/analysis/cardreconciliation.h"
#include "core/analysis/topsites.h"
#include "core/presentation/cardwords.h"
#include "core/presentation/explain.h"
#include "core/presentation/historywords.h"
#include "core/presentation/labels.h"
#include "core/presentation/messagenumbers.h"
#include "core/serving/servingfixes.h"
#include "core/serving/servingtext.h"
#include "core/snapshotbackend.h"
#include "core/units.h"
#include "views/categorycolors.h"
#include "views/diagnosiscard.h"
#include "views/models/inputsmodel.h"
#include "views/models/processesmodel.h"
#include "views/models/summarymodel.h"
#include "views/plots/timelinedata.h"
#include "views/plots/timelinethumbnail.h"
#include "views/timelinewidget.h"
#include "views/viewutil.h"

#include <QCoreApplication>
#include <QEvent>
#include <QFontDatabase>
#include <QGridLayout>
#include <QHeaderView>
#include <QLabel>
#include <QTableView>
#include <QVBoxLayout>

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

namespace oomlens {

namespace {

// Tables inside the scrolling page show all their rows instead of scrolling on their own.
// fitWidth: as wide as its columns, instead of one stretched column pushing numbers to the far edge.
QTableView* makeTable(QAbstractItemModel* model, QWidget* parent, bool fitWidth = false)
{
    auto* view = new QTableView(parent);
    view->setModel(model);
    model->setParent(view);
    view->verticalHeader()->hide();
    view->setSelectionBehavior(QAbstractItemView::SelectRows);
    view->setEditTriggers(QAbstractItemView::NoEditTriggers);
    view->setAlternatingRowColors(true);
    view->setVerticalScrollBarPolicy(Qt::ScrollBarAlwaysOff);
    view->setHorizontalScrollBarPolicy(Qt::ScrollBarAsNeeded);
    view->horizontalHeader()->setStretchLastSection(!fitWidth);
    view->resizeColumnsToContents();
    if (fitWidth) {
        view->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
        view->setSizeAdjustPolicy(QAbstractScrollArea::AdjustToContents);
        view->setSizePolicy(QSizePolicy::Maximum, QSizePolicy::Fixed);
    }
    const int rows = model->rowCount();
    const int height = view->horizontalHeader()->sizeHint().height()
        + rows * view->verticalHeader()->defaultSectionSize() + 2 * view->frameWidth() + 4;
    view->setFixedHeight(height);
    return view;
}

// Why there is no diagnosis, in terms of what this case holds, and which input would give one.
QString noDiagnosisText(const AnalyzedCase& loaded)
{
    const bool hasMessage = !loaded.input.text.oomMessages.empty();
    const bool hasSummary = !loaded.input.text.summaries.empty();
    bool hasSnapshot = false, snapshotOom = false;
    for (const SnapshotAnalysis& analysis : loaded.analysis.snapshots) {
        hasSnapshot = hasSnapshot || analysis.snapshot;
        for (const DeviceAnalysis& device : analysis.devices)
            snapshotOom = snapshotOom || !device.ooms.empty();
    }
    if (hasSnapshot && !snapshotOom && !hasMessage)
        return QStringLiteral("No diagnosis: nothing failed in this snapshot (it holds no out-of-memory event), so "
                              "there is no failed request to explain. The timeline still shows what filled the card. "
                              "To diagnose a failure, add the OOM message of the failing run, or dump the snapshot "
                              "from that run (drop or paste it here).");
    if (hasSummary && !hasMessage && !hasSnapshot)
        return QStringLiteral("No diagnosis yet: a memory_summary() gives the allocator's counters, not which request "
                              "failed or what the memory held. Add the OOM message (the traceback) or a memory "
                              "snapshot of the failing run (drop or paste it here).");
    return QStringLiteral("No diagnosis yet. The inputs so far do not show why memory ran out: add the OOM message, a "
                          "memory snapshot or memory_summary() output of the failing run (drop or paste it here).");
}

// The card's capacity by holder as one rich-text bar, with its legend underneath.
QString cardBarHtml(const CardReconciliation& card)
{
    uint64_t total = 0;
    for (const CardBand& band : card.bands)
        total += band.bytes;
    if (total == 0)
        return {};
    QString cells, legend;
    for (const CardBand& band : card.bands) {
        const int percent = std::max(1, int(std::lround(100.0 * double(band.bytes) / double(total))));
        cells += QStringLiteral("<td width='%1%' bgcolor='%2' height='18'></td>")
                     .arg(percent)
                     .arg(colors::cardBand(band.kind).name());
        legend += QStringLiteral("<span style='color:%1'>&#9632;</span>&nbsp;%2&nbsp;<b>%3</b>&nbsp;&nbsp; ")
                      .arg(colors::cardBand(band.kind).name(), toQString(band.label).toHtmlEscaped(),
                          bytesText(band.bytes));
    }
    return QStringLiteral("<table width='100%' cellspacing='0' cellpadding='0'><tr>%1</tr></table>%2")
        .arg(cells, legend);
}

} // namespace

OverviewPage::OverviewPage(QWidget* parent)
    : QScrollArea(parent)
{
    setWidgetResizable(true);
    setFrameShape(QFrame::NoFrame);
}

QList<DiagnosisCard*> OverviewPage::cards()
{
    ensureFilled();
    return m_content ? m_content->findChildren<DiagnosisCard*>() : QList<DiagnosisCard*>();
}

void OverviewPage::setCase(AnalyzedCasePtr loaded)
{
    m_case = std::move(loaded);
    m_thumbnail = nullptr;
    m_pictureDevice = nullptr;
    m_content = new QWidget;
    m_content->setObjectName(QStringLiteral("overviewContent"));
    m_layout = new QVBoxLayout(m_content);
    m_layout->setContentsMargins(24, 18, 24, 24);
    m_layout->setSpacing(10);
    m_filled = false;
    if (m_case) {
        addGlance(*m_case);
        addMemoryPicture(*m_case);
    }
    setWidget(m_content); // deletes the previous page
    // Laying out the sections' word-wrapped rich text was half of what the GUI did between the
    // case's arrival and the timeline on screen (bench/README.md, "The app's first paint"). On
    // screen they wait for the picture's first paint: the repaint the new page asked for is a
    // low-priority posted event, and this one is posted after it.
    if (isVisible())
        QCoreApplication::postEvent(this, new QEvent(fillEvent()), Qt::LowEventPriority);
    else
        ensureFilled();
}

QEvent::Type OverviewPage::fillEvent()
{
    static const auto type = static_cast<QEvent::Type>(QEvent::registerEventType());
    return type;
}

bool OverviewPage::event(QEvent* event)
{
    if (event->type() == fillEvent()) {
        ensureFilled();
        return true;
    }
    return QScrollArea::event(event);
}

void OverviewPage::ensureFilled()
{
    if (m_filled || !m_content)
        return;
    m_filled = true;
    // The sections go into a block of their own, built off screen and shown at once when it joins
    // the page (a widget added to a page on screen would otherwise show only a loop later).
    auto* rest = new QWidget;
    rest->setObjectName(QStringLiteral("overviewSections"));
    auto* restLayout = new QVBoxLayout(rest);
    restLayout->setContentsMargins(0, 0, 0, 0);
    restLayout->setSpacing(m_layout->spacing());
    QWidget* const page = std::exchange(m_content, rest);
    QVBoxLayout* const pageLayout = std::exchange(m_layout, restLayout);
    if (m_case) {
        addDiagnoses(*m_case);
        addOomMessages(*m_case);
        addSummaries(*m_case);
        addProcesses(*m_case);
        addCard(*m_case);
        addServing(*m_case);
        addAllocatorSettings(*m_case);
        addSnapshots(*m_case);
        addInputs(*m_case);
    }
    m_content = page;
    m_layout = pageLayout;
    m_layout->addWidget(rest);
    m_layout->addStretch(1);
    rest->show();
    emit filled();
}

void OverviewPage::addHeading(const QString& text)
{
    auto* label = new QLabel(text, m_content);
    QFont font = label->font();
    font.setBold(true);
    font.setPointSizeF(font.pointSizeF() * 1.25);
    label->setFont(font);
    label->setContentsMargins(0, 12, 0, 2);
    m_layout->addWidget(label);
}

QWidget* OverviewPage::addLabel(const QString& text, bool rich)
{
    auto* label = new QLabel(m_content);
    label->setTextFormat(rich ? Qt::RichText : Qt::PlainText);
    label->setText(text);
    label->setWordWrap(true);
    label->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_layout->addWidget(label);
    return label;
}

void OverviewPage::addGlance(const AnalyzedCase& loaded)
{
    // The failure in one line, above the explanations: what was asked for and what was left.
    QStringList parts;
    QString phase;
    for (const OomMessage& message : loaded.input.text.oomMessages) {
        if (!message.requestedBytes)
            continue;
        parts << QStringLiteral("Tried to allocate <b>%1</b>").arg(bytesText(*message.requestedBytes));
        if (message.totalBytes && message.freeBytes)
            parts << QStringLiteral("%1 free of %2 on the card")
                         .arg(bytesText(*message.freeBytes), bytesText(*message.totalBytes));
        if (message.reservedBytes && message.allocatedBytes)
            parts << QStringLiteral("PyTorch held %1, %2 of it in tensors")
                         .arg(bytesText(*message.reservedBytes), bytesText(*message.allocatedBytes));
        if (message.phase != Phase::Unknown)
            phase = toQString(phaseInSentence(message.phase));
        break;
    }
    if (parts.isEmpty()) {
        for (const SnapshotAnalysis& analysis : loaded.analysis.snapshots) {
            const DeviceAnalysis* device = analysis.primary();
            if (!device || device->ooms.empty())
                continue;
            const OomAnalysis& oom = device->ooms.front();
            parts << QStringLiteral("Tried to allocate <b>%1</b>").arg(bytesText(oom.requestedBytes));
            if (oom.deviceFreeBytes)
                parts << QStringLiteral("%1 free on the card").arg(bytesText(oom.deviceFreeBytes));
            parts << QStringLiteral("PyTorch held %1, %2 of it in tensors")
                         .arg(bytesText(oom.reservedBytes), bytesText(oom.allocatedBytes));
            if (oom.phase != Phase::Unknown)
                phase = toQString(phaseInSentence(oom.phase));
            if (oom.step >= 0)
                phase
                    += (phase.isEmpty() ? QString() : QStringLiteral(" ")) + QStringLiteral("of step %1").arg(oom.step);
            break;
        }
    }
    // A snapshot another backend wrote in CUDA's format says whose memory this is.
    for (size_t i = 0; i < loaded.input.snapshots.size(); ++i) {
        if (const SnapshotBackend backend = snapshotBackendOf(loaded.input, i); backend != SnapshotBackend::Cuda) {
            parts.prepend(QStringLiteral("<b>%1</b> snapshot").arg(toQString(snapshotBackendLabel(backend))));
            break;
        }
    }
    if (parts.isEmpty())
        return;
    if (!phase.isEmpty())
        parts << QStringLiteral("failed in %1").arg(phase);
    auto* label = static_cast<QLabel*>(addLabel(parts.join(QStringLiteral(" · ")), true));
    label->setObjectName(QStringLiteral("glance"));
    QFont font = label->font();
    font.setPointSizeF(font.pointSizeF() * 1.1);
    label->setFont(font);
}

void OverviewPage::showTimeline(std::shared_ptr<const TimelineData> data)
{
    if (m_thumbnail && data && data->device() == m_pictureDevice)
        m_thumbnail->setTimeline(std::move(data));
}

void OverviewPage::addMemoryPicture(const AnalyzedCase& loaded)
{
    // The first snapshot's primary device: the one the diagnosis and the Timeline tab open on.
    const SnapshotAnalysis* analysis = nullptr;
    for (const SnapshotAnalysis& candidate : loaded.analysis.snapshots) {
        if (candidate.snapshot && candidate.primary()) {
            analysis = &candidate;
            break;
        }
    }
    if (!analysis)
        return;
    const DeviceAnalysis& device = *analysis->primary();
    m_pictureDevice = &device;
    const bool atDump = device.history.segmentsOnly();
    addHeading(atDump ? QStringLiteral("Memory at the dump") : QStringLiteral("Memory over the run"));
    if (!atDump) {
        m_thumbnail = new TimelineThumbnail(m_content);
        connect(m_thumbnail, &TimelineThumbnail::activated, this, &OverviewPage::timelineRequested);
        m_layout->addWidget(m_thumbnail);
        auto* legend = new QLabel(m_content);
        QStringList parts;
        for (size_t c = 0; c < device.categoriesAtPeak.size(); ++c) {
            if (device.categoriesAtPeak[c] > 0)
                parts << QStringLiteral("<span style='color:%1'>&#9632;</span>&nbsp;%2")
                             .arg(colors::category(Category(c)).name(), categoryText(Category(c)));
        }
        parts
            << QStringLiteral("<span style='color:%1'>&#9472;</span>&nbsp;reserved").arg(colors::reservedLine().name());
        legend->setText(QStringLiteral("<span style='color:gray'>Device %1 · </span>").arg(device.device)
            + parts.join(QStringLiteral(" &nbsp; ")));
        m_layout->addWidget(legend);
    }
    addDeviceHoldings(*analysis);
    addTopSites(*analysis->snapshot, device);
}

// One row per device of a snapshot that holds several: what each held at its own peak, as a bar
// on a scale shared by all of them (DataParallel's first device holds far more than the rest).
void OverviewPage::addDeviceHoldings(const SnapshotAnalysis& analysis)
{
    std::vector<const DeviceAnalysis*> devices;
    uint64_t largest = 0;
    for (const DeviceAnalysis& device : analysis.devices) {
        if (device.peakReservedBytes == 0 && device.peakAllocatedBytes == 0)
            continue;
        devices.push_back(&device);
        largest = std::max({ largest, device.peakReservedBytes, device.peakAllocatedBytes });
    }
    if (devices.size() < 2 || largest == 0)
        return;
    auto* box = new QWidget(m_content);
    box->setObjectName(QStringLiteral("deviceHoldings"));
    auto* grid = new QGridLayout(box);
    grid->setContentsMargins(0, 6, 0, 0);
    grid->setHorizontalSpacing(12);
    QStringList summary;
    for (const DeviceAnalysis* device : devices)
        summary << bytesText(device->peakReservedBytes);
    grid->addWidget(new QLabel(QStringLiteral("<b>%1 devices in this snapshot</b> — reserved at each one's peak: %2")
                                   .arg(devices.size())
                                   .arg(summary.join(QStringLiteral(" / "))),
                        box),
        0, 0, 1, 3);
    int row = 1;
    for (const DeviceAnalysis* device : devices) {
        // The bar: each category's share of the largest device, then the allocator's slack.
        QString cells;
        const auto cell = [&](uint64_t bytes, const QString& color) {
            const int percent = int(std::lround(100.0 * double(bytes) / double(largest)));
            if (percent > 0)
                cells += QStringLiteral("<td width='%1%' bgcolor='%2' height='14'></td>").arg(percent).arg(color);
        };
        for (Category category : TimelineWidget::stackOrder)
            cell(device->categoriesAtPeak[size_t(category)], colors::category(category).name());
        if (device->peakReservedBytes > device->peakAllocatedBytes)
            cell(device->peakReservedBytes - device->peakAllocatedBytes, colors::freeBlock().name());
        const uint64_t shown = std::max(device->peakReservedBytes, device->peakAllocatedBytes);
        const int rest = int(std::lround(100.0 * double(largest - shown) / double(largest)));
        if (rest > 0)
            cells += QStringLiteral("<td width='%1%'></td>").arg(rest);
        auto* bar = new QLabel(
            QStringLiteral("<table width='100%' cellspacing='0' cellpadding='0'><tr>%1</tr></table>").arg(cells), box);
        bar->setMinimumWidth(240);
        QString words = QStringLiteral("<b>%1</b> reserved, %2 in tensors")
                            .arg(bytesText(device->peakReservedBytes), bytesText(device->peakAllocatedBytes));
        if (!device->ooms.empty())
            words += QStringLiteral(" · <b style='color:%1'>out of memory here</b>").arg(colors::oomMarker().name());
        if (device->device == analysis.primaryDevice)
            words += QStringLiteral(" · <span style='color:gray'>shown above</span>");
        auto* label = new QLabel(words, box);
        label->setObjectName(QStringLiteral("deviceHolding"));
        label->setProperty("device", device->device);
        grid->addWidget(new QLabel(QStringLiteral("Device %1").arg(device->device), box), row, 0);
        grid->addWidget(bar, row, 1);
        grid->addWidget(label, row, 2);
        ++row;
    }
    grid->setColumnStretch(1, 2);
    grid->setColumnStretch(2, 3);
    m_layout->addWidget(box);
}

// The call sites that held the most at the peak, with their share of it.
void OverviewPage::addTopSites(const Snapshot& snapshot, const DeviceAnalysis& device)
{
    constexpr size_t shownSites = 5;
    const auto sites = topSitesAtPeak(snapshot, device, shownSites);
    if (sites.empty() || device.peakAllocatedBytes == 0)
        return;
    auto* box = new QWidget(m_content);
    box->setObjectName(QStringLiteral("topSites"));
    auto* grid = new QGridLayout(box);
    grid->setContentsMargins(0, 6, 0, 0);
    grid->setHorizontalSpacing(14);
    grid->setVerticalSpacing(2);
    const bool atDump = device.history.segmentsOnly();
    grid->addWidget(new QLabel(atDump ? QStringLiteral("<b>Where the memory at the dump was allocated</b>")
                                      : QStringLiteral("<b>Where the memory at the peak was allocated</b>"),
                        box),
        0, 0, 1, 3);
    int row = 1;
    for (const auto& [site, bytes] : sites) {
        auto* value = new QLabel(QStringLiteral("<b>%1</b>").arg(bytesText(bytes)), box);
        value->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
        auto* share = new QLabel(QStringLiteral("<span style='color:gray'>%1%</span>")
                                     .arg(100.0 * double(bytes) / double(device.peakAllocatedBytes), 0, 'f', 0),
            box);
        share->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
        auto* where = new QLabel(box);
        where->setTextFormat(Qt::PlainText); // the snapshot's file and function names, as written
        where->setText(toQString(site));
        where->setObjectName(QStringLiteral("topSite"));
        where->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
        where->setTextInteractionFlags(Qt::TextSelectableByMouse);
        grid->addWidget(value, row, 0);
        grid->addWidget(share, row, 1);
        grid->addWidget(where, row, 2);
        ++row;
    }
    grid->setColumnStretch(2, 1);
    m_layout->addWidget(box);
}

void OverviewPage::addDiagnoses(const AnalyzedCase& loaded)
{
    addHeading(QStringLiteral("Diagnosis"));
    const auto& diagnoses = loaded.analysis.diagnoses;
    if (diagnoses.empty()) {
        addLabel(noDiagnosisText(loaded));
        return;
    }
    for (size_t i = 0; i < diagnoses.size(); ++i) {
        auto* card = new DiagnosisCard(diagnoses[i], int(i), m_content);
        connect(card, &DiagnosisCard::evidenceActivated, this, &OverviewPage::evidenceActivated);
        m_layout->addWidget(card);
    }
}

void OverviewPage::addOomMessages(const AnalyzedCase& loaded)
{
    const auto& messages = loaded.input.text.oomMessages;
    if (messages.empty())
        return;
    addHeading(messages.size() == 1 ? QStringLiteral("The out-of-memory message")
                                    : QStringLiteral("Out-of-memory messages (%1)").arg(messages.size()));
    for (const OomMessage& message : messages) {
        addMessageTitle(message);
        auto* text = new QLabel(toQString(message.text), m_content);
        text->setWordWrap(true);
        text->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
        text->setTextInteractionFlags(Qt::TextSelectableByMouse);
        text->setStyleSheet(QStringLiteral("QLabel { padding: 8px; border-left: 3px solid palette(mid); }"));
        m_layout->addWidget(text);
        addMessageNumbers(message);
        // The reading ends with the parser's notes: the report shows the same lines.
        QStringList lines;
        for (const std::string& line : explainOomMessage(message))
            lines << QStringLiteral("• ") + toQString(line).toHtmlEscaped();
        if (!lines.isEmpty())
            addLabel(lines.join(QStringLiteral("<br>")), true);
        if (message.traceback && !message.traceback->frames.empty())
            addMessageTraceback(*message.traceback);
    }
}

// What raised it, on which device, and what the parser knows of the message.
void OverviewPage::addMessageTitle(const OomMessage& message)
{
    QString title = message.exception.empty()
        ? toQString(backendName(message.backend)).toUpper() + QStringLiteral(" out of memory")
        : toQString(message.exception);
    if (message.device)
        title += QStringLiteral(" on device %1").arg(*message.device);
    QStringList facts;
    if (message.templateId != OomTemplate::None)
        facts << QStringLiteral("message format %1").arg(toQString(oomTemplateName(message.templateId)));
    if (!message.torchVersionHint.empty())
        facts << QStringLiteral("PyTorch %1").arg(toQString(message.torchVersionHint));
    if (message.phase != Phase::Unknown)
        facts << QStringLiteral("during %1").arg(toQString(phaseInSentence(message.phase)));
    if (message.truncated)
        facts << QStringLiteral("truncated");
    if (message.probable)
        facts << QStringLiteral("probable OOM (indirect error)");
    addLabel(QStringLiteral("<b>%1</b><br><span style='color:gray'>%2</span>")
                 .arg(title.toHtmlEscaped(), facts.join(QStringLiteral(" · ")).toHtmlEscaped()),
        true);
}

// Each number the message prints, with what it means (the processes have their own table).
void OverviewPage::addMessageNumbers(const OomMessage& message)
{
    auto* grid = new QGridLayout;
    grid->setHorizontalSpacing(16);
    grid->setVerticalSpacing(3);
    int row = 0;
    for (const ExplainedNumber& number : explainMessageNumbers(message)) {
        if (number.kind != ExplainedNumber::Kind::Printed)
            continue;
        auto* value = new QLabel(QStringLiteral("<b>%1</b>").arg(toQString(number.value)), m_content);
        value->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
        grid->addWidget(new QLabel(toQString(number.label), m_content), row, 0);
        grid->addWidget(value, row, 1);
        grid->addWidget(
            new QLabel(QStringLiteral("<span style='color:gray'>%1</span>").arg(toQString(number.meaning)), m_content),
            row, 2);
        ++row;
    }
    grid->setColumnStretch(2, 1);
    m_layout->addLayout(grid);
}

// The last frames of the traceback that came with the message.
void OverviewPage::addMessageTraceback(const TracebackInfo& traceback)
{
    QStringList frames;
    const size_t first = traceback.frames.size() > 6 ? traceback.frames.size() - 6 : 0;
    for (size_t i = first; i < traceback.frames.size(); ++i) {
        const TracebackFrame& frame = traceback.frames[i];
        frames << QStringLiteral("%1:%2 in %3")
                      .arg(toQString(frame.filename))
                      .arg(frame.line)
                      .arg(toQString(frame.function));
    }
    QString header = QStringLiteral("Where it failed (last %1 frames)").arg(frames.size());
    if (!traceback.phaseEvidence.empty())
        header += QStringLiteral(" — phase from ") + toQString(traceback.phaseEvidence);
    addLabel(header);
    auto* stack = new QLabel(frames.join(QLatin1Char('\n')), m_content);
    stack->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    stack->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_layout->addWidget(stack);
}

void OverviewPage::addSummaries(const AnalyzedCase& loaded)
{
    for (const MemorySummary& summary : loaded.input.text.summaries) {
        addHeading(QStringLiteral("memory_summary() of device %1").arg(summary.device));
        QStringList facts;
        if (summary.ooms)
            facts << (*summary.ooms == 1 ? QStringLiteral("1 OOM") : QStringLiteral("%1 OOMs").arg(*summary.ooms));
        if (summary.allocRetries)
            facts << (*summary.allocRetries == 1 ? QStringLiteral("1 cudaMalloc retry")
                                                 : QStringLiteral("%1 cudaMalloc retries").arg(*summary.allocRetries));
        if (!summary.unitEra.empty())
            facts << QStringLiteral("%1 units").arg(toQString(summary.unitEra));
        if (summary.allZero)
            facts << QStringLiteral("all zero: cudaMallocAsync does not fill these counters");
        if (!facts.isEmpty())
            addLabel(facts.join(QStringLiteral(" · ")));
        auto* model = new SummaryModel;
        model->setSummary(summary);
        m_layout->addWidget(makeTable(model, m_content, true), 0, Qt::AlignLeft);
        QStringList lines;
        for (const std::string& line : explainSummary(summary))
            lines << QStringLiteral("• ") + toQString(line).toHtmlEscaped();
        if (!lines.isEmpty())
            addLabel(lines.join(QStringLiteral("<br>")), true);
    }
}

void OverviewPage::addProcesses(const AnalyzedCase& loaded)
{
    auto* model = new ProcessesModel;
    model->setFindings(loaded.input.text);
    if (model->rowCount() == 0) {
        delete model;
        return;
    }
    addHeading(QStringLiteral("Processes on the GPU"));
    m_layout->addWidget(makeTable(model, m_content));
    for (const NvidiaSmiTable& table : loaded.input.text.nvidiaSmi) {
        QStringList lines;
        for (const std::string& line : explainNvidiaSmi(table))
            lines << QStringLiteral("• ") + toQString(line).toHtmlEscaped();
        if (!lines.isEmpty())
            addLabel(lines.join(QStringLiteral("<br>")), true);
    }
}

void OverviewPage::addCard(const AnalyzedCase& loaded)
{
    const CardReconciliation& card = loaded.analysis.card;
    if (!card.available())
        return;
    addHeading(QStringLiteral("The card's memory: allocator, process, card (device %1)").arg(card.device));
    auto* section = new QWidget(m_content);
    section->setObjectName(QStringLiteral("cardReconciliation"));
    auto* layout = new QVBoxLayout(section);
    layout->setContentsMargins(0, 0, 0, 0);
    const QString bar = cardBarHtml(card);
    if (!bar.isEmpty()) {
        auto* label = new QLabel(bar, section);
        label->setObjectName(QStringLiteral("cardBar"));
        label->setTextFormat(Qt::RichText);
        label->setWordWrap(true);
        layout->addWidget(label);
    }
    // One row per figure: the view it belongs to (on its first row), the figure, where it comes from.
    auto* grid = new QGridLayout;
    grid->setHorizontalSpacing(16);
    grid->setVerticalSpacing(3);
    int row = 0;
    std::optional<CardFigure::View> view;
    for (const CardFigure& figure : card.figures) {
        if (figure.view != view) {
            view = figure.view;
            auto* title = new QLabel(QStringLiteral("<b>%1</b>").arg(toQString(cardViewLabel(figure.view))), section);
            grid->addWidget(title, row++, 0, 1, 4);
        }
        auto* value = new QLabel(
            QStringLiteral("<b>%1</b>").arg(figure.bytes ? bytesText(*figure.bytes) : QStringLiteral("not given")),
            section);
        value->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
        value->setProperty("figure", toQString(figure.key));
        grid->addWidget(new QLabel(toQString(figure.label), section), row, 0);
        grid->addWidget(value, row, 1);
        grid->addWidget(
            new QLabel(
                QStringLiteral("<span style='color:gray'>%1</span>").arg(toQString(figure.source).toHtmlEscaped()),
                section),
            row, 2);
        auto* meaning = new QLabel(
            QStringLiteral("<span style='color:gray'>%1</span>").arg(toQString(figure.meaning).toHtmlEscaped()),
            section);
        meaning->setWordWrap(true);
        grid->addWidget(meaning, row, 3);
        ++row;
    }
    grid->setColumnStretch(3, 1);
    layout->addLayout(grid);
    addOomChecks(card, section, layout);
    QStringList lines;
    for (const std::string& note : card.notes)
        lines << QStringLiteral("• ") + toQString(note).toHtmlEscaped();
    if (card.restMatters) {
        lines << QStringLiteral("<b>The rest of the card is usually:</b>");
        for (const RestOfCardPart& part : card.parts)
            lines << QStringLiteral("• <b>%1</b>: %2. <span style='color:gray'>Check: %3.</span>")
                         .arg(toQString(part.name).toHtmlEscaped(), toQString(part.typicalSize).toHtmlEscaped(),
                             toQString(part.whatToCheck).toHtmlEscaped());
    }
    if (!lines.isEmpty()) {
        auto* notes = new QLabel(lines.join(QStringLiteral("<br>")), section);
        notes->setObjectName(QStringLiteral("cardNotes"));
        notes->setTextFormat(Qt::RichText);
        notes->setWordWrap(true);
        notes->setTextInteractionFlags(Qt::TextSelectableByMouse);
        layout->addWidget(notes);
    }
    m_layout->addWidget(section);
}

// The OOM message's figures beside the snapshot's at its oom event: a row each, with the two
// numbers and whether they tell the same moment.
// The inference engine's budget as it split the card, and the settings it printed: the same rows
// as the text output and the report (core/serving/servingview.h).
void OverviewPage::addServing(const AnalyzedCase& loaded)
{
    if (!loaded.analysis.serving)
        return;
    const ServingView& view = *loaded.analysis.serving;
    addHeading(QStringLiteral("The inference engine's budget: %1").arg(toQString(view.engineText()).toHtmlEscaped()));
    QString html = toQString(servingWorkloadLine(view)).toHtmlEscaped() + QStringLiteral("<table>");
    for (const ServingBudgetRow& row : view.rows) {
        html += QStringLiteral("<tr><td>%1</td><td align='right'><b>%2</b></td><td style='color:gray'>%3</td></tr>")
                    .arg(toQString(row.label).toHtmlEscaped(), toQString(signedBytesText(row.bytes)).toHtmlEscaped(),
                        toQString(row.source).toHtmlEscaped());
    }
    html += QStringLiteral("</table>");
    QStringList settings;
    for (const ServingSetting& setting : view.run.settings) {
        if (view.run.setting(setting.key) == &setting)
            settings << toQString(
                setting.key + " " + settingText(setting.value) + " (line " + std::to_string(setting.source.line) + ")")
                            .toHtmlEscaped();
    }
    if (!settings.isEmpty())
        html += QStringLiteral("Settings seen: ") + settings.join(QStringLiteral(", "));
    addLabel(html, true)->setObjectName(QStringLiteral("servingBudget"));
}

void OverviewPage::addOomChecks(const CardReconciliation& card, QWidget* section, QVBoxLayout* layout)
{
    if (card.oomChecks.empty())
        return;
    auto* box = new QWidget(section);
    box->setObjectName(QStringLiteral("oomFigureChecks"));
    auto* grid = new QGridLayout(box);
    grid->setContentsMargins(0, 8, 0, 0);
    grid->setHorizontalSpacing(16);
    grid->setVerticalSpacing(3);
    grid->addWidget(
        new QLabel(
            QStringLiteral("<b>The OOM message against the snapshot at its oom event (#%1)</b>").arg(card.oomEvent),
            box),
        0, 0, 1, 4);
    grid->addWidget(new QLabel(QStringLiteral("<span style='color:gray'>Message</span>"), box), 1, 1);
    grid->addWidget(new QLabel(QStringLiteral("<span style='color:gray'>Snapshot</span>"), box), 1, 2);
    int row = 2;
    for (const OomFigureCheck& check : card.oomChecks) {
        const auto number = [&](uint64_t bytes, const char* side) {
            auto* label = new QLabel(QStringLiteral("<b>%1</b>").arg(bytesText(bytes)), box);
            label->setAlignment(Qt::AlignRight | Qt::AlignVCenter);
            label->setProperty("check", toQString(check.key));
            label->setProperty("side", QString::fromLatin1(side));
            return label;
        };
        grid->addWidget(new QLabel(toQString(check.label), box), row, 0);
        grid->addWidget(number(check.messageBytes, "message"), row, 1);
        grid->addWidget(number(check.snapshotBytes, "snapshot"), row, 2);
        auto* verdict = new QLabel(check.agrees ? QStringLiteral("<span style='color:gray'>agree</span>")
                                                : QStringLiteral("<b style='color:#b35900'>differ: not the same "
                                                                 "moment</b>"),
            box);
        verdict->setProperty("check", toQString(check.key));
        verdict->setProperty("agrees", check.agrees);
        grid->addWidget(verdict, row, 3);
        ++row;
    }
    grid->setColumnStretch(3, 1);
    layout->addWidget(box);
}

void OverviewPage::addAllocatorSettings(const AnalyzedCase& loaded)
{
    QStringList lines;
    for (const AllocConfSetting& setting : loaded.input.text.allocConfs)
        lines << QStringLiteral("<code>%1</code> <span style='color:gray'>(%2)</span>")
                     .arg(toQString(setting.raw).toHtmlEscaped(), toQString(setting.source).toHtmlEscaped());
    for (const auto& snapshot : loaded.input.snapshots) {
        if (snapshot && snapshot->allocatorSettings) {
            const AllocatorSettings& settings = *snapshot->allocatorSettings;
            lines << QStringLiteral("<code>%1</code> <span style='color:gray'>(recorded in the snapshot)</span>")
                         .arg(settings.allocConf.empty() ? QStringLiteral("PYTORCH_CUDA_ALLOC_CONF unset")
                                                         : toQString(settings.allocConf).toHtmlEscaped());
        }
    }
    if (lines.isEmpty())
        return;
    addHeading(QStringLiteral("Allocator settings"));
    addLabel(lines.join(QStringLiteral("<br>")), true);
}

void OverviewPage::addSnapshots(const AnalyzedCase& loaded)
{
    if (loaded.analysis.snapshots.empty())
        return;
    addHeading(QStringLiteral("Memory snapshots"));
    for (size_t i = 0; i < loaded.analysis.snapshots.size(); ++i) {
        const SnapshotAnalysis& analysis = loaded.analysis.snapshots[i];
        if (!analysis.snapshot)
            continue;
        const Snapshot& snapshot = *analysis.snapshot;
        QString path;
        for (const CaseInput& input : loaded.input.inputs) {
            if (input.snapshotIndex == int(i))
                path = toQString(input.path);
        }
        QStringList devices;
        for (int32_t device : snapshot.devices())
            devices << QString::number(device);
        QString text = QStringLiteral("<b>%1</b><br>%2 · %3 segments · %4 trace events · %5 %6")
                           .arg(path.toHtmlEscaped(), toQString(snapshot.container).toHtmlEscaped())
                           .arg(snapshot.segments.size())
                           .arg(snapshot.totalTraceEvents())
                           .arg(devices.size() == 1 ? QStringLiteral("device") : QStringLiteral("devices"),
                               devices.join(QStringLiteral(", ")));
        if (const DeviceAnalysis* device = analysis.primary()) {
            const bool atDump = device->history.segmentsOnly();
            text += (atDump ? QStringLiteral("<br>Device %1 at the dump: %2 allocated, %3 reserved")
                            : QStringLiteral("<br>Device %1: peak %2 allocated, %3 reserved"))
                        .arg(device->device)
                        .arg(bytesText(device->peakAllocatedBytes), bytesText(device->peakReservedBytes));
            // What filled the card at its fullest: the first question about a snapshot, OOM or not.
            QStringList parts;
            for (size_t c = 0; c < device->categoriesAtPeak.size(); ++c) {
                const uint64_t bytes = device->categoriesAtPeak[c];
                if (bytes == 0 || device->peakAllocatedBytes == 0)
                    continue;
                parts << QStringLiteral("<span style='color:%1'>&#9632;</span>&nbsp;%2&nbsp;<b>%3</b>&nbsp;(%4%)")
                             .arg(colors::category(Category(c)).name(), categoryText(Category(c)), bytesText(bytes))
                             .arg(100.0 * double(bytes) / double(device->peakAllocatedBytes), 0, 'f', 0);
            }
            if (!parts.isEmpty())
                text += (atDump ? QStringLiteral("<br>At the dump: ") : QStringLiteral("<br>At the peak: "))
                    + parts.join(QStringLiteral(" · "));
            if (!device->ooms.empty())
                text += QStringLiteral(", <b>%1 OOM event(s)</b>").arg(device->ooms.size());
        }
        for (const std::string& warning : snapshot.warnings)
            text += QStringLiteral("<br><i>%1</i>").arg(toQString(warning).toHtmlEscaped());
        addLabel(text, true);
        if (const DeviceAnalysis* device = analysis.primary())
            addHistory(snapshot, *device);
    }
}

void OverviewPage::addHistory(const Snapshot& snapshot, const DeviceAnalysis& device)
{
    const TraceHistory& history = device.history;
    if (!history.truncated() && !history.segmentsOnly())
        return;
    QStringList lines;
    lines << (history.segmentsOnly() ? QStringLiteral("<b>No allocation history</b>")
                                     : QStringLiteral("<b>Truncated history</b>"));
    for (const std::string& line : historyStatement(snapshot, history))
        lines << toQString(line).toHtmlEscaped();
    lines << QStringLiteral("<i>%1</i>").arg(toQString(historyAdvice(history)).toHtmlEscaped());
    auto* label = static_cast<QLabel*>(addLabel(lines.join(QStringLiteral("<br>")), true));
    label->setObjectName(QStringLiteral("traceHistory"));
    label->setStyleSheet(QStringLiteral("QLabel { padding: 6px; border-left: 3px solid palette(mid); }"));
}

void OverviewPage::addInputs(const AnalyzedCase& loaded)
{
    addHeading(QStringLiteral("Inputs"));
    auto* model = new InputsModel;
    model->setInputs(loaded.input.inputs);
    m_layout->addWidget(makeTable(model, m_content));
}

} // namespace oomlens
