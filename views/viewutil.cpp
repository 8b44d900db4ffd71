#include "views/viewutil.h"

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

QString durationText(int64_t microseconds)
{
    return QString::fromStdString(formatDurationUs(microseconds));
}

QString phaseText(Phase phase)
{
    switch (phase) {
    case Phase::Load:
        return QStringLiteral("Loading");
    case Phase::Forward:
        return QStringLiteral("Forward");
    case Phase::Backward:
        return QStringLiteral("Backward");
    case Phase::Optimizer:
        return QStringLiteral("Optimizer step");
    case Phase::Eval:
        return QStringLiteral("Evaluation");
    case Phase::Data:
        return QStringLiteral("Data loading");
    case Phase::Unknown:
        break;
    }
    return QStringLiteral("Unknown");
}

QString categoryText(Category category)
{
    switch (category) {
    case Category::Parameters:
        return QStringLiteral("Parameters");
    case Category::Gradients:
        return QStringLiteral("Gradients");
    case Category::OptimizerState:
        return QStringLiteral("Optimizer state");
    case Category::Activations:
        return QStringLiteral("Activations");
    case Category::Temporaries:
        return QStringLiteral("Temporaries");
    case Category::Inputs:
        return QStringLiteral("Inputs");
    case Category::Unknown:
        break;
    }
    return QStringLiteral("Unknown");
}

namespace {

QString frameLine(const FrameTable& frames, const StringTable& strings, FrameId id)
{
    const Frame& frame = frames.frame(id);
    QString file = toQString(strings.get(frame.filename));
    const qsizetype slash = file.lastIndexOf(QLatin1Char('/'));
    if (slash >= 0)
        file = file.mid(slash + 1);
    return toQString(strings.get(frame.name)) + QStringLiteral(" (") + file + QLatin1Char(':')
        + QString::number(frame.line) + QLatin1Char(')');
}

// The first Python frame outside torch/ is the model code that asked for memory; C++ frames
// (stacks='all') and PyTorch's own Python are plumbing.
bool isUserPython(std::string_view filename)
{
    return filename.ends_with(".py") && filename.find("/torch/") == std::string_view::npos;
}

} // namespace

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
    for (Phase phase :
        { Phase::Unknown, Phase::Load, Phase::Forward, Phase::Backward, Phase::Optimizer, Phase::Eval, Phase::Data })
        widest = std::max(widest, metrics.horizontalAdvance(phaseText(phase)));
    return widest;
}

QString topFrameText(const FrameTable& frames, const StringTable& strings, StackId stack)
{
    if (!stack.isValid())
        return {};
    const auto view = frames.stack(stack);
    if (view.empty())
        return {};
    for (FrameId id : view) {
        if (isUserPython(strings.get(frames.frame(id).filename)))
            return frameLine(frames, strings, id);
    }
    for (FrameId id : view) {
        if (strings.get(frames.frame(id).filename).ends_with(".py"))
            return frameLine(frames, strings, id);
    }
    return frameLine(frames, strings, view[0]);
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
        lines << frameLine(frames, strings, id);
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
