#pragma once

// The Qt Test slots every simulated scenario family (D, E, F) runs, in one base: the generator
// reproduces the data, every scenario reads, its top diagnosis is the label's case, its bands match
// the simulation's bytes, and no fix proposes checkpointing where it is on. A family's suite derives
// from it, names its folder and generator, and adds its own yardstick (everyClassIsCovered); QtTest
// runs the inherited private slots as the suite's own.

#include "common/scenariofamily.h"

#include <QObject>
#include <QString>
#include <QStringList>

#include <map>

namespace oomlens::test {

class ScenarioFamilySuite : public QObject
{
    Q_OBJECT
public:
    ScenarioFamilySuite(const ScenarioFamily& family, QString generatorScript);

private Q_SLOTS:
    // The data is what the generator writes: run it into a second folder and compare every file
    // byte for byte. The generator also re-checks every label's physics (the run as written fails,
    // its counterfactuals hold), so a change to it that breaks a label fails here.
    void generatorReproducesTheData();

    void scenariosRead_data();
    // Every input of every scenario loads, as one snapshot and at least one OOM message.
    void scenariosRead();

    void scenarioDiagnosis_data();
    // The top diagnosis is the label's case (or one it allows), from the snapshot alone and with the
    // OOM text added.
    void scenarioDiagnosis();

    void bands_data();
    void bands();

    void checkpointingNotProposed_data();
    void checkpointingNotProposed();

private:
    const ScenarioFamily& m_family;
    QString m_generatorScript;
};

// What a family's labels hold, for its yardstick: the scenarios, how many of each case, and how many
// are controls (a classic cause under a distributed or engine recipe).
struct FamilyCensus
{
    QStringList names;
    std::map<QString, int> perCase;
    int controls = 0;
};

// Counts the labels and fails the running test on one missing a field every simulated family writes
// (its files, phase, step, card, checkpointing, bytes at the OOM and the peak, pending and
// private-pool bytes). Callers return when QTest::currentTestFailed().
void countLabels(const ScenarioFamily& family, FamilyCensus& census);

} // namespace oomlens::test
