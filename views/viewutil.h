#pragma once

#include "core/ids.h"
#include "core/phase.h"

#include <QString>
#include <QStringList>

class QFontMetrics;

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace oomlens {

class FrameTable;
class StringTable;

inline QString toQString(std::string_view text)
{
    return QString::fromUtf8(text.data(), static_cast<qsizetype>(text.size()));
}

// Paths between the views (QString) and the engine (std::string, UTF-8), which takes no Qt type.
inline std::vector<std::string> toStdStrings(const QStringList& list)
{
    std::vector<std::string> strings;
    strings.reserve(size_t(list.size()));
    for (const QString& each : list)
        strings.push_back(each.toStdString());
    return strings;
}

inline QStringList toQStringList(const std::vector<std::string>& strings)
{
    QStringList list;
    list.reserve(qsizetype(strings.size()));
    for (const std::string& each : strings)
        list.append(toQString(each));
    return list;
}

QString bytesText(uint64_t bytes);
// A difference between two runs: "+1.10 GiB", "-5.60 GiB", "0" (formatBytesDelta).
QString bytesDeltaText(int64_t bytes);
QString durationText(int64_t microseconds);
// "Backward", "Optimizer step": the phase as a person reads it.
QString phaseText(Phase phase);
QString categoryText(Category category);
// Widest of the category / phase names in `metrics`, for column widths that fit every row
// without measuring the rows.
int widestCategoryText(const QFontMetrics& metrics);
int widestPhaseText(const QFontMetrics& metrics);

// "forward (model.py:42)" for the first frame of a stack that is not PyTorch's own plumbing.
QString topFrameText(const FrameTable& frames, const StringTable& strings, StackId stack);
// Up to `limit` frames, innermost first, one per line.
QString stackText(const FrameTable& frames, const StringTable& strings, StackId stack, int limit);
// Every frame of a stack with full file paths, one line each: what text search looks through.
QString stackSearchText(const FrameTable& frames, const StringTable& strings, StackId stack);

} // namespace oomlens
