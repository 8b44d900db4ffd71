#include "views/viewutil.h"

#include "core/analysis/userframe.h"
#include "core/presentation/labels.h"
#include "core/snapshot.h"
#include "core/units.h"

#include <QFontMetrics>
#include <QStringList>

#include <algorithm>

namespace oomlens {

QString bytesText(uint64_t bytes)
{
    return QString::fromStdString(formatBytes(bytes));
}

QString bytesDeltaText(int64_t bytes)
{
    return QString::fromStdString(formatBytesDelta(bytes));
}

QString durationText(int64_t microseconds)
{
    return QString::fromStdString(formatDurationUs(microseconds));
}

QString phaseText(Phase phase)
{
    return toQString(phaseLabel(phase));
}

QString categoryText(Category category)
{
    return toQString(categoryLabel(category));
}

int widestCategoryText(const QFontMetrics& metrics)
{
    int widest = 0;
    for (int c = 0; c < categoryCount; ++c)
        widest = std::max(widest, metrics.horizontalAdvance(categoryText(Category(c))));
    return widest;
}

int widestPhaseText(const QFontMetrics& metrics)
{
    int widest = 0;
    for (int p = 0; p < phaseCount; ++p)
        widest = std::max(widest, metrics.horizontalAdvance(phaseText(Phase(p))));
    return widest;
}

QString topFrameText(const FrameTable& frames, const StringTable& strings, StackId stack)
{
    const std::optional<FrameId> chosen = userFrame(frames, strings, stack);
    return chosen ? toQString(frameLabel(frames, strings, *chosen, FramePath::FileName)) : QString();
}

QString stackText(const FrameTable& frames, const StringTable& strings, StackId stack, int limit)
{
    if (!stack.isValid())
        return {};
    QStringList lines;
    for (FrameId id : frames.stack(stack)) {
        if (lines.size() >= limit) {
            lines << QStringLiteral("…");
            break;
        }
        lines << toQString(frameLabel(frames, strings, id, FramePath::FileName));
    }
    return lines.join(QLatin1Char('\n'));
}

QString stackSearchText(const FrameTable& frames, const StringTable& strings, StackId stack)
{
    if (!stack.isValid())
        return {};
    QString text;
    for (FrameId id : frames.stack(stack)) {
        const Frame& frame = frames.frame(id);
        text += toQString(strings.get(frame.name)) + QLatin1Char(' ') + toQString(strings.get(frame.filename))
            + QLatin1Char(':') + QString::number(frame.line) + QLatin1Char('\n');
    }
    return text;
}

} // namespace oomlens
