#pragma once

#include <QStringList>

namespace oomlens {

class MainWindow;

// Pictures of every view of the window's current tab (a case's overview, timeline, allocator
// state and events; a Job or Compare tab once computed; the empty state) as PNGs in `directory`,
// plus the timeline chart as SVG. What `oomlens --screenshot DIR FILE...` writes for the README.
// Returns the files written.
QStringList writeWindowScreenshots(MainWindow& window, const QString& directory);

} // namespace oomlens
