#include "common/analysisfixtures.h"

#include "common/testutil.h"
#include "common/tracebuilder.h"
#include "parsers/inputloader.h"
#include "parsers/snapshotreader.h"

#include <QDir>
#include <QFile>

#include <nlohmann/json.hpp>

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

std::vector<ScenarioLabel> failingScenarioLabels()
{
    std::vector<ScenarioLabel> result;
    const QDir dir(testDataDir() + QStringLiteral("/scenarios"));
    for (const QString& file : dir.entryList({ QStringLiteral("*.json") }, QDir::Files, QDir::Name)) {
        const QByteArray bytes = readFile(dir.filePath(file));
        const auto label = nlohmann::json::parse(bytes.constData(), bytes.constData() + bytes.size());
        if (!label.value("oom", false))
            continue;
        result.push_back({ file.chopped(5), QString::fromStdString(label.value("case", std::string())) });
    }
    return result;
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

} // namespace oomlens::test
