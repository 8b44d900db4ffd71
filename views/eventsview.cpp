#include "views/eventsview.h"

#include "views/eventsmodel.h"

#include <QHeaderView>
#include <QItemSelectionModel>
#include <QTableView>
#include <QVBoxLayout>

namespace oomlens {

EventsView::EventsView(QWidget* parent)
    : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
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
    layout->addWidget(m_table);
    connect(
        m_table->selectionModel(), &QItemSelectionModel::currentRowChanged, this, [this](const QModelIndex& current) {
            if (!m_following && current.isValid())
                emit cursorRequested(current.row());
        });
}

void EventsView::setTimeline(std::shared_ptr<const TimelineData> data)
{
    m_model->setTimeline(std::move(data));
    for (int column : { EventsModel::IndexColumn, EventsModel::TimeColumn, EventsModel::ActionColumn,
             EventsModel::SizeColumn, EventsModel::AddressColumn, EventsModel::CategoryColumn })
        m_table->setColumnWidth(
            column, m_table->fontMetrics().horizontalAdvance(QStringLiteral("0x7f0000000000")) + 16);
}

void EventsView::setEvent(int64_t event)
{
    if (event < 0 || event >= m_model->rowCount())
        return;
    m_following = true;
    const QModelIndex index = m_model->index(int(event), 0);
    m_table->selectionModel()->setCurrentIndex(index, QItemSelectionModel::ClearAndSelect | QItemSelectionModel::Rows);
    m_table->scrollTo(index, QAbstractItemView::PositionAtCenter);
    m_following = false;
}

int64_t EventsView::selectedEvent() const
{
    const QModelIndex current = m_table->selectionModel()->currentIndex();
    return current.isValid() ? current.row() : -1;
}

} // namespace oomlens
