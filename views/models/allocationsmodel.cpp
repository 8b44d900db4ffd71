#include "views/models/allocationsmodel.h"

#include "core/analysis/compileattribution.h"
#include "core/analysis/poolowners.h"
#include "core/analysis/userframe.h"

#include "views/categorycolors.h"
#include "views/viewutil.h"

namespace oomlens {

AllocationsModel::AllocationsModel(QObject* parent)
    : QAbstractTableModel(parent)
{ }

void AllocationsModel::clear()
{
    beginResetModel();
    m_data.reset();
    m_generated.reset();
    m_stackText.clear();
    m_rows.clear();
    m_totalBytes = 0;
    endResetModel();
}

void AllocationsModel::setMoment(std::shared_ptr<const TimelineData> data, int64_t event)
{
    beginResetModel();
    if (data != m_data) {
        m_stackText.clear();
        m_annotationText.clear();
        m_pools = data && data->device() ? privatePools(data->snapshot(), *data->device()) : PrivatePools {};
        m_generated.reset();
        if (data && data->device())
            m_generated.emplace(*data->snapshot().frames, *data->snapshot().strings);
    }
    m_data = std::move(data);
    m_event = event;
    m_rows.clear();
    m_totalBytes = 0;
    if (m_data && m_data->device()) {
        const auto& allocations = m_data->device()->allocations;
        for (size_t i = 0; i < allocations.size(); ++i) {
            const Allocation& allocation = allocations[i];
            const bool born = allocation.allocEvent <= event;
            const bool alive = allocation.freeEvent < 0 || allocation.freeEvent > event;
            if (born && alive) {
                m_rows.push_back(int32_t(i));
                m_totalBytes += allocation.requestedSize;
            }
        }
        // Biggest first: the question is always "what is taking the space".
        std::stable_sort(m_rows.begin(), m_rows.end(), [&](int32_t a, int32_t b) {
            return allocations[size_t(a)].requestedSize > allocations[size_t(b)].requestedSize;
        });
    }
    endResetModel();
}

int AllocationsModel::rowCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : int(m_rows.size());
}

int AllocationsModel::columnCount(const QModelIndex& parent) const
{
    return parent.isValid() ? 0 : ColumnCount;
}

QVariant AllocationsModel::data(const QModelIndex& index, int role) const
{
    if (!checkIndex(index, CheckIndexOption::IndexIsValid) || !m_data)
        return {};
    const int32_t allocationIndex = m_rows[size_t(index.row())];
    const Allocation& allocation = m_data->device()->allocations[size_t(allocationIndex)];
    switch (role) {
    case Qt::DisplayRole:
        return displayText(allocation, allocationIndex, index.column());
    case SortRole:
        return sortKey(allocation, allocationIndex, index.column());
    case FilterRole:
        return filterText(allocation, allocationIndex);
    case BytesRole:
        return qulonglong(allocation.requestedSize);
    case AllocationRole:
        return allocationIndex;
    case Qt::ToolTipRole:
        return toolTip(allocation, allocationIndex);
    case Qt::DecorationRole:
        if (index.column() == CategoryColumn)
            return colors::category(allocation.category);
        break;
    case Qt::TextAlignmentRole:
        if (index.column() == SizeColumn || index.column() == StepColumn)
            return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
        break;
    }
    return {};
}

QVariant AllocationsModel::displayText(const Allocation& allocation, int32_t allocationIndex, int column) const
{
    switch (column) {
    case SizeColumn:
        return bytesText(allocation.requestedSize);
    case CategoryColumn:
        return categoryText(allocation.category);
    case PhaseColumn:
        return phaseText(allocation.phase);
    case StepColumn:
        return allocation.step >= 0 ? QString::number(allocation.step) : QStringLiteral("—");
    case AllocatedAtColumn:
        return allocation.allocEvent >= 0 ? QStringLiteral("#%1").arg(allocation.allocEvent)
                                          : QStringLiteral("before the trace");
    case LocationColumn: {
        // Allocations older than the trace, and traces recorded without stacks, have none.
        const QString location = locationText(allocation);
        return location.isEmpty() ? QStringLiteral("— no stack recorded") : location;
    }
    case PoolColumn:
        return poolText(allocation);
    case CompiledColumn:
        return compiledText(allocation);
    case NotesColumn:
        return notesText(allocationIndex);
    }
    return {};
}

QVariant AllocationsModel::sortKey(const Allocation& allocation, int32_t allocationIndex, int column) const
{
    switch (column) {
    case SizeColumn:
        return qulonglong(allocation.requestedSize);
    case CategoryColumn:
        return int(allocation.category);
    case PhaseColumn:
        return int(allocation.phase);
    case StepColumn:
        return allocation.step;
    case AllocatedAtColumn:
        return qlonglong(allocation.allocEvent);
    case LocationColumn:
        return locationText(allocation);
    case PoolColumn:
        return poolText(allocation);
    case CompiledColumn:
        return compiledText(allocation);
    case NotesColumn:
        return notesText(allocationIndex);
    }
    return {};
}

QString AllocationsModel::locationText(const Allocation& allocation) const
{
    const Snapshot& snapshot = m_data->snapshot();
    return topFrameText(*snapshot.frames, *snapshot.strings, allocation.stack);
}

QString AllocationsModel::filterText(const Allocation& allocation, int32_t allocationIndex) const
{
    auto it = m_stackText.find(allocation.stack.value);
    if (it == m_stackText.end()) {
        const Snapshot& snapshot = m_data->snapshot();
        it = m_stackText.insert(
            allocation.stack.value, stackSearchText(*snapshot.frames, *snapshot.strings, allocation.stack));
    }
    return QString(categoryText(allocation.category) + QLatin1Char(' ') + phaseText(allocation.phase) + QLatin1Char(' ')
        + poolText(allocation) + QLatin1Char(' ') + compiledText(allocation) + QLatin1Char(' ')
        + annotationText(allocationIndex) + *it);
}

QString AllocationsModel::toolTip(const Allocation& allocation, int32_t allocationIndex) const
{
    const DeviceAnalysis& device = *m_data->device();
    const Snapshot& snapshot = m_data->snapshot();
    QString reason;
    if (allocation.reason < device.reasons.size())
        reason = toQString(device.reasons[allocation.reason]);
    QString text = bytesText(allocation.requestedSize) + QStringLiteral(" — ") + categoryText(allocation.category);
    if (!reason.isEmpty())
        text += QStringLiteral("\nWhy: ") + reason;
    if (const QString pool = poolText(allocation); m_pools.hasPrivate() && !pool.isEmpty())
        text += QStringLiteral("\nPool: ") + pool;
    text += compiledToolTip(allocation);
    for (const AllocationAnnotation* note : m_data->allocationAnnotations().of(allocationIndex)) {
        if (note->event <= m_event)
            text += QStringLiteral("\nAnnotated: ") + toQString(note->text);
    }
    const QString stack = stackText(*snapshot.frames, *snapshot.strings, allocation.stack, 12);
    return stack.isEmpty() ? text : QString(text + QStringLiteral("\n\n") + stack);
}

QString AllocationsModel::compiledToolTip(const Allocation& allocation) const
{
    const Snapshot& snapshot = m_data->snapshot();
    const CompileAttribution compiled = compileAttribution(snapshot, *m_data->device(), allocation, *m_generated);
    if (!compiled.compiled())
        return {};
    QString text = QStringLiteral("\nCompiled: ")
        + (compiled.context.empty() ? QStringLiteral("torch.compile output code") : toQString(compiled.context));
    if (compiled.generatedFrame)
        text += QStringLiteral(" (generated ") + toQString(frameSiteText(snapshot, *compiled.generatedFrame))
            + QStringLiteral(")");
    return text;
}

QVariant AllocationsModel::headerData(int section, Qt::Orientation orientation, int role) const
{
    if (orientation != Qt::Horizontal || role != Qt::DisplayRole)
        return {};
    switch (section) {
    case SizeColumn:
        return QStringLiteral("Size");
    case CategoryColumn:
        return QStringLiteral("Category");
    case PhaseColumn:
        return QStringLiteral("Phase");
    case StepColumn:
        return QStringLiteral("Step");
    case AllocatedAtColumn:
        return QStringLiteral("Allocated at");
    case LocationColumn:
        return QStringLiteral("Location");
    case PoolColumn:
        return QStringLiteral("Pool");
    case CompiledColumn:
        return QStringLiteral("Compiled region");
    case NotesColumn:
        return QStringLiteral("Annotations");
    }
    return {};
}

QString AllocationsModel::poolText(const Allocation& allocation) const
{
    const std::optional<PoolId> pool = m_pools.poolOf(allocation);
    if (!pool)
        return m_pools.hasPrivate() ? QStringLiteral("— segment released before the dump") : QStringLiteral("default");
    return pool->isDefault() ? QStringLiteral("default") : toQString(poolLabel(m_pools, *pool));
}

QString AllocationsModel::annotationText(int32_t allocationIndex) const
{
    // The record_function spans and user metadata ("step=3") the allocation was made in, so the
    // filter finds "Optimizer.step" or "step=3".
    auto it = m_annotationText.find(allocationIndex);
    if (it != m_annotationText.end())
        return *it;
    const Allocation& allocation = m_data->device()->allocations[size_t(allocationIndex)];
    QString text;
    if (allocation.allocEvent >= 0) {
        for (const AnnotationSpan* span : spansAt(m_data->annotationSpans(), allocation.allocEvent))
            text += toQString(span->name) + QLatin1Char(' ');
        const TraceEvent& event = m_data->trace()->events[size_t(allocation.allocEvent)];
        if (event.userMetadata.isValid())
            text += toQString(m_data->snapshot().strings->get(event.userMetadata)) + QLatin1Char(' ');
    }
    text += toQString(m_data->allocationAnnotations().joinedText(allocationIndex, " ")) + QLatin1Char(' ');
    return *m_annotationText.insert(allocationIndex, text);
}

QString AllocationsModel::notesText(int32_t allocationIndex) const
{
    // Only the notes made by the moment shown: at an earlier cursor the tensor was not yet annotated.
    QStringList texts;
    for (const AllocationAnnotation* note : m_data->allocationAnnotations().of(allocationIndex)) {
        if (note->event <= m_event && !note->text.empty())
            texts << toQString(note->text);
    }
    return texts.join(QStringLiteral("; "));
}

QString AllocationsModel::compiledText(const Allocation& allocation) const
{
    const CompileAttribution compiled
        = compileAttribution(m_data->snapshot(), *m_data->device(), allocation, *m_generated);
    if (!compiled.compiled())
        return {};
    return compiled.context.empty() ? QStringLiteral("compiled code") : toQString(compiled.context);
}

} // namespace oomlens
