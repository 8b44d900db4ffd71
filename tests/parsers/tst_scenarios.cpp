#include "common/testutil.h"
#include "parsers/snapshotreader.h"

#include <QDir>
#include <QFileInfo>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

#include <unordered_set>

using namespace oomlens;

namespace {

QString scenarioDir()
{
    return test::testDataDir() + QStringLiteral("/scenarios");
}

QStringList scenarioNames()
{
    QStringList names;
    const auto labels = QDir(scenarioDir()).entryList({ QStringLiteral("*.json") }, QDir::Files, QDir::Name);
    for (const QString& label : labels)
        names << QFileInfo(label).completeBaseName();
    return names;
}

QJsonObject label(const QString& name)
{
    return QJsonDocument::fromJson(test::readFile(scenarioDir() + QLatin1Char('/') + name + QStringLiteral(".json")))
        .object();
}

} // namespace

class TestScenarios : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void generatorReproducesCommittedFiles();
    void snapshotMatchesLabel_data();
    void snapshotMatchesLabel();
};

// The committed files are the generator's output: a change to tests/tools must come with regenerated
// scenarios, and the generator must stay deterministic (fixed seeds, time base and pickle protocol).
void TestScenarios::generatorReproducesCommittedFiles()
{
    QTemporaryDir out;
    QVERIFY(out.isValid());
    QProcess python;
    python.setProcessChannelMode(QProcess::MergedChannels);
    python.start(QStringLiteral(OOMLENS_PYTHON),
        { QStringLiteral(OOMLENS_SOURCE_DIR "/tests/tools/make_scenarios.py"), out.path() });
    QVERIFY2(python.waitForFinished(280000), "make_scenarios.py did not finish");
    QVERIFY2(python.exitStatus() == QProcess::NormalExit && python.exitCode() == 0, python.readAll().constData());

    const QStringList generated = QDir(out.path()).entryList(QDir::Files, QDir::Name);
    QStringList committed = QDir(scenarioDir()).entryList(QDir::Files, QDir::Name);
    committed.removeAll(QStringLiteral("README.md"));
    QCOMPARE(generated, committed);
    QVERIFY(generated.size() >= 22 * 3);
    for (const QString& file : generated) {
        const QByteArray fresh = test::readFile(out.path() + QLatin1Char('/') + file);
        const QByteArray stored = test::readFile(scenarioDir() + QLatin1Char('/') + file);
        QVERIFY2(fresh == stored, qPrintable(file + QStringLiteral(" differs from a fresh generation")));
    }
}

void TestScenarios::snapshotMatchesLabel_data()
{
    QTest::addColumn<QString>("name");
    const QStringList names = scenarioNames();
    QVERIFY(names.contains(QStringLiteral("healthy")));
    QVERIFY(names.contains(QStringLiteral("fragmentation")));
    for (const QString& name : names)
        QTest::newRow(qPrintable(name)) << name;
}

void TestScenarios::snapshotMatchesLabel()
{
    QFETCH(QString, name);
    const QJsonObject truth = label(name);
    QCOMPARE(truth.value(QStringLiteral("scenario")).toString(), name);
    // `case` is the diagnosis the scenario should get; the scenarios named after a diagnosis get that one.
    const QString diagnosis = truth.value(QStringLiteral("case")).toString();
    QVERIFY(!diagnosis.isEmpty());
    QVERIFY(name.startsWith(diagnosis) || name.endsWith(diagnosis) || name.contains(QLatin1Char('_') + diagnosis));

    const QByteArray bytes = test::readFile(scenarioDir() + QLatin1Char('/') + name + QStringLiteral(".pickle"));
    SnapshotReadOptions options;
    options.allowFallback = false;
    const SnapshotReadResult result = readSnapshot(std::string_view(bytes.constData(), bytes.size()), options);
    QVERIFY2(result.snapshot, result.error.c_str());
    const Snapshot& snap = *result.snapshot;
    QCOMPARE(snap.pickleProtocol, 4);
    QCOMPARE(snap.traces.size(), size_t(1));
    QVERIFY(snap.allocatorSettings.has_value());
    QVERIFY2(snap.warnings.empty(), snap.warnings.empty() ? "" : snap.warnings.front().c_str());

    uint64_t reserved = 0;
    for (const Segment& segment : snap.segments)
        reserved += segment.totalSize;
    const auto& events = snap.traces.front().events;
    QVERIFY(!events.empty());
    const bool oom = truth.value(QStringLiteral("oom")).toBool();
    const QString oomPath = scenarioDir() + QLatin1Char('/') + name + QStringLiteral(".oom.txt");
    QCOMPARE(QFileInfo::exists(oomPath), oom);
    if (!oom) {
        for (const TraceEvent& event : events)
            QVERIFY(event.action != TraceAction::Oom);
        return;
    }
    // The dump happens in the except handler: the trace ends with the allocator's oom entry, unless the script
    // cleaned up first (events_after_oom), and then the segments are those of the dump, not of the failure.
    const qint64 after = truth.value(QStringLiteral("events_after_oom")).toInteger(0);
    QVERIFY(after >= 0 && after < qint64(events.size()));
    const TraceEvent& oomEvent = events[events.size() - 1 - size_t(after)];
    QCOMPARE(oomEvent.action, TraceAction::Oom);
    for (size_t i = events.size() - size_t(after); i < events.size(); ++i)
        QVERIFY(events[i].action != TraceAction::Oom);
    QCOMPARE(oomEvent.size, uint64_t(truth.value(QStringLiteral("requested_bytes")).toInteger()));
    QCOMPARE(oomEvent.deviceFree(), uint64_t(truth.value(QStringLiteral("device_free_bytes")).toInteger()));
    const char* reservedKey = after ? "dump_reserved_bytes" : "reserved_bytes";
    QCOMPARE(reserved, uint64_t(truth.value(QLatin1String(reservedKey)).toInteger()));
    const QString oomText = QString::fromUtf8(test::readFile(oomPath));
    QVERIFY(oomText.startsWith(QStringLiteral("Traceback (most recent call last):\n")));
    QVERIFY(oomText.contains(QStringLiteral("\ntorch.OutOfMemoryError: CUDA out of memory. Tried to allocate ")));

    // The message lists the processes NVML sees: inside a container the run itself under its host PID
    // and no "this process has" clause; beside another job, that job first.
    if (truth.contains(QStringLiteral("message_pid"))) {
        QVERIFY(!oomText.contains(QStringLiteral("this process has")));
        QVERIFY(oomText.contains(
            QStringLiteral("Process %1 has ").arg(truth.value(QStringLiteral("message_pid")).toInteger())));
    } else {
        QVERIFY(oomText.contains(QStringLiteral("Including non-PyTorch memory, this process has ")));
    }
    QCOMPARE(oomText.contains(QRegularExpression(QStringLiteral("\\. Process \\d+ has [0-9.]+ [KMG]iB memory in use\\. "
                                                                "Including non-PyTorch memory"))),
        truth.contains(QStringLiteral("other_process_bytes")));
    QCOMPARE(oomText.contains(QStringLiteral(" allowed; Of the allocated memory")),
        truth.contains(QStringLiteral("allowed_bytes")));

    // A ring buffer that wrapped starts mid-run: it frees blocks whose allocation it no longer holds.
    std::unordered_set<uint64_t> allocated;
    bool orphanFree = false;
    for (const TraceEvent& event : events) {
        if (event.action == TraceAction::Alloc)
            allocated.insert(event.addr);
        else if (event.action == TraceAction::FreeRequested && !allocated.count(event.addr))
            orphanFree = true;
    }
    QCOMPARE(orphanFree, truth.contains(QStringLiteral("trace_dropped_events")));
}

QTEST_GUILESS_MAIN(TestScenarios)

#include "tst_scenarios.moc"
