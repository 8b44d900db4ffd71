#include "views/compareview.h"

#include "views/categorycolors.h"
#include "views/compareoverlay.h"
#include "views/comparesitesmodel.h"
#include "views/timelinewidget.h"
#include "views/viewutil.h"

#include <QCheckBox>
#include <QComboBox>
#include <QDialog>
#include <QDialogButtonBox>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QSpinBox>
#include <QSplitter>
#include <QStackedWidget>
#include <QTabWidget>
#include <QTableView>
#include <QTableWidget>
#include <QTimer>
#include <QVBoxLayout>
#include <QtConcurrent/QtConcurrentRun>

#include <cstdlib>

namespace oomlens {

namespace {

QString momentText(const ComparedMoment& moment)
{
    QString where = phaseText(moment.phase).toLower();
    if (moment.step >= 0)
        where += QStringLiteral(" of step %1").arg(moment.step);
    return QStringLiteral("%1 allocated, in the %2").arg(bytesText(moment.allocatedBytes), where);
}

QTableWidgetItem* cell(const QString& text, Qt::Alignment alignment = Qt::AlignRight | Qt::AlignVCenter)
{
    auto* item = new QTableWidgetItem(text);
    item->setFlags(Qt::ItemIsSelectable | Qt::ItemIsEnabled);
    item->setTextAlignment(alignment);
    return item;
}

QSpinBox* stepBox(QWidget* parent, const char* name)
{
    auto* box = new QSpinBox(parent);
    box->setObjectName(QString::fromLatin1(name));
    box->setRange(0, 0);
    return box;
}

} // namespace

CompareView::CompareView(QWidget* parent)
    : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);

    auto* controls = new QHBoxLayout;
    m_mode = new QComboBox(this);
    m_mode->setObjectName(QStringLiteral("compareMode"));
    m_mode->addItems({ QStringLiteral("Two snapshots"), QStringLiteral("Two step windows of one run") });
    controls->addWidget(m_mode);

    m_pickers = new QStackedWidget(this);
    auto* snapshotsPage = new QWidget(m_pickers);
    auto* snapshotsLayout = new QHBoxLayout(snapshotsPage);
    snapshotsLayout->setContentsMargins(0, 0, 0, 0);
    m_pickA = new QComboBox(snapshotsPage);
    m_pickA->setObjectName(QStringLiteral("pickA"));
    m_pickB = new QComboBox(snapshotsPage);
    m_pickB->setObjectName(QStringLiteral("pickB"));
    for (QComboBox* box : { m_pickA, m_pickB })
        box->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    auto* swap = new QPushButton(QStringLiteral("⇄"), snapshotsPage);
    swap->setToolTip(QStringLiteral("Swap A and B"));
    swap->setMaximumWidth(36);
    snapshotsLayout->addWidget(new QLabel(QStringLiteral("A (before):"), snapshotsPage));
    snapshotsLayout->addWidget(m_pickA);
    snapshotsLayout->addWidget(swap);
    snapshotsLayout->addWidget(new QLabel(QStringLiteral("B (after):"), snapshotsPage));
    snapshotsLayout->addWidget(m_pickB);
    snapshotsLayout->addStretch(1);
    m_pickers->addWidget(snapshotsPage);

    auto* windowsPage = new QWidget(m_pickers);
    auto* windowsLayout = new QHBoxLayout(windowsPage);
    windowsLayout->setContentsMargins(0, 0, 0, 0);
    m_pickRun = new QComboBox(windowsPage);
    m_pickRun->setObjectName(QStringLiteral("pickRun"));
    m_pickRun->setSizeAdjustPolicy(QComboBox::AdjustToContents);
    m_firstFrom = stepBox(windowsPage, "firstFrom");
    m_firstTo = stepBox(windowsPage, "firstTo");
    m_secondFrom = stepBox(windowsPage, "secondFrom");
    m_secondTo = stepBox(windowsPage, "secondTo");
    windowsLayout->addWidget(new QLabel(QStringLiteral("Run:"), windowsPage));
    windowsLayout->addWidget(m_pickRun);
    windowsLayout->addWidget(new QLabel(QStringLiteral("steps"), windowsPage));
    windowsLayout->addWidget(m_firstFrom);
    windowsLayout->addWidget(new QLabel(QStringLiteral("–"), windowsPage));
    windowsLayout->addWidget(m_firstTo);
    windowsLayout->addWidget(new QLabel(QStringLiteral("against steps"), windowsPage));
    windowsLayout->addWidget(m_secondFrom);
    windowsLayout->addWidget(new QLabel(QStringLiteral("–"), windowsPage));
    windowsLayout->addWidget(m_secondTo);
    windowsLayout->addStretch(1);
    m_pickers->addWidget(windowsPage);
    controls->addWidget(m_pickers, 1);

    m_alignSteps = new QCheckBox(QStringLiteral("Align steps"), this);
    m_alignSteps->setObjectName(QStringLiteral("alignSteps"));
    m_alignSteps->setToolTip(QStringLiteral("Line the runs' steps up (step 3's backward over step 3's backward); "
                                            "off: each run from its first to its last event"));
    m_alignSteps->setChecked(true);
    m_alignSteps->setEnabled(false);
    controls->addWidget(m_alignSteps);
    m_busyLabel = new QLabel(QStringLiteral("Comparing…"), this);
    m_busyLabel->hide();
    controls->addWidget(m_busyLabel);
    layout->addLayout(controls);

    m_summary = new QLabel(QStringLiteral("Open two snapshots (or one with steps) to compare them."), this);
    m_summary->setObjectName(QStringLiteral("compareSummary"));
    m_summary->setWordWrap(true);
    m_summary->setTextInteractionFlags(Qt::TextSelectableByMouse);
    QFont big = m_summary->font();
    big.setBold(true);
    big.setPointSizeF(big.pointSizeF() * 1.15);
    m_summary->setFont(big);
    layout->addWidget(m_summary);
    for (QLabel** peak : { &m_peakA, &m_peakB }) {
        *peak = new QLabel(this);
        (*peak)->setWordWrap(true);
        (*peak)->setTextInteractionFlags(Qt::TextSelectableByMouse);
        layout->addWidget(*peak);
    }
    m_peakA->setObjectName(QStringLiteral("peakA"));
    m_peakB->setObjectName(QStringLiteral("peakB"));

    auto* split = new QSplitter(Qt::Vertical, this);
    auto* upper = new QSplitter(Qt::Horizontal, split);
    m_categories = new QTableWidget(0, CategoryColumnCount, upper);
    m_categories->setObjectName(QStringLiteral("categoryDeltas"));
    m_categories->setHorizontalHeaderLabels({ QStringLiteral("Category"), QStringLiteral("A at peak"),
        QStringLiteral("B at peak"), QStringLiteral("Δ at peak"), QStringLiteral("Δ at OOM") });
    m_categories->verticalHeader()->hide();
    m_categories->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_categories->setSelectionMode(QAbstractItemView::NoSelection);
    upper->addWidget(m_categories);
    m_overlay = new CompareOverlay(upper);
    upper->addWidget(m_overlay);
    // The table needs its five columns; the chart takes the rest.
    upper->setStretchFactor(0, 0);
    upper->setStretchFactor(1, 1);
    upper->setSizes({ 460, 940 });
    split->addWidget(upper);

    m_lists = new QTabWidget(split);
    m_sites = new CompareSitesModel(this);
    m_proxy = new QSortFilterProxyModel(this);
    m_proxy->setSourceModel(m_sites);
    m_proxy->setSortRole(CompareSitesModel::SortRole);
    m_sitesView = new QTableView(m_lists);
    m_sitesView->setObjectName(QStringLiteral("compareSites"));
    m_sitesView->setModel(m_proxy);
    m_sitesView->setSortingEnabled(true);
    m_sitesView->sortByColumn(CompareSitesModel::DeltaColumn, Qt::DescendingOrder);
    m_sitesView->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_sitesView->setSelectionMode(QAbstractItemView::SingleSelection);
    m_sitesView->verticalHeader()->hide();
    m_sitesView->horizontalHeader()->setSectionResizeMode(CompareSitesModel::SiteColumn, QHeaderView::Stretch);
    m_sitesView->setToolTip(QStringLiteral("Double-click a site for its whole stack"));
    m_lists->addTab(m_sitesView, QStringLiteral("Sites"));
    m_surviving = new QTableWidget(0, 5, m_lists);
    m_surviving->setObjectName(QStringLiteral("surviving"));
    m_surviving->setHorizontalHeaderLabels(
        { QStringLiteral("Site"), QStringLiteral("Category"), QStringLiteral("Alive after the second window"),
            QStringLiteral("Allocations"), QStringLiteral("Repeats in the second window") });
    m_surviving->verticalHeader()->hide();
    m_surviving->setEditTriggers(QAbstractItemView::NoEditTriggers);
    m_surviving->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    m_lists->addTab(m_surviving, QStringLiteral("Kept across windows"));
    m_lists->setTabEnabled(1, false);
    split->addWidget(m_lists);
    split->setStretchFactor(0, 2);
    split->setStretchFactor(1, 3);
    layout->addWidget(split, 1);

    connect(m_mode, &QComboBox::currentIndexChanged, this, [this](int index) {
        m_pickers->setCurrentIndex(index);
        schedule();
    });
    connect(m_pickA, &QComboBox::currentIndexChanged, this, &CompareView::schedule);
    connect(m_pickB, &QComboBox::currentIndexChanged, this, &CompareView::schedule);
    connect(swap, &QPushButton::clicked, this, [this] {
        const int a = m_pickA->currentIndex();
        const QSignalBlocker block(m_pickA);
        m_pickA->setCurrentIndex(m_pickB->currentIndex());
        m_pickB->setCurrentIndex(a);
        schedule();
    });
    connect(m_pickRun, &QComboBox::currentIndexChanged, this, [this] {
        updateStepRanges();
        schedule();
    });
    for (QSpinBox* box : { m_firstFrom, m_firstTo, m_secondFrom, m_secondTo })
        connect(box, &QSpinBox::valueChanged, this, &CompareView::schedule);
    connect(m_alignSteps, &QCheckBox::toggled, this, &CompareView::showOverlay);
    connect(
        m_sitesView, &QTableView::doubleClicked, this, [this](const QModelIndex& index) { showStack(index.row()); });
}

CompareView::~CompareView()
{
    // The computation holds its own references to the cases; nothing of this view is touched.
    if (m_watcher)
        m_watcher->disconnect(this);
}

void CompareView::setCandidates(const QList<CompareCandidate>& candidates)
{
    const QString a = m_pickA->currentText();
    const QString b = m_pickB->currentText();
    const QString run = m_pickRun->currentText();
    m_candidates = candidates;
    {
        const QSignalBlocker blockA(m_pickA);
        const QSignalBlocker blockB(m_pickB);
        const QSignalBlocker blockRun(m_pickRun);
        for (QComboBox* box : { m_pickA, m_pickB, m_pickRun }) {
            box->clear();
            for (const CompareCandidate& candidate : candidates)
                box->addItem(candidate.label);
        }
        // Keep the picks still open; else the first two (the order the user opened them in).
        m_pickA->setCurrentIndex(std::max(0, m_pickA->findText(a)));
        const int keptB = m_pickB->findText(b);
        m_pickB->setCurrentIndex(keptB >= 0 ? keptB : std::min<int>(1, int(candidates.size()) - 1));
        m_pickRun->setCurrentIndex(std::max(0, m_pickRun->findText(run)));
    }
    updateStepRanges();
    // One snapshot alone can only be compared with itself, window by window.
    if (candidates.size() == 1 && m_mode->currentIndex() == SnapshotsMode) {
        m_mode->setCurrentIndex(WindowsMode);
        return;
    }
    schedule();
}

void CompareView::updateStepRanges()
{
    const int index = m_pickRun->currentIndex();
    const SnapshotAnalysis* run = index >= 0 && index < m_candidates.size() ? m_candidates[index].analysis() : nullptr;
    const int steps = run && run->primary() ? run->primary()->stepCount : 0;
    for (QSpinBox* box : { m_firstFrom, m_firstTo, m_secondFrom, m_secondTo }) {
        const QSignalBlocker block(box);
        const bool untouched = box->maximum() == 0;
        box->setRange(0, steps);
        // A fresh run starts on step 1 against step 2: the first full steps after warm-up.
        if (untouched) {
            const bool second = box == m_secondFrom || box == m_secondTo;
            box->setValue(std::min(steps, second ? 2 : 1));
        }
    }
}

void CompareView::compareSnapshots(int candidateA, int candidateB)
{
    const QSignalBlocker blockMode(m_mode);
    const QSignalBlocker blockA(m_pickA);
    const QSignalBlocker blockB(m_pickB);
    m_mode->setCurrentIndex(SnapshotsMode);
    m_pickers->setCurrentIndex(SnapshotsMode);
    m_pickA->setCurrentIndex(candidateA);
    m_pickB->setCurrentIndex(candidateB);
    schedule();
}

void CompareView::compareWindows(int candidate, const StepWindow& first, const StepWindow& second)
{
    {
        const QSignalBlocker blockMode(m_mode);
        const QSignalBlocker blockRun(m_pickRun);
        m_mode->setCurrentIndex(WindowsMode);
        m_pickers->setCurrentIndex(WindowsMode);
        m_pickRun->setCurrentIndex(candidate);
    }
    updateStepRanges();
    const std::pair<QSpinBox*, int> values[] = { { m_firstFrom, first.firstStep }, { m_firstTo, first.lastStep },
        { m_secondFrom, second.firstStep }, { m_secondTo, second.lastStep } };
    for (const auto& [box, value] : values) {
        const QSignalBlocker block(box);
        box->setValue(value);
    }
    schedule();
}

CompareView::Mode CompareView::mode() const
{
    return m_mode->currentIndex() == WindowsMode ? WindowsMode : SnapshotsMode;
}

CompareRequest CompareView::request() const
{
    CompareRequest request;
    request.windows = mode() == WindowsMode;
    const auto candidate = [this](int index) {
        return index >= 0 && index < m_candidates.size() ? m_candidates[index] : CompareCandidate {};
    };
    if (request.windows) {
        request.a = candidate(m_pickRun->currentIndex());
        request.first = { m_firstFrom->value(), m_firstTo->value() };
        request.second = { m_secondFrom->value(), m_secondTo->value() };
    } else {
        request.a = candidate(m_pickA->currentIndex());
        request.b = candidate(m_pickB->currentIndex());
    }
    return request;
}

// Changes come in bursts (a mode switch resets the pickers, typing a step fires per digit): the
// comparison runs once the burst is over, and a newer one supersedes an older still running.
void CompareView::schedule()
{
    m_busy = true;
    m_busyLabel->show();
    if (m_scheduled)
        return;
    m_scheduled = true;
    QTimer::singleShot(0, this, [this] {
        m_scheduled = false;
        run();
    });
}

void CompareView::run()
{
    const int generation = ++m_generation;
    if (m_watcher) {
        m_watcher->disconnect(this);
        m_watcher->deleteLater();
    }
    m_watcher = new QFutureWatcher<ComputedComparison>(this);
    connect(m_watcher, &QFutureWatcherBase::finished, this, [this, generation] {
        if (generation != m_generation)
            return;
        const ComputedComparison computed = m_watcher->result();
        m_busy = false;
        m_busyLabel->hide();
        showResult(computed);
        emit compared();
    });
    m_watcher->setFuture(QtConcurrent::run([request = request()] { return computeComparison(request); }));
}

QString CompareView::summaryText() const
{
    return m_summary->text();
}

QString CompareView::peakText(bool sideB) const
{
    return (sideB ? m_peakB : m_peakA)->text();
}

void CompareView::showResult(const ComputedComparison& computed)
{
    m_computed = computed;
    if (!computed.comparison) {
        m_summary->setText(computed.problem);
        m_peakA->clear();
        m_peakB->clear();
        m_categories->setRowCount(0);
        m_sites->setComparison(nullptr);
        m_surviving->setRowCount(0);
        m_overlay->setTimeline({}, {}, {});
        return;
    }
    const Comparison& comparison = *computed.comparison;
    m_summary->setText(toQString(comparison.summary));
    const auto sideText = [](const ComparisonSide& side) {
        QString name = toQString(side.label);
        if (!side.source.empty() && !side.window)
            name += QStringLiteral(" — ") + QFileInfo(toQString(side.source)).fileName();
        QString text
            = QStringLiteral("<b>%1</b>: peak %2 (reserved %3)")
                  .arg(name.toHtmlEscaped(), momentText(side.peak).toHtmlEscaped(), bytesText(side.peakReservedBytes));
        if (side.oom)
            text += QStringLiteral("; <span style='color:%1'>OOM</span> at %2")
                        .arg(colors::oomMarker().name(), momentText(*side.oom).toHtmlEscaped());
        return text;
    };
    m_peakA->setText(sideText(comparison.a));
    m_peakB->setText(sideText(comparison.b));
    fillCategories(comparison);
    m_sites->setComparison(computed.comparison);
    m_sitesView->sortByColumn(CompareSitesModel::DeltaColumn, Qt::DescendingOrder);
    m_sitesView->resizeColumnsToContents();
    m_sitesView->horizontalHeader()->setSectionResizeMode(CompareSitesModel::SiteColumn, QHeaderView::Stretch);
    fillSurviving(comparison);
    m_lists->setTabEnabled(1, comparison.windows);
    m_alignSteps->setEnabled(comparison.timeline.stepAligned);
    showOverlay();
}

void CompareView::showOverlay()
{
    if (!m_computed.comparison)
        return;
    const Comparison& comparison = *m_computed.comparison;
    const bool aligned = comparison.timeline.stepAligned && m_alignSteps->isChecked();
    m_overlay->setTimeline(aligned ? comparison.timeline : m_computed.timeNormalised, toQString(comparison.a.label),
        toQString(comparison.b.label));
}

void CompareView::fillCategories(const Comparison& comparison)
{
    const bool oom = comparison.categoriesDeltaAtOom.has_value();
    m_categories->setColumnHidden(CategoryOomDeltaColumn, !oom);
    m_categories->setHorizontalHeaderItem(
        CategoryAColumn, new QTableWidgetItem(QStringLiteral("%1 at peak").arg(toQString(comparison.a.label))));
    m_categories->setHorizontalHeaderItem(
        CategoryBColumn, new QTableWidgetItem(QStringLiteral("%1 at peak").arg(toQString(comparison.b.label))));
    m_categories->setRowCount(0);
    for (int c = 0; c < categoryCount; ++c) {
        const auto category = static_cast<Category>(c);
        const uint64_t a = comparison.a.peak.categories[size_t(c)];
        const uint64_t b = comparison.b.peak.categories[size_t(c)];
        const int64_t delta = comparison.categoriesDeltaAtPeak[size_t(c)];
        const int64_t oomDelta = oom ? (*comparison.categoriesDeltaAtOom)[size_t(c)] : 0;
        if (a == 0 && b == 0 && oomDelta == 0)
            continue;
        const int row = m_categories->rowCount();
        m_categories->insertRow(row);
        QTableWidgetItem* name = cell(categoryText(category), Qt::AlignLeft | Qt::AlignVCenter);
        name->setData(Qt::DecorationRole, colors::category(category));
        name->setData(Qt::UserRole, c);
        m_categories->setItem(row, CategoryNameColumn, name);
        m_categories->setItem(row, CategoryAColumn, cell(bytesText(a)));
        m_categories->setItem(row, CategoryBColumn, cell(bytesText(b)));
        QTableWidgetItem* deltaItem = cell(bytesDeltaText(delta));
        deltaItem->setData(Qt::UserRole, qlonglong(delta));
        // A diverging shade: the category's colour, stronger the larger its share of the change.
        QColor shade = colors::category(category);
        shade.setAlpha(delta == 0 ? 0 : 90);
        deltaItem->setBackground(shade);
        m_categories->setItem(row, CategoryDeltaColumn, deltaItem);
        QTableWidgetItem* oomItem = cell(oom ? bytesDeltaText(oomDelta) : QString());
        oomItem->setData(Qt::UserRole, qlonglong(oomDelta));
        m_categories->setItem(row, CategoryOomDeltaColumn, oomItem);
    }
    m_categories->resizeColumnsToContents();
}

void CompareView::fillSurviving(const Comparison& comparison)
{
    m_surviving->setRowCount(int(comparison.surviving.size()));
    for (size_t i = 0; i < comparison.surviving.size(); ++i) {
        const SurvivingSite& site = comparison.surviving[i];
        const int row = int(i);
        m_surviving->setItem(row, 0, cell(toQString(siteLabel(site.key)), Qt::AlignLeft | Qt::AlignVCenter));
        QTableWidgetItem* category = cell(categoryText(site.key.category), Qt::AlignLeft | Qt::AlignVCenter);
        category->setData(Qt::DecorationRole, colors::category(site.key.category));
        m_surviving->setItem(row, 1, category);
        QTableWidgetItem* bytes = cell(bytesText(site.bytes));
        bytes->setData(Qt::UserRole, qulonglong(site.bytes));
        m_surviving->setItem(row, 2, bytes);
        m_surviving->setItem(row, 3, cell(QString::number(site.count)));
        m_surviving->setItem(row, 4,
            cell(site.repeats ? QStringLiteral("yes: %1 more").arg(bytesText(site.secondWindowBytes)) : QString(),
                Qt::AlignLeft | Qt::AlignVCenter));
        if (site.repeats) {
            for (int column = 0; column < m_surviving->columnCount(); ++column) {
                QFont font = m_surviving->item(row, column)->font();
                font.setBold(true);
                m_surviving->item(row, column)->setFont(font);
            }
        }
    }
    m_lists->setTabText(1,
        comparison.windows && comparison.survivingBytes > 0
            ? QStringLiteral("Kept across windows (%1)").arg(bytesText(comparison.survivingBytes))
            : QStringLiteral("Kept across windows"));
    m_surviving->resizeColumnsToContents();
    m_surviving->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
}

QDialog* CompareView::showStack(int row)
{
    const int sourceRow = m_proxy->mapToSource(m_proxy->index(row, 0)).row();
    const ComparedSite* site = m_sites->site(sourceRow);
    if (!site)
        return nullptr;
    auto* dialog = new QDialog(this);
    dialog->setObjectName(QStringLiteral("siteStack"));
    dialog->setAttribute(Qt::WA_DeleteOnClose);
    dialog->setWindowTitle(QStringLiteral("Stack of %1").arg(toQString(siteLabel(site->key))));
    auto* layout = new QVBoxLayout(dialog);
    auto* text = new QPlainTextEdit(m_sites->fullStack(sourceRow), dialog);
    text->setReadOnly(true);
    text->setLineWrapMode(QPlainTextEdit::NoWrap);
    layout->addWidget(text);
    auto* buttons = new QDialogButtonBox(QDialogButtonBox::Close, dialog);
    connect(buttons, &QDialogButtonBox::rejected, dialog, &QDialog::close);
    layout->addWidget(buttons);
    dialog->resize(720, 420);
    dialog->show();
    return dialog;
}

} // namespace oomlens
