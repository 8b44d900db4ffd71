#include "common/diagnosisids.h"

#include <QTest>

namespace oomlens {

char* toString(DiagnosisId id)
{
    return QTest::toString(test::diagnosisName(id));
}

} // namespace oomlens

namespace oomlens::test {

const Diagnosis* findDiagnosis(const std::vector<Diagnosis>& diagnoses, DiagnosisId id)
{
    for (const auto& d : diagnoses) {
        if (d.id == id)
            return &d;
    }
    return nullptr;
}

QString diagnosisName(DiagnosisId id)
{
    return QString::fromStdString(diagnosisIdText(id));
}

std::string diagnosisNames(const std::vector<Diagnosis>& diagnoses)
{
    std::string text;
    for (const auto& d : diagnoses)
        text += diagnosisIdText(d.id) + " ";
    return text;
}

} // namespace oomlens::test
