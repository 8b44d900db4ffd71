#include "views/jobview.h"

#include "core/job/jobassembly.h"
#include "core/job/jobtext.h"
#include "core/units.h"
#include "views/categorycolors.h"
#include "views/jobbars.h"
#include "views/viewutil.h"

#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QListWidget>
#include <QProgressBar>
#include <QPushButton>
#include <QSplitter>
#include <QTableWidget>
#include <QVBoxLayout>

namespace oomlens {

namespace {

QTableWidgetItem* cell(const QString& text, const QVariant& sortValue = {})
{
    auto* item = new QTableWidgetItem(text);
    item->setFlags(Qt::ItemIsSelectable | Qt::ItemIsEnabled);
    if (sortValue.isValid())
        item->setData(Qt::UserRole, sortValue);
    return item;
}

QString imbalanceText(const JobSummary& job)
{
    return QStringLiteral("Imbalance %1 (max %2 / median %3 of peak allocated)")
        .arg(toQString(formatRatio(job.imbalance)), bytesText(job.maxPeakBytes), bytesText(job.medianPeakBytes));
}

// The failing rank's row stands out: bold, shaded, its sentence as the tooltip.
void markFailingRow(QTableWidget* table, int row, const JobSummary& summary)
{
    QColor failingShade = colors::oomMarker();
    failingShade.setAlpha(50);
    for (int column = 0; column < JobView::ColumnCount; ++column) {
        QTableWidgetItem* item = table->item(row, column);
        QFont font = item->font();
        font.setBold(true);
        item->setFont(font);
        item->setBackground(failingShade);
        item->setToolTip(toQString(failingRankSentence(summary)));
    }
    if (summary.failingIsClosestOnly())
        table->item(row, JobView::OomColumn)->setText(QStringLiteral("no (closest)"));
}

} // namespace

JobView::JobView(QWidget* parent)
    : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    layout->addWidget(makeBusyRow());
    makeHeadline(layout);

    auto* split = new QSplitter(Qt::Vertical, this);
    m_bars = new JobBars(split);
    split->addWidget(m_bars);
    auto* lower = new QSplitter(Qt::Horizontal, split);
    lower->addWidget(makeRanksPane(lower));
    lower->addWidget(makeSidePane(lower));
    lower->setStretchFactor(0, 3);
    lower->setStretchFactor(1, 2);
    split->addWidget(lower);
    split->setStretchFactor(0, 3);
    split->setStretchFactor(1, 2);
    layout->addWidget(split, 1);

    connectRanks();
    connect(
        &m_jobs, &JobTracker::progressChanged, this, [this](int, int done, int total) { showProgress(done, total); });
    m_busyRow->hide();
}

QWidget* JobView::makeBusyRow()
{
    m_busyRow = new QWidget(this);
    auto* busyLayout = new QHBoxLayout(m_busyRow);
    busyLayout->setContentsMargins(0, 0, 0, 0);
    m_progressText = new QLabel(m_busyRow);
    m_progress = new QProgressBar(m_busyRow);
    m_progress->setObjectName(QStringLiteral("jobProgress"));
    m_progress->setTextVisible(false);
    m_progress->setMaximumWidth(260);
    auto* cancelButton = new QPushButton(QStringLiteral("Cancel"), m_busyRow);
    cancelButton->setObjectName(QStringLiteral("jobCancel"));
    busyLayout->addWidget(m_progressText);
    busyLayout->addWidget(m_progress);
    busyLayout->addWidget(cancelButton);
    busyLayout->addStretch(1);
    connect(cancelButton, &QPushButton::clicked, this, &JobView::cancel);
    return m_busyRow;
}

void JobView::makeHeadline(QLayout* layout)
{
    m_headline = new QLabel(this);
    m_headline->setObjectName(QStringLiteral("jobHeadline"));
    m_headline->setWordWrap(true);
    m_headline->setTextInteractionFlags(Qt::TextSelectableByMouse);
    QFont big = m_headline->font();
    big.setBold(true);
    big.setPointSizeF(big.pointSizeF() * 1.15);
    m_headline->setFont(big);
    layout->addWidget(m_headline);
    m_figures = new QLabel(this);
    m_figures->setObjectName(QStringLiteral("jobFigures"));
    m_figures->setWordWrap(true);
    m_figures->setTextInteractionFlags(Qt::TextSelectableByMouse);
    layout->addWidget(m_figures);
}

QWidget* JobView::makeRanksPane(QWidget* parent)
{
    auto* tablePane = new QWidget(parent);
    auto* tableLayout = new QVBoxLayout(tablePane);
    tableLayout->setContentsMargins(0, 0, 0, 0);
    m_table = new QTableWidget(0, ColumnCount, tablePane);
    m_table->setObjectName(QStringLiteral("jobRanks"));
    m_table->setHorizontalHeaderLabels({ QStringLiteral("Rank"), QStringLiteral("File"),
        QStringLiteral("Peak allocated"), QStringLiteral("Peak reserved"), QStringLiteral("Of the card"),
        QStringLiteral("OOM"), QStringLiteral("Group"), QStringLiteral("Most likely cause on its own") });
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_table->verticalHeader()->hide();
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->setToolTip(QStringLiteral("Double-click a rank to open its snapshot as a case"));
    tableLayout->addWidget(m_table, 1);
    auto* buttons = new QHBoxLayout;
    m_open = new QPushButton(QStringLiteral("Open Rank as a Case"), tablePane);
    m_open->setObjectName(QStringLiteral("openRank"));
    m_open->setToolTip(QStringLiteral("The selected rank's timeline, allocations and diagnosis in a tab of its own"));
    m_open->setEnabled(false);
    buttons->addWidget(m_open);
    buttons->addStretch(1);
    tableLayout->addLayout(buttons);
    return tablePane;
}

QWidget* JobView::makeSidePane(QWidget* parent)
{
    auto* side = new QWidget(parent);
    auto* sideLayout = new QVBoxLayout(side);
    sideLayout->setContentsMargins(0, 0, 0, 0);
    sideLayout->addWidget(new QLabel(QStringLiteral("<b>Ranks that look alike</b>"), side));
    m_groups = new QListWidget(side);
    m_groups->setObjectName(QStringLiteral("jobGroups"));
    m_groups->setWordWrap(true);
    sideLayout->addWidget(m_groups, 1);
    sideLayout->addWidget(new QLabel(QStringLiteral("<b>Notes</b>"), side));
    m_notes = new QListWidget(side);
    m_notes->setObjectName(QStringLiteral("jobNotes"));
    m_notes->setWordWrap(true);
    sideLayout->addWidget(m_notes, 1);
    return side;
}

void JobView::connectRanks()
{
    connect(m_table, &QTableWidget::itemSelectionChanged, this, [this] {
        const int rank = selectedRank();
        m_open->setEnabled(rank >= 0 && m_summary.ranks[size_t(rank)].readable());
    });
    connect(m_table, &QTableWidget::cellDoubleClicked, this, [this](int row, int) { openRank(row); });
    connect(m_open, &QPushButton::clicked, this, [this] { openRank(selectedRank()); });
    connect(m_bars, &JobBars::rankClicked, this, &JobView::selectRank);
    connect(m_bars, &JobBars::rankDoubleClicked, this, &JobView::openRank);
}

void JobView::start(const QStringList& rankFiles, const AnalysisOptions& options, const QStringList& beside)
{
    m_files = rankFiles;
    m_busy = true;
    m_cancelled = false;
    m_headline->setText(QStringLiteral("Summarizing %1 rank files…").arg(rankFiles.size()));
    m_figures->clear();
    m_progress->setRange(0, int(rankFiles.size()));
    m_progress->setValue(0);
    m_progressText->setText(QStringLiteral("0 of %1 ranks").arg(rankFiles.size()));
    m_busyRow->show();

    std::vector<LoadRequest> besideRequests;
    for (const QString& path : beside)
        besideRequests.push_back(LoadRequest::file(path.toStdString()));
    // The summarizer counts its ranks from its own worker threads.
    auto work = [rankFiles = toStdStrings(rankFiles), besideRequests, options](const JobContext& job) {
        OpenOptions openOptions;
        openOptions.analysis = options;
        openOptions.cancel = &job.cancelFlag();
        openOptions.rankProgress = [&job](size_t done, size_t total) { job.progress(int(done), int(total)); };
        return openJob(rankFiles, besideRequests, openOptions);
    };
    // A job started again replaces the one still summarizing: its result is dropped.
    m_jobs.replace(std::move(work), [this](Opened job, const JobEnd& end) { summarized(job, end.cancelled); });
}

void JobView::showProgress(int done, int total)
{
    m_progress->setValue(done);
    m_progressText->setText(QStringLiteral("%1 of %2 ranks").arg(done).arg(total));
    emit progressChanged(done, total);
}

void JobView::summarized(const Opened& job, bool cancelled)
{
    m_busy = false;
    m_busyRow->hide();
    m_cancelled = job.cancelled || cancelled;
    if (m_cancelled)
        m_headline->setText(QStringLiteral("Cancelled: the job was not summarized."));
    else
        showJob(job);
    emit finished();
}

void JobView::cancel()
{
    if (m_busy) {
        m_jobs.cancelAll();
        m_progressText->setText(QStringLiteral("Cancelling…"));
    }
}

QString JobView::headline() const
{
    return m_headline->text();
}

void JobView::showJob(const Opened& job)
{
    m_summary = job.job.value_or(JobSummary {});
    m_failingCase = m_summary.failing() ? job.loaded : nullptr;
    m_failingSnapshot = job.failingSnapshot;
    m_failures = job.failures;
    QString headline = toQString(failingRankSentence(m_summary));
    // The sentence names the file as given; the table beside it has the full path.
    if (const RankSummary* failing = m_summary.failing())
        headline.replace(
            QString::fromStdString(failing->file), QFileInfo(QString::fromStdString(failing->file)).fileName());
    if (m_summary.failingIsClosestOnly())
        headline = QStringLiteral("No rank ran out of memory. Closest: ") + headline;
    m_headline->setText(headline);
    m_bars->setJob(m_summary);
    showFigures();
    showGroupsAndNotes();
    fillTable();
    if (m_summary.failingRank)
        selectRank(int(*m_summary.failingRank));
}

void JobView::showFigures()
{
    const JobSummary& summary = m_summary;
    QStringList figures;
    figures << QStringLiteral("%1 ranks").arg(summary.ranks.size());
    figures << QStringLiteral("%1 ran out of memory").arg(summary.oomRanks);
    figures << imbalanceText(summary);
    if (const uint64_t capacity = m_bars->capacityShown(); capacity > 0)
        figures << QStringLiteral("card %1").arg(bytesText(capacity));
    if (summary.fromSummaries > 0)
        figures << QStringLiteral("%1 read from summaries").arg(summary.fromSummaries);
    if (summary.workers > 0)
        figures << QStringLiteral("summarized by %1 worker threads").arg(summary.workers);
    m_figures->setText(figures.join(QStringLiteral(" · ")));
}

void JobView::showGroupsAndNotes()
{
    const JobSummary& summary = m_summary;
    m_groups->clear();
    for (const RankGroup& group : summary.groups) {
        const QString range = group.minPeakBytes == group.maxPeakBytes
            ? bytesText(group.maxPeakBytes)
            : QStringLiteral("%1–%2").arg(bytesText(group.minPeakBytes), bytesText(group.maxPeakBytes));
        m_groups->addItem(QStringLiteral("%1: peak %2, mostly %3")
                              .arg(toQString(group.label), range, categoryText(group.dominantCategory).toLower()));
    }
    m_notes->clear();
    for (const std::string& note : summary.notes)
        m_notes->addItem(toQString(note));
    for (const RankSummary& rank : summary.ranks) {
        for (const std::string& note : rank.notes)
            m_notes->addItem(QStringLiteral("%1: %2").arg(toQString(rankName(rank)), toQString(note)));
    }
    if (m_notes->count() == 0)
        m_notes->addItem(QStringLiteral("(none)"));
}

void JobView::fillTable()
{
    m_table->setRowCount(int(m_summary.ranks.size()));
    for (size_t i = 0; i < m_summary.ranks.size(); ++i)
        fillRank(int(i));
    m_table->resizeColumnsToContents();
}

void JobView::fillRank(int row)
{
    const JobSummary& summary = m_summary;
    const RankSummary& rank = summary.ranks[size_t(row)];
    const bool failing = summary.failingRank == size_t(row);
    m_table->setItem(row, RankColumn, cell(toQString(rankName(rank)), rank.rank));
    m_table->setItem(row, FileColumn, cell(QFileInfo(QString::fromStdString(rank.file)).fileName()));
    m_table->item(row, FileColumn)->setToolTip(QString::fromStdString(rank.file));
    if (!rank.readable()) {
        m_table->setItem(row, PeakColumn, cell(QStringLiteral("unreadable: %1").arg(toQString(rank.error))));
        for (int column = ReservedColumn; column < ColumnCount; ++column)
            m_table->setItem(row, column, cell(QString()));
        return;
    }
    m_table->setItem(row, PeakColumn, cell(bytesText(rank.peakAllocatedBytes), qulonglong(rank.peakAllocatedBytes)));
    m_table->setItem(row, ReservedColumn, cell(bytesText(rank.peakReservedBytes), qulonglong(rank.peakReservedBytes)));
    const auto use = rank.capacityUse();
    m_table->setItem(row, CardColumn, cell(use ? QStringLiteral("%1%").arg(*use * 100, 0, 'f', 0) : QString()));
    m_table->setItem(
        row, OomColumn, cell(rank.oom ? (failing ? QStringLiteral("yes, first") : QStringLiteral("yes")) : QString()));
    const QString group = rank.group >= 0 && size_t(rank.group) < summary.groups.size()
        ? toQString(summary.groups[size_t(rank.group)].label)
        : QString();
    m_table->setItem(row, GroupColumn, cell(group));
    m_table->setItem(row, DiagnosisColumn, cell(toQString(rank.topDiagnosisTitle)));
    if (failing)
        markFailingRow(m_table, row, summary);
}

int JobView::selectedRank() const
{
    const QList<QTableWidgetItem*> selected = m_table->selectedItems();
    return selected.isEmpty() ? -1 : selected.front()->row();
}

void JobView::selectRank(int rankIndex)
{
    if (rankIndex < 0 || rankIndex >= m_table->rowCount())
        return;
    m_table->selectRow(rankIndex);
    m_table->scrollToItem(m_table->item(rankIndex, 0));
}

void JobView::openRank(int rankIndex)
{
    if (rankIndex < 0 || size_t(rankIndex) >= m_summary.ranks.size())
        return;
    const RankSummary& rank = m_summary.ranks[size_t(rankIndex)];
    if (!rank.readable())
        return;
    const bool failing = m_summary.failingRank && *m_summary.failingRank == size_t(rankIndex);
    emit openRankRequested(
        QString::fromStdString(failing && !m_failingSnapshot.empty() ? m_failingSnapshot : rank.file));
}

} // namespace oomlens
