#pragma once

#include "common/testutil.h"
#include "core/caseanalysis.h"
#include "opening/analyzedcase.h"
#include "parsers/inputloader.h"

#include <memory>

namespace oomlens::test {

// tests/data/<relative> opened and analysed as the app holds a case. Header-only: only the
// view suites, which link the views library, include it.
inline AnalyzedCasePtr loadTestCase(const QString& relative)
{
    Case input;
    addFile(input, QString(testDataDir() + QLatin1Char('/') + relative).toStdString());
    CaseAnalysis analysis = analyzeCase(input);
    return std::make_shared<const AnalyzedCase>(
        AnalyzedCase { std::move(input), std::move(analysis), relative.toStdString() });
}

} // namespace oomlens::test
