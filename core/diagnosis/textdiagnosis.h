#pragma once

#include "core/diagnosis.h"
#include "core/diagnosis/fixladder.h"
#include "core/diagnosis/oomfacts.h"
#include "core/textinputs.h"

#include <string>
#include <vector>

namespace oomlens {

// Diagnoses from pasted text alone, as a case of that text alone gets them (diagnoseCase): the
// text's rules, the serving step (an inference run's causes and ladder, or fixes that hold for
// training and inference both where the text shows neither) and the ranking. One path: what a
// test sees here is what the CLI, the report and the app show for the same text.
std::vector<Diagnosis> diagnoseText(const TextFindings& findings);

// The text's own rules, before the serving step and the ranking (diagnoseCase merges them with a
// snapshot's): OOM messages (with their tracebacks), memory_summary tables, nvidia-smi tables and
// allocator settings. Text carries no bands, so confidences stay modest and projections are given
// only where the message's numbers allow (fragmented bytes). Several OOMs in one log: the last one
// leads, earlier ones add weight and evidence.
std::vector<Diagnosis> diagnoseTextRules(const TextFindings& findings);

// One message, with the rest of the findings as context (settings, summaries, nvidia-smi).
std::vector<Diagnosis> diagnoseOomMessage(const OomMessage& message, const TextFindings& context);

// Allocator settings and the budget a message implies, for fixes built elsewhere too.
// `ownTraceback`: the message's own traceback, read with the bare ones for what the model is.
FixContext textFixContext(
    const OomFacts& facts, const TextFindings& context, const TracebackInfo* ownTraceback = nullptr);

// How many GPUs the run uses, as far as the text shows: torchrun rank prefixes, else the GPUs an
// nvidia-smi table lists. Count 0 when neither shows two or more.
struct GpuCount
{
    int count = 0;
    std::string evidence;
};
GpuCount textGpuCount(const TextFindings& findings);

// Where the findings say expandable segments are on ("export PYTORCH_CUDA_ALLOC_CONF=..." line 3),
// empty when they do not. The message's own hint is never such evidence.
std::string expandableSegmentsSource(const TextFindings& findings);

} // namespace oomlens
