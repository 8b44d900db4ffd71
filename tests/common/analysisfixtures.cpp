#include "common/analysisfixtures.h"

#include "common/testutil.h"
#include "common/tracebuilder.h"
#include "parsers/inputloader.h"
#include "parsers/snapshotreader.h"

#include <QFile>

#include <string_view>

namespace oomlens::test {

SnapshotAnalysis analyzeScenario(const QString& name)
{
    const QByteArray bytes = readFile(testDataDir() + QStringLiteral("/scenarios/") + name + QStringLiteral(".pickle"));
    const auto result = readSnapshot(std::string_view(bytes.constData(), static_cast<size_t>(bytes.size())));
    if (!result.snapshot)
        qFatal("cannot read scenario %s: %s", qPrintable(name), result.error.c_str());
    return analyzeSnapshot(result.snapshot);
}

Case scenarioCase(const QString& base, bool withText)
{
    Case input;
    addFile(input, QString(base + QStringLiteral(".pickle")).toStdString());
    if (withText) {
        for (const char* suffix : { ".oom.txt", ".summary.txt" }) {
            if (QFile::exists(base + QLatin1String(suffix)))
                addFile(input, QString(base + QLatin1String(suffix)).toStdString());
        }
    }
    return input;
}

std::shared_ptr<const Snapshot> traceSnapshot(std::string_view text)
{
    std::string error;
    auto snapshot = buildSnapshot(text, &error);
    if (!snapshot)
        qFatal("trace text: %s", error.c_str());
    return snapshot;
}

SnapshotAnalysis analyzeTrace(std::string_view text, const AnalysisOptions& options)
{
    return analyzeSnapshot(traceSnapshot(text), options);
}

const Diagnosis* findDiagnosis(const std::vector<Diagnosis>& diagnoses, const std::string& id)
{
    for (const auto& d : diagnoses) {
        if (d.id == id)
            return &d;
    }
    return nullptr;
}

} // namespace oomlens::test
