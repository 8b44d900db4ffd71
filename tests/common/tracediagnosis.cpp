#include "common/tracediagnosis.h"

#include "common/analysisfixtures.h"
#include "core/diagnosis/diagnosistext.h"

#include <QDebug>
#include <QString>
#include <QtGlobal>

#include <algorithm>

namespace oomlens::test {

std::vector<Diagnosis> diagnoseTrace(const std::string& trace, const SnapshotDiagnosisContext& context)
{
    auto diagnoses = diagnoseSnapshot(analyzeTrace(trace), context);
    if (qEnvironmentVariableIsSet("OOMLENS_DEBUG_DIAG"))
        qDebug().noquote() << QString::fromStdString(diagnosesToText(diagnoses, false));
    return diagnoses;
}

bool hasEvidence(const Diagnosis& d, const std::string& needle)
{
    return std::any_of(d.evidence.begin(), d.evidence.end(),
        [&](const Evidence& e) { return e.text.find(needle) != std::string::npos; });
}

} // namespace oomlens::test
