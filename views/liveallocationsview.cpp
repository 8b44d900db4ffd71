#include "views/liveallocationsview.h"

#include "views/allocationsmodel.h"
#include "views/viewutil.h"

#include <QHBoxLayout>
#include <QHeaderView>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QVBoxLayout>

namespace oomlens {

LiveAllocationsView::LiveAllocationsView(QWidget* parent)
    : QWidget(parent)
{
    auto* layout = new QVBoxLayout(this);
    layout->setContentsMargins(4, 4, 4, 4);
    auto* bar = new QHBoxLayout;
    m_header = new QLabel(this);
    m_header->setTextFormat(Qt::RichText);
    bar->addWidget(m_header, 1);
    auto* peak = new QPushButton(QStringLiteral("At peak"), this);
    peak->setToolTip(QStringLiteral("Move the cursor to the allocation peak"));
    auto* oom = new QPushButton(QStringLiteral("At OOM"), this);
    oom->setToolTip(QStringLiteral("Move the cursor to the first out-of-memory event"));
    bar->addWidget(peak);
    bar->addWidget(oom);
    m_filter = new QLineEdit(this);
    m_filter->setPlaceholderText(QStringLiteral("Filter by category, phase or stack…"));
    m_filter->setClearButtonEnabled(true);
    bar->addWidget(m_filter);
    layout->addLayout(bar);

    m_model = new AllocationsModel(this);
    m_proxy = new QSortFilterProxyModel(this);
    m_proxy->setSourceModel(m_model);
    m_proxy->setSortRole(AllocationsModel::SortRole);
    m_proxy->setFilterRole(AllocationsModel::FilterRole);
    m_proxy->setFilterCaseSensitivity(Qt::CaseInsensitive);
    m_proxy->setFilterKeyColumn(0);
    m_table = new QTableView(this);
    m_table->setModel(m_proxy);
    m_table->setSortingEnabled(true);
    m_table->sortByColumn(AllocationsModel::SizeColumn, Qt::DescendingOrder);
    m_table->verticalHeader()->hide();
    m_table->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
    m_table->setSelectionBehavior(QAbstractItemView::SelectRows);
    m_table->setAlternatingRowColors(true);
    m_table->horizontalHeader()->setStretchLastSection(true);
    layout->addWidget(m_table, 1);

    connect(m_filter, &QLineEdit::textChanged, m_proxy, &QSortFilterProxyModel::setFilterFixedString);
    connect(peak, &QPushButton::clicked, this, [this] {
        if (m_data && m_data->device())
            emit cursorRequested(m_data->device()->peakEvent);
    });
    connect(oom, &QPushButton::clicked, this, [this] {
        if (m_data && m_data->device() && !m_data->device()->ooms.empty())
            emit cursorRequested(m_data->device()->ooms.front().eventIndex);
    });
}

void LiveAllocationsView::setTimeline(std::shared_ptr<const TimelineData> data)
{
    m_data = std::move(data);
    setEvent(m_data && m_data->device() ? m_data->device()->peakEvent : -1);
}

void LiveAllocationsView::setEvent(int64_t event)
{
    if (!m_data) {
        m_model->clear();
        m_header->clear();
        return;
    }
    m_model->setMoment(m_data, event);
    m_header->setText(QStringLiteral("<b>Live after event #%1</b>: %2 allocations, %3")
                          .arg(event)
                          .arg(m_model->rowCount())
                          .arg(bytesText(m_model->totalBytes())));
    m_table->resizeColumnToContents(AllocationsModel::SizeColumn);
    m_table->resizeColumnToContents(AllocationsModel::CategoryColumn);
}

} // namespace oomlens
