#pragma once

// The command line's Qt string lists and the engine's paths (std::string, UTF-8): the engine
// (opening/, parsers/) takes no Qt type, so the CLI converts at its calls.

#include <QStringList>

#include <string>
#include <vector>

namespace oomlens::cli {

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
        list.append(QString::fromStdString(each));
    return list;
}

} // namespace oomlens::cli
