#pragma once

#include "common/diagnosisids.h"
#include "core/analysis/snapshotanalysis.h"
#include "core/case.h"
#include "core/diagnosis.h"

#include <QString>

#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace oomlens::test {

// Reads and analyses tests/data/scenarios/<name>.pickle; a scenario that does not read aborts
// the run (the generator's output is broken, not the code under test).
SnapshotAnalysis analyzeScenario(const QString& name);

// A scenario as a user would open it: `<base>.pickle`, and with its text the `<base>.oom.txt` and
// `<base>.summary.txt` beside it where they exist. `base` is the path without an extension.
Case scenarioCase(const QString& base, bool withText);

// Every bundled family-A scenario that ends in an OOM, by name, with the diagnosis its label says
// should rank first (`case`); the healthy run has nothing to rank and is left out.
struct ScenarioLabel
{
    QString name;
    QString expected;
};
std::vector<ScenarioLabel> failingScenarioLabels();

// buildSnapshot() for fixtures written in the test itself: a bad line aborts the run with the
// builder's message, since the test, not the code under test, is wrong.
std::shared_ptr<const Snapshot> traceSnapshot(std::string_view text);
SnapshotAnalysis analyzeTrace(std::string_view text, const AnalysisOptions& options = {});

} // namespace oomlens::test
