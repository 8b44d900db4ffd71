#pragma once

#include "core/analysis/snapshotanalysis.h"

#include <QColor>
#include <QString>

#include <array>
#include <optional>

namespace oomlens {

// The user's preferences, kept in QSettings: which device to analyze, the timeline's axis,
// category colours and a category rules file.
struct AppSettings
{
    std::optional<int32_t> device; // nullopt: the OOM's device, else the busiest one
    bool eventAxis = false; // plot against the event index instead of wall-clock time
    std::array<QColor, categoryCount> categoryColors; // invalid: the built-in colour
    QString rulesPath; // user category rules (JSON or YAML); empty for none

    static AppSettings load();
    void save() const;
    // Pushes the colours into colors::category(); views repaint on their next update.
    void applyColors() const;
    AnalysisOptions analysisOptions() const;
    // Same analysis inputs (device, rules): a change means the open cases must be re-analyzed.
    bool sameAnalysis(const AppSettings& other) const;
};

} // namespace oomlens
