#pragma once

#include "core/diagnosis.h"

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace oomlens {

// The catalogue of product.md §3: its titles, and its order (used to break confidence ties).
std::string_view catalogueTitle(DiagnosisId id);

// Causes that lie outside the workload's own memory: another process on the card, a per-process
// cap, the host's RAM. The snapshot's allocator cannot show them; the workload's fixes do not touch them.
bool isOutsideTheWorkload(DiagnosisId id);

// A diagnosis with the catalogue title and a confidence clamped to [0, 0.97].
Diagnosis makeDiagnosis(DiagnosisId id, double confidence, std::string summary);

// Most likely first; ties in catalogue order.
void sortDiagnoses(std::vector<Diagnosis>& diagnoses);

// Folds `incoming` into `into`: the same id from two sources (text and snapshot, two messages)
// strengthens one diagnosis instead of appearing twice. `weight` scales incoming confidences of
// ids not yet present (evidence from an earlier, superseded OOM counts for less).
void mergeDiagnoses(std::vector<Diagnosis>& into, std::vector<Diagnosis> incoming, double weight = 1.0);

double clamp01(double value);

// part / whole as a whole percentage for evidence lines ("37%"); "?%" when whole is 0.
std::string percentText(uint64_t part, uint64_t whole);
// part / whole; 0 when whole is 0.
double safeRatio(uint64_t part, uint64_t whole);

} // namespace oomlens
