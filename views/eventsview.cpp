#include "views/eventsview.h"

#include "views/models/eventsmodel.h"
#include "views/viewutil.h"

#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QTableView>
#include <QTimer>
#include <QVBoxLayout>

namespace oomlens {

EventsView::EventsView(QWidget* parent)
    : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    auto* bar = new QHBoxLayout;
    bar->addWidget(new QLabel(QStringLiteral("Show:"), this));
    m_actions = new QComboBox(this);
    m_actions->addItem(QStringLiteral("All events"), EventsModel::AllActions);
    m_actions->addItem(QStringLiteral("Allocations"), EventsModel::Allocs);
    m_actions->addItem(QStringLiteral("Frees"), EventsModel::Frees);
    m_actions->addItem(QStringLiteral("Allocations and frees"), EventsModel::Allocs | EventsModel::Frees);
    m_actions->addItem(QStringLiteral("Segment events"), EventsModel::Segments);
    m_actions->addItem(QStringLiteral("OOM events"), EventsModel::Ooms);
    m_actions->addItem(QStringLiteral("Snapshots and annotations"), EventsModel::Markers);
    bar->addWidget(m_actions);
    m_text = new QLineEdit(this);
    m_text->setPlaceholderText(QStringLiteral("Search the stacks: function or file…"));
    m_text->setClearButtonEnabled(true);
    bar->addWidget(m_text, 1);
    m_count = new QLabel(this);
    bar->addWidget(m_count);
    layout->addLayout(bar);

    m_model = new EventsModel(this);
    m_table = new QTableView(this);
    m_table->setModel(m_model);
    // Fixed row heights keep a 3M-row table as cheap as a 30-row one.
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
    m_table->verticalHeader()->setDefaultSectionSize(m_table->fontMetrics().height() + 6);
    m_table->horizontalHeader()->setStretchLastSection(true);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setSelectionMode(QAbstractItemView::SingleSelection);
    m_table->setWordWrap(false);
    layout->addWidget(m_table);

    m_filterTimer = new QTimer(this);
    m_filterTimer->setSingleShot(true);
    m_filterTimer->setInterval(250);
    connect(m_filterTimer, &QTimer::timeout, this, &EventsView::applyFilter);
    connect(m_text, &QLineEdit::textChanged, m_filterTimer, qOverload<>(&QTimer::start));
    connect(m_actions, &QComboBox::currentIndexChanged, this, &EventsView::applyFilter);
    connect(
        m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& current) {
            if (m_following || !current.isValid())
                return;
            m_cursor = m_model->eventAt(current.row());
            emit cursorRequested(m_cursor);
        });
}

void EventsView::setTimeline(std::shared_ptr<const TimelineData> data)
{
    m_cursor = -1;
    m_model->setTimeline(std::move(data));
    applyFilter();
    const QFontMetrics metrics = m_table->fontMetrics();
    for (int column : { EventsModel::IndexColumn, EventsModel::TimeColumn, EventsModel::ActionColumn,
             EventsModel::SizeColumn, EventsModel::AddressColumn })
        m_table->setColumnWidth(column, metrics.horizontalAdvance(QStringLiteral("0x7f0000000000")) + 16);
    // The colour swatch plus "Optimizer state" must fit.
    const int icon = m_table->iconSize().isValid() ? m_table->iconSize().width() : 16;
    m_table->setColumnWidth(EventsModel::CategoryColumn, widestCategoryText(metrics) + icon + 24);
}

void EventsView::setFilter(unsigned actions, const QString& text)
{
    {
        const QSignalBlocker blockActions(m_actions);
        const QSignalBlocker blockText(m_text);
        const int index = m_actions->findData(actions);
        m_actions->setCurrentIndex(index >= 0 ? index : 0);
        m_text->setText(text);
    }
    m_filterTimer->stop();
    m_model->setFilter(actions, text.trimmed());
    setEvent(m_cursor);
    m_count->setText(m_model->isFiltered() ? QStringLiteral("%L1 matching").arg(m_model->rowCount()) : QString());
}

void EventsView::applyFilter()
{
    setFilter(m_actions->currentData().toUInt(), m_text->text());
}

void EventsView::setEvent(int64_t event)
{
    m_cursor = event;
    const int row = m_model->rowAtOrBefore(event);
    if (row < 0)
        return;
    m_following = true;
    const QModelIndex index = m_model->index(row, 0);
    m_table->selectionModel()->setCurrentIndex(index, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    m_table->scrollTo(index, QAbstractItemView::PositionAtCenter);
    m_following = false;
}

int64_t EventsView::selectedEvent() const
{
    const QModelIndex current = m_table->selectionModel()->currentIndex();
    return current.isValid() ? m_model->eventAt(current.row()) : -1;
}

void EventsView::focusSearch()
{
    m_text->setFocus(Qt::ShortcutFocusReason);
    m_text->selectAll();
}

} // namespace oomlens
