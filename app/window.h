#pragma once

namespace oomlens {

// The GUI: `oomlens [--screenshot DIR] [FILE...]` in a window (the desktop build only).
// `offscreen` renders without a display (`--screenshot` where no platform was chosen). Returns
// the exit status once the window closes.
int runWindow(int& argc, char** argv, bool offscreen);

} // namespace oomlens
