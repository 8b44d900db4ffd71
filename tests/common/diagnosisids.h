#pragma once

#include "core/diagnosis.h"

#include <QString>

#include <string>
#include <vector>

namespace oomlens {

// QCOMPARE prints a DiagnosisId by its catalogue name instead of its number (found by ADL).
char* toString(DiagnosisId id);

} // namespace oomlens

namespace oomlens::test {

// The diagnosis with this catalogue id, or nullptr.
const Diagnosis* findDiagnosis(const std::vector<Diagnosis>& diagnoses, DiagnosisId id);

// The catalogue name, for comparing with labels and JSON rows, which spell ids as strings.
QString diagnosisName(DiagnosisId id);

// "leak capacity fragmentation ": the ids in rank order, for a failure message.
std::string diagnosisNames(const std::vector<Diagnosis>& diagnoses);

} // namespace oomlens::test
