#include "views/compareview.h"

#include "views/categorycolors.h"
#include "views/compareoverlay.h"
#include "views/models/comparesitesmodel.h"
#include "views/timelinewidget.h"
#include "views/viewutil.h"

#include "ui_compareview.h"

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

// The sentence above the figures, a size larger than the text.
QFont headlineFont(QFont font)
{
    font.setBold(true);
    font.setPointSizeF(font.pointSizeF() * 1.15);
    return font;
}

} // namespace

CompareView::CompareView(QWidget* parent)
    : QWidget(parent)
    , m_ui(std::make_unique<Ui::CompareView>())
{
    m_ui->setupUi(this);
    m_ui->busyLabel->hide();
    m_ui->compareSummary->setFont(headlineFont(m_ui->compareSummary->font()));
    setUpSplitters();
    setUpLists();
    connectPickers();
    connect(m_ui->alignSteps, &QCheckBox::toggled, this, &CompareView::showOverlay);
    connect(m_ui->compareSites, &QTableView::doubleClicked, this,
        [this](const QModelIndex& index) { showStack(index.row()); });
}

CompareView::~CompareView() = default;

void CompareView::setUpSplitters()
{
    // The table needs its five columns; the chart takes the rest.
    m_ui->upper->setStretchFactor(0, 0);
    m_ui->upper->setStretchFactor(1, 1);
    m_ui->upper->setSizes({ 460, 940 });
    m_ui->split->setStretchFactor(0, 2);
    m_ui->split->setStretchFactor(1, 3);
}

void CompareView::setUpLists()
{
    m_sites = new CompareSitesModel(this);
    m_proxy = new QSortFilterProxyModel(this);
    m_proxy->setSourceModel(m_sites);
    m_proxy->setSortRole(CompareSitesModel::SortRole);
    QTableView* sites = m_ui->compareSites;
    sites->setModel(m_proxy);
    sites->sortByColumn(CompareSitesModel::DeltaColumn, Qt::DescendingOrder);
    sites->horizontalHeader()->setSectionResizeMode(CompareSitesModel::SiteColumn, QHeaderView::Stretch);
    m_ui->surviving->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
    m_ui->lists->setTabEnabled(1, false);
}

void CompareView::connectPickers()
{
    connect(m_ui->compareMode, &QComboBox::currentIndexChanged, this, [this](int index) {
        m_ui->pickers->setCurrentIndex(index);
        schedule();
    });
    connect(m_ui->pickA, &QComboBox::currentIndexChanged, this, &CompareView::schedule);
    connect(m_ui->pickB, &QComboBox::currentIndexChanged, this, &CompareView::schedule);
    connect(m_ui->swap, &QPushButton::clicked, this, &CompareView::swapPicks);
    connect(m_ui->pickRun, &QComboBox::currentIndexChanged, this, [this] {
        updateStepRanges();
        schedule();
    });
    for (QSpinBox* box : stepBoxes())
        connect(box, &QSpinBox::valueChanged, this, &CompareView::schedule);
}

void CompareView::swapPicks()
{
    const int a = m_ui->pickA->currentIndex();
    const QSignalBlocker block(m_ui->pickA);
    m_ui->pickA->setCurrentIndex(m_ui->pickB->currentIndex());
    m_ui->pickB->setCurrentIndex(a);
    schedule();
}

QList<QSpinBox*> CompareView::stepBoxes() const
{
    return { m_ui->firstFrom, m_ui->firstTo, m_ui->secondFrom, m_ui->secondTo };
}

QComboBox* CompareView::modeBox() const
{
    return m_ui->compareMode;
}

QComboBox* CompareView::pickerA() const
{
    return m_ui->pickA;
}

QComboBox* CompareView::pickerB() const
{
    return m_ui->pickB;
}

QCheckBox* CompareView::alignSteps() const
{
    return m_ui->alignSteps;
}

QTableWidget* CompareView::categoryTable() const
{
    return m_ui->categoryDeltas;
}

QTableView* CompareView::sitesView() const
{
    return m_ui->compareSites;
}

CompareOverlay* CompareView::overlay() const
{
    return m_ui->overlay;
}

QTableWidget* CompareView::survivingTable() const
{
    return m_ui->surviving;
}

void CompareView::setCandidates(const QList<CompareCandidate>& candidates)
{
    const QString a = m_ui->pickA->currentText();
    const QString b = m_ui->pickB->currentText();
    const QString run = m_ui->pickRun->currentText();
    m_candidates = candidates;
    {
        const QSignalBlocker blockA(m_ui->pickA);
        const QSignalBlocker blockB(m_ui->pickB);
        const QSignalBlocker blockRun(m_ui->pickRun);
        for (QComboBox* box : { m_ui->pickA, m_ui->pickB, m_ui->pickRun }) {
            box->clear();
            for (const CompareCandidate& candidate : candidates)
                box->addItem(candidate.label);
        }
        // Keep the picks still open; else the first two (the order the user opened them in).
        m_ui->pickA->setCurrentIndex(std::max(0, m_ui->pickA->findText(a)));
        const int keptB = m_ui->pickB->findText(b);
        m_ui->pickB->setCurrentIndex(keptB >= 0 ? keptB : std::min<int>(1, int(candidates.size()) - 1));
        m_ui->pickRun->setCurrentIndex(std::max(0, m_ui->pickRun->findText(run)));
    }
    updateStepRanges();
    // One snapshot alone can only be compared with itself, window by window.
    if (candidates.size() == 1 && m_ui->compareMode->currentIndex() == SnapshotsMode) {
        m_ui->compareMode->setCurrentIndex(WindowsMode);
        return;
    }
    schedule();
}

void CompareView::updateStepRanges()
{
    const int index = m_ui->pickRun->currentIndex();
    const SnapshotAnalysis* run = index >= 0 && index < m_candidates.size() ? m_candidates[index].analysis() : nullptr;
    const int steps = run && run->primary() ? run->primary()->stepCount : 0;
    for (QSpinBox* box : stepBoxes()) {
        const QSignalBlocker block(box);
        const bool untouched = box->maximum() == 0;
        box->setRange(0, steps);
        // A fresh run starts on step 1 against step 2: the first full steps after warm-up.
        if (untouched) {
            const bool second = box == m_ui->secondFrom || box == m_ui->secondTo;
            box->setValue(std::min(steps, second ? 2 : 1));
        }
    }
}

void CompareView::compareSnapshots(int candidateA, int candidateB)
{
    const QSignalBlocker blockMode(m_ui->compareMode);
    const QSignalBlocker blockA(m_ui->pickA);
    const QSignalBlocker blockB(m_ui->pickB);
    m_ui->compareMode->setCurrentIndex(SnapshotsMode);
    m_ui->pickers->setCurrentIndex(SnapshotsMode);
    m_ui->pickA->setCurrentIndex(candidateA);
    m_ui->pickB->setCurrentIndex(candidateB);
    schedule();
}

void CompareView::compareWindows(int candidate, const StepWindow& first, const StepWindow& second)
{
    {
        const QSignalBlocker blockMode(m_ui->compareMode);
        const QSignalBlocker blockRun(m_ui->pickRun);
        m_ui->compareMode->setCurrentIndex(WindowsMode);
        m_ui->pickers->setCurrentIndex(WindowsMode);
        m_ui->pickRun->setCurrentIndex(candidate);
    }
    updateStepRanges();
    const std::pair<QSpinBox*, int> values[]
        = { { m_ui->firstFrom, first.firstStep }, { m_ui->firstTo, first.lastStep },
              { m_ui->secondFrom, second.firstStep }, { m_ui->secondTo, second.lastStep } };
    for (const auto& [box, value] : values) {
        const QSignalBlocker block(box);
        box->setValue(value);
    }
    schedule();
}

CompareView::Mode CompareView::mode() const
{
    return m_ui->compareMode->currentIndex() == WindowsMode ? WindowsMode : SnapshotsMode;
}

CompareRequest CompareView::request() const
{
    CompareRequest request;
    request.windows = mode() == WindowsMode;
    const auto candidate = [this](int index) {
        return index >= 0 && index < m_candidates.size() ? m_candidates[index] : CompareCandidate {};
    };
    if (request.windows) {
        request.a = candidate(m_ui->pickRun->currentIndex());
        request.first = { m_ui->firstFrom->value(), m_ui->firstTo->value() };
        request.second = { m_ui->secondFrom->value(), m_ui->secondTo->value() };
    } else {
        request.a = candidate(m_ui->pickA->currentIndex());
        request.b = candidate(m_ui->pickB->currentIndex());
    }
    return request;
}

// Changes come in bursts (a mode switch resets the pickers, typing a step fires per digit): the
// comparison runs once the burst is over, and a newer one supersedes an older still running.
void CompareView::schedule()
{
    m_busy = true;
    m_ui->busyLabel->show();
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
    auto work = [request = request()](const JobContext&) { return computeComparison(request); };
    m_jobs.replace(std::move(work), [this](const ComputedComparison& computed) {
        m_busy = false;
        m_ui->busyLabel->hide();
        showResult(computed);
        emit compared();
    });
}

QString CompareView::summaryText() const
{
    return m_ui->compareSummary->text();
}

QString CompareView::peakText(bool sideB) const
{
    return (sideB ? m_ui->peakB : m_ui->peakA)->text();
}

void CompareView::showResult(const ComputedComparison& computed)
{
    m_computed = computed;
    if (!computed.comparison) {
        m_ui->compareSummary->setText(computed.problem);
        m_ui->peakA->clear();
        m_ui->peakB->clear();
        m_ui->categoryDeltas->setRowCount(0);
        m_sites->setComparison(nullptr);
        m_ui->surviving->setRowCount(0);
        m_ui->overlay->setTimeline({}, {}, {});
        return;
    }
    const Comparison& comparison = *computed.comparison;
    m_ui->compareSummary->setText(toQString(comparison.summary));
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
    m_ui->peakA->setText(sideText(comparison.a));
    m_ui->peakB->setText(sideText(comparison.b));
    fillCategories(comparison);
    m_sites->setComparison(computed.comparison);
    m_ui->compareSites->sortByColumn(CompareSitesModel::DeltaColumn, Qt::DescendingOrder);
    m_ui->compareSites->resizeColumnsToContents();
    m_ui->compareSites->horizontalHeader()->setSectionResizeMode(CompareSitesModel::SiteColumn, QHeaderView::Stretch);
    fillSurviving(comparison);
    m_ui->lists->setTabEnabled(1, comparison.windows);
    m_ui->alignSteps->setEnabled(comparison.timeline.stepAligned);
    showOverlay();
}

void CompareView::showOverlay()
{
    if (!m_computed.comparison)
        return;
    const Comparison& comparison = *m_computed.comparison;
    const bool aligned = comparison.timeline.stepAligned && m_ui->alignSteps->isChecked();
    m_ui->overlay->setTimeline(aligned ? comparison.timeline : m_computed.timeNormalised, toQString(comparison.a.label),
        toQString(comparison.b.label));
}

void CompareView::fillCategories(const Comparison& comparison)
{
    const bool oom = comparison.categoriesDeltaAtOom.has_value();
    m_ui->categoryDeltas->setColumnHidden(CategoryOomDeltaColumn, !oom);
    m_ui->categoryDeltas->setHorizontalHeaderItem(
        CategoryAColumn, new QTableWidgetItem(QStringLiteral("%1 at peak").arg(toQString(comparison.a.label))));
    m_ui->categoryDeltas->setHorizontalHeaderItem(
        CategoryBColumn, new QTableWidgetItem(QStringLiteral("%1 at peak").arg(toQString(comparison.b.label))));
    m_ui->categoryDeltas->setRowCount(0);
    for (int c = 0; c < categoryCount; ++c) {
        const auto category = static_cast<Category>(c);
        const uint64_t a = comparison.a.peak.categories[size_t(c)];
        const uint64_t b = comparison.b.peak.categories[size_t(c)];
        const int64_t delta = comparison.categoriesDeltaAtPeak[size_t(c)];
        const int64_t oomDelta = oom ? (*comparison.categoriesDeltaAtOom)[size_t(c)] : 0;
        if (a == 0 && b == 0 && oomDelta == 0)
            continue;
        const int row = m_ui->categoryDeltas->rowCount();
        m_ui->categoryDeltas->insertRow(row);
        QTableWidgetItem* name = cell(categoryText(category), Qt::AlignLeft | Qt::AlignVCenter);
        name->setData(Qt::DecorationRole, colors::category(category));
        name->setData(Qt::UserRole, c);
        m_ui->categoryDeltas->setItem(row, CategoryNameColumn, name);
        m_ui->categoryDeltas->setItem(row, CategoryAColumn, cell(bytesText(a)));
        m_ui->categoryDeltas->setItem(row, CategoryBColumn, cell(bytesText(b)));
        QTableWidgetItem* deltaItem = cell(bytesDeltaText(delta));
        deltaItem->setData(Qt::UserRole, qlonglong(delta));
        // A diverging shade: the category's colour, stronger the larger its share of the change.
        QColor shade = colors::category(category);
        shade.setAlpha(delta == 0 ? 0 : 90);
        deltaItem->setBackground(shade);
        m_ui->categoryDeltas->setItem(row, CategoryDeltaColumn, deltaItem);
        QTableWidgetItem* oomItem = cell(oom ? bytesDeltaText(oomDelta) : QString());
        oomItem->setData(Qt::UserRole, qlonglong(oomDelta));
        m_ui->categoryDeltas->setItem(row, CategoryOomDeltaColumn, oomItem);
    }
    m_ui->categoryDeltas->resizeColumnsToContents();
}

void CompareView::fillSurviving(const Comparison& comparison)
{
    m_ui->surviving->setRowCount(int(comparison.surviving.size()));
    for (size_t i = 0; i < comparison.surviving.size(); ++i) {
        const SurvivingSite& site = comparison.surviving[i];
        const int row = int(i);
        m_ui->surviving->setItem(row, 0, cell(toQString(siteLabel(site.key)), Qt::AlignLeft | Qt::AlignVCenter));
        QTableWidgetItem* category = cell(categoryText(site.key.category), Qt::AlignLeft | Qt::AlignVCenter);
        category->setData(Qt::DecorationRole, colors::category(site.key.category));
        m_ui->surviving->setItem(row, 1, category);
        QTableWidgetItem* bytes = cell(bytesText(site.bytes));
        bytes->setData(Qt::UserRole, qulonglong(site.bytes));
        m_ui->surviving->setItem(row, 2, bytes);
        m_ui->surviving->setItem(row, 3, cell(QString::number(site.count)));
        m_ui->surviving->setItem(row, 4,
            cell(site.repeats ? QStringLiteral("yes: %1 more").arg(bytesText(site.secondWindowBytes)) : QString(),
                Qt::AlignLeft | Qt::AlignVCenter));
        if (site.repeats) {
            for (int column = 0; column < m_ui->surviving->columnCount(); ++column) {
                QFont font = m_ui->surviving->item(row, column)->font();
                font.setBold(true);
                m_ui->surviving->item(row, column)->setFont(font);
            }
        }
    }
    m_ui->lists->setTabText(1,
        comparison.windows && comparison.survivingBytes > 0
            ? QStringLiteral("Kept across windows (%1)").arg(bytesText(comparison.survivingBytes))
            : QStringLiteral("Kept across windows"));
    m_ui->surviving->resizeColumnsToContents();
    m_ui->surviving->horizontalHeader()->setSectionResizeMode(0, QHeaderView::Stretch);
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
