#pragma once

#include "core/textinputs.h"

#include <string_view>

namespace oomlens {

// The file of the frame a paste opens with when it starts at the innermost frame's source line,
// its "File ..." line left behind: the parser makes a frame of that code line alone.
inline constexpr std::string_view pasteOpeningLineFile = "(cut before this line)";

// Decides the training phase a traceback failed in from its frames, filling info.phase,
// info.phaseEvidence and info.compiled. The frames are read with the vocabulary the snapshot's
// stacks are read with (framewords.h); what only a traceback has, the source line printed under
// each frame, adds its own words ("loss.backward()", "optimizer.step()", "out = model(x)").
// The phases rank as a snapshot's stacks rank them (rankPhase, phaseranking.h): the innermost kind
// of work, backward over a forward it re-runs, evaluation as a mode over the forward.
void decideTracebackPhase(TracebackInfo& info);

} // namespace oomlens
