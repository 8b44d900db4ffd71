#include "views/liveallocationsview.h"

#include "core/analysis/livequery.h"
#include "views/models/allocationsmodel.h"
#include "views/models/calltreemodel.h"
#include "views/viewutil.h"

#include <QButtonGroup>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QSortFilterProxyModel>
#include <QStackedWidget>
#include <QTableView>
#include <QTimer>
#include <QToolButton>
#include <QTreeView>
#include <QVBoxLayout>

namespace oomlens {

namespace {

QToolButton* toggle(const QString& text, const QString& tip, QWidget* parent)
{
    auto* button = new QToolButton(parent);
    button->setText(text);
    button->setToolTip(tip);
    button->setCheckable(true);
    button->setAutoRaise(false);
    return button;
}

QSortFilterProxyModel* filterProxy(QAbstractItemModel* source, int sortRole, int filterRole, QObject* parent)
{
    auto* proxy = new QSortFilterProxyModel(parent);
    proxy->setSourceModel(source);
    proxy->setSortRole(sortRole);
    proxy->setFilterRole(filterRole);
    proxy->setFilterCaseSensitivity(Qt::CaseInsensitive);
    proxy->setFilterKeyColumn(0);
    return proxy;
}

} // namespace

LiveAllocationsView::LiveAllocationsView(QWidget* parent)
    : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    layout->addLayout(buildBar());
    buildTable();
    buildTree();
    m_pages = new QStackedWidget(this);
    m_pages->addWidget(m_table);
    m_pages->addWidget(m_treeView);
    layout->addWidget(m_pages, 1);
    connectControls();
}

QHBoxLayout* LiveAllocationsView::buildBar()
{
    auto* bar = new QHBoxLayout;
    m_header = new QLabel(this);
    m_header->setTextFormat(Qt::RichText);
    bar->addWidget(m_header, 1);

    m_moments = new QButtonGroup(this);
    const std::pair<QString, QString> moments[] = {
        { QStringLiteral("Cursor"), QStringLiteral("Follow the time cursor") },
        { QStringLiteral("Peak"), QStringLiteral("What was live at the allocation peak, wherever the cursor is") },
        { QStringLiteral("OOM"), QStringLiteral("What was live when the allocation failed") },
    };
    for (int i = 0; i < 3; ++i) {
        auto* button = toggle(moments[i].first, moments[i].second, this);
        m_moments->addButton(button, i);
        bar->addWidget(button);
    }
    m_moments->button(0)->setChecked(true);
    bar->addSpacing(12);
    m_displays = new QButtonGroup(this);
    auto* table = toggle(QStringLiteral("Table"), QStringLiteral("Every live allocation, biggest first"), this);
    auto* tree
        = toggle(QStringLiteral("Call tree"), QStringLiteral("Live bytes by call path, outermost caller first"), this);
    m_displays->addButton(table, int(Display::Table));
    m_displays->addButton(tree, int(Display::CallTree));
    table->setChecked(true);
    bar->addWidget(table);
    bar->addWidget(tree);
    m_filter = new QLineEdit(this);
    m_filter->setPlaceholderText(QStringLiteral("Search category, phase, function or file…"));
    m_filter->setClearButtonEnabled(true);
    m_filter->setMinimumWidth(220);
    bar->addWidget(m_filter);
    return bar;
}

void LiveAllocationsView::buildTable()
{
    m_model = new AllocationsModel(this);
    m_proxy = filterProxy(m_model, AllocationsModel::SortRole, AllocationsModel::FilterRole, this);
    m_table = new QTableView(this);
    m_table->setModel(m_proxy);
    m_table->setSortingEnabled(true);
    m_table->sortByColumn(AllocationsModel::SizeColumn, Qt::DescendingOrder);
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
    m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 6);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setAlternatingRowColors(true);
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->setToolTip(QString());
    // Widths from the longest value each column can hold: measuring thousands of rows on every
    // cursor move cost milliseconds, and "before the trace" or "Optimizer state" were cut off.
    const QFontMetrics metrics = m_table->fontMetrics();
    const int pad = 20;
    const int icon = m_table->iconSize().isValid() ? m_table->iconSize().width() : 16;
    m_table->setColumnWidth(
        AllocationsModel::SizeColumn, metrics.horizontalAdvance(QStringLiteral("1023.99 MiB")) + pad);
    m_table->setColumnWidth(AllocationsModel::CategoryColumn, widestCategoryText(metrics) + icon + pad);
    m_table->setColumnWidth(AllocationsModel::PhaseColumn, widestPhaseText(metrics) + pad);
    m_table->setColumnWidth(AllocationsModel::StepColumn, metrics.horizontalAdvance(QStringLiteral("99999")) + pad);
    m_table->setColumnWidth(
        AllocationsModel::AllocatedAtColumn, metrics.horizontalAdvance(QStringLiteral("before the trace")) + pad);
}

void LiveAllocationsView::buildTree()
{
    m_tree = new CallTreeModel(this);
    m_treeProxy = filterProxy(m_tree, CallTreeModel::SortRole, CallTreeModel::FilterRole, this);
    // A matching frame keeps its callers visible, so the path to it stays readable.
    m_treeProxy->setRecursiveFilteringEnabled(true);
    m_treeView = new QTreeView(this);
    m_treeView->setModel(m_treeProxy);
    m_treeView->setUniformRowHeights(true);
    m_treeView->setSortingEnabled(true);
    m_treeView->sortByColumn(CallTreeModel::BytesColumn, Qt::DescendingOrder);
    m_treeView->setAlternatingRowColors(true);
    m_treeView->header()->setStretchLastSection(false);
    m_treeView->header()->setSectionResizeMode(CallTreeModel::FunctionColumn, QHeaderView::Stretch);
}

void LiveAllocationsView::connectControls()
{
    m_filterTimer = new QTimer(this);
    m_filterTimer->setSingleShot(true);
    m_filterTimer->setInterval(180);
    connect(m_filterTimer, &QTimer::timeout, this, &LiveAllocationsView::applyFilter);
    connect(m_filter, &QLineEdit::textChanged, m_filterTimer, qOverload<>(&QTimer::start));
    connect(m_moments, &QButtonGroup::idClicked, this, [this](int id) { setMoment(Moment(id)); });
    connect(m_displays, &QButtonGroup::idClicked, this, [this](int id) { setDisplay(Display(id)); });
    connect(m_table, &QTableView::doubleClicked, this, [this](const QModelIndex& index) {
        const int allocation = index.data(AllocationsModel::AllocationRole).toInt();
        if (m_data && m_data->device() && allocation >= 0) {
            const int64_t event = m_data->device()->allocations[size_t(allocation)].allocEvent;
            if (event >= 0)
                emit cursorRequested(event);
        }
    });
}

void LiveAllocationsView::setTimeline(std::shared_ptr<const TimelineData> data)
{
    m_data = std::move(data);
    m_cursor = m_data && m_data->device() ? m_data->device()->peakEvent : -1;
    m_treeEvent = -2;
    m_moments->button(int(Moment::Oom))->setEnabled(oomEvent() >= 0);
    if (m_moment == Moment::Oom && oomEvent() < 0)
        setMoment(Moment::Cursor);
    else
        refresh();
}

void LiveAllocationsView::setEvent(int64_t event)
{
    m_cursor = event;
    if (m_moment == Moment::Cursor)
        refresh();
}

void LiveAllocationsView::setMoment(Moment moment)
{
    if (moment == Moment::Oom && oomEvent() < 0)
        moment = Moment::Cursor;
    m_moment = moment;
    m_moments->button(int(moment))->setChecked(true);
    refresh();
}

void LiveAllocationsView::setDisplay(Display display)
{
    m_display = display;
    m_displays->button(int(display))->setChecked(true);
    m_pages->setCurrentIndex(display == Display::Table ? 0 : 1);
    refreshTree();
}

int64_t LiveAllocationsView::oomEvent() const
{
    if (!m_data || !m_data->device())
        return -1;
    for (const OomAnalysis& oom : m_data->device()->ooms) {
        if (oom.eventIndex >= 0)
            return oom.eventIndex;
    }
    return -1;
}

int64_t LiveAllocationsView::shownEvent() const
{
    switch (m_moment) {
    case Moment::Peak:
        return m_data && m_data->device() ? m_data->device()->peakEvent : -1;
    case Moment::Oom:
        return oomEvent();
    case Moment::Cursor:
        break;
    }
    return m_cursor;
}

void LiveAllocationsView::refresh()
{
    if (!m_data || !m_data->device()) {
        m_model->clear();
        m_tree->clear();
        m_header->clear();
        return;
    }
    const int64_t event = shownEvent();
    m_model->setMoment(m_data, event);
    const QString where = m_moment == Moment::Peak ? QStringLiteral("at the peak")
        : m_moment == Moment::Oom                  ? QStringLiteral("at the OOM")
                                                   : QStringLiteral("at the cursor");
    m_header->setText(QStringLiteral("<b>Live %1</b> (after event #%2): %3 allocations, %4")
                          .arg(where)
                          .arg(event)
                          .arg(m_model->rowCount())
                          .arg(bytesText(m_model->totalBytes())));
    refreshTree();
}

void LiveAllocationsView::refreshTree()
{
    // The tree costs a pass over every allocation and its stack: build it only when it is shown.
    if (m_display != Display::CallTree || !m_data || !m_data->device())
        return;
    const int64_t event = shownEvent();
    if (event == m_treeEvent && m_tree->rowCount() > 0)
        return;
    m_treeEvent = event;
    const auto snapshot = std::shared_ptr<const Snapshot>(m_data, &m_data->snapshot());
    m_tree->setTree(snapshot, oomlens::callTree(*snapshot, *m_data->device(), event));
    if (!m_filter->text().isEmpty())
        m_treeView->expandAll();
    else
        m_treeView->expandToDepth(1);
    m_treeView->resizeColumnToContents(CallTreeModel::BytesColumn);
}

void LiveAllocationsView::setFilterText(const QString& text)
{
    m_filter->setText(text);
    m_filterTimer->stop();
    applyFilter();
}

void LiveAllocationsView::applyFilter()
{
    const QString text = m_filter->text().trimmed();
    m_proxy->setFilterFixedString(text);
    m_treeProxy->setFilterFixedString(text);
    if (!text.isEmpty() && m_display == Display::CallTree)
        m_treeView->expandAll();
}

} // namespace oomlens
