// A long session of `oomlens mcp`: the built server answering a thousand tool calls over its
// stdio JSON-RPC, every tool, on more snapshots than it keeps decoded (so its cache evicts and
// reads again). Memory must stay bounded (common/longsession.h says how the bound is derived from
// the cases) and, in the asan-ci build, the server must exit clean under LeakSanitizer.
//
// The full 1,000 calls (whole cycles: 1,020) take about 12 s in the release build; under ASan CI
// makes 60, rounded up to 68 (LeakSanitizer's check at exit needs no more);
// OOMLENS_LONG_SESSION_CALLS sets another count.
#include "common/clirun.h"
#include "common/longsession.h"
#include "common/testutil.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QProcessEnvironment>
#include <QTemporaryDir>
#include <QTest>

#include <initializer_list>
#include <vector>

using namespace oomlens;

namespace {

struct Call
{
    QString tool;
    QJsonObject arguments;
    bool expectError = false;
};

// Sends one JSON-RPC message and reads the one line that answers it.
QJsonObject exchange(QProcess& server, const QJsonObject& message)
{
    server.write(QJsonDocument(message).toJson(QJsonDocument::Compact) + '\n');
    while (!server.canReadLine()) {
        if (!server.waitForReadyRead(300000))
            return {};
    }
    return QJsonDocument::fromJson(server.readLine()).object();
}

QJsonObject toolCall(int id, const Call& call)
{
    return { { QStringLiteral("jsonrpc"), QStringLiteral("2.0") }, { QStringLiteral("id"), id },
        { QStringLiteral("method"), QStringLiteral("tools/call") },
        { QStringLiteral("params"),
            QJsonObject { { QStringLiteral("name"), call.tool }, { QStringLiteral("arguments"), call.arguments } } } };
}

} // namespace

class TestMcpLongSession : public QObject
{
    Q_OBJECT
private slots:
    void thousandCallsKeepMemoryBounded()
    {
        OOMLENS_REQUIRE_BINARY();
        QTemporaryDir dir;
        const test::GeneratedSnapshot big = test::generateSnapshot(dir.path(), QStringLiteral("big.pickle"),
            { QStringLiteral("--events"), QStringLiteral("100000"), QStringLiteral("--oom"),
                QStringLiteral("--compiled") });
        QVERIFY2(!big.path.isEmpty(), "bench/gen_snapshot.py did not write the case");

        // One cycle: every tool on each snapshot, four snapshots against a cache of two.
        const QString scenarios = test::testDataDir() + QStringLiteral("/scenarios/");
        std::vector<Call> cycle;
        const QStringList snapshots { big.path, scenarios + QStringLiteral("first_backward.pickle"),
            scenarios + QStringLiteral("leak.pickle"), scenarios + QStringLiteral("fragmentation.pickle") };
        for (const QString& snapshot : snapshots) {
            const QString name = QFileInfo(snapshot).completeBaseName();
            QJsonArray inputs { snapshot };
            const QString text = scenarios + name + QStringLiteral(".oom.txt");
            if (QFileInfo::exists(text))
                inputs.append(text);
            cycle.insert(cycle.end(),
                std::initializer_list<Call> {
                    { QStringLiteral("diagnose"), { { QStringLiteral("inputs"), inputs } } },
                    { QStringLiteral("live_at"),
                        { { QStringLiteral("input"), snapshot }, { QStringLiteral("at"), QStringLiteral("oom") },
                            { QStringLiteral("top"), 50 } } },
                    { QStringLiteral("evidence"), { { QStringLiteral("inputs"), inputs } } },
                    { QStringLiteral("step_peaks"), { { QStringLiteral("input"), snapshot } } },
                    { QStringLiteral("stack_history"),
                        { { QStringLiteral("input"), snapshot }, { QStringLiteral("site"), QStringLiteral(".py:") },
                            { QStringLiteral("limit"), 20 } } },
                    { QStringLiteral("live_at"),
                        { { QStringLiteral("input"), snapshot }, { QStringLiteral("at"), QStringLiteral("peak") },
                            { QStringLiteral("frames"), QStringLiteral("all") } } },
                    { QStringLiteral("report"),
                        { { QStringLiteral("inputs"), inputs },
                            { QStringLiteral("output"), dir.filePath(name + QStringLiteral(".html")) } } },
                    { QStringLiteral("diagnose"),
                        { { QStringLiteral("inputs"),
                            QJsonArray { QString(QStringLiteral("/nonexistent/") + name) } } },
                        true },
                });
        }
        const QString compare = test::testDataDir() + QStringLiteral("/compare/");
        cycle.insert(cycle.end(),
            std::initializer_list<Call> {
                { QStringLiteral("compare"),
                    { { QStringLiteral("a"), QString(compare + QStringLiteral("batch.a.pickle")) },
                        { QStringLiteral("b"), QString(compare + QStringLiteral("batch.b.pickle")) } } },
                { QStringLiteral("plan"),
                    { { QStringLiteral("model"), QStringLiteral("llama-2-7b") }, { QStringLiteral("batch"), 4 },
                        { QStringLiteral("zero"), 3 }, { QStringLiteral("gpus"), 8 },
                        { QStringLiteral("card"), QStringLiteral("80GB") } } },
            });

        const bool measure = test::residentMemoryIsMeaningful();
        const int calls = test::longSessionCount("OOMLENS_LONG_SESSION_CALLS", measure ? 1000 : 60);
        const int cycles = std::max(1, (calls + static_cast<int>(cycle.size()) - 1) / static_cast<int>(cycle.size()));
        const int warmUp = std::max(1, std::min(2, cycles / 3)); // every file read, the cache full and churned

        QTemporaryDir runtimeDir;
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert(QStringLiteral("XDG_RUNTIME_DIR"), runtimeDir.path());
        QProcess server;
        server.setProcessEnvironment(environment);
        server.start(test::oomlensBinary(), { QStringLiteral("mcp"), QStringLiteral("--cache"), QStringLiteral("2") });
        QVERIFY2(server.waitForStarted(), "oomlens mcp did not start");
        const QJsonObject initialized = exchange(server,
            { { QStringLiteral("jsonrpc"), QStringLiteral("2.0") }, { QStringLiteral("id"), 0 },
                { QStringLiteral("method"), QStringLiteral("initialize") },
                { QStringLiteral("params"),
                    QJsonObject { { QStringLiteral("protocolVersion"), QStringLiteral("2025-06-18") },
                        { QStringLiteral("capabilities"), QJsonObject {} },
                        { QStringLiteral("clientInfo"),
                            QJsonObject { { QStringLiteral("name"), QStringLiteral("tst") } } } } } });
        QVERIFY2(initialized.contains(QStringLiteral("result")), server.readAllStandardError().constData());
        server.write(R"({"jsonrpc": "2.0", "method": "notifications/initialized"})"
                     "\n");

        test::MemoryBound bound;
        // The cache holds two decoded cases; each cycle ends on the same two, so the samples compare
        // like with like. One more case than those is the tolerance.
        bound.toleranceMiB = big.budgetMiB();
        int id = 1;
        for (int c = 1; c <= cycles; ++c) {
            for (const Call& call : cycle) {
                const QJsonObject answer = exchange(server, toolCall(id, call));
                QVERIFY2(answer.value(QStringLiteral("id")).toInt() == id,
                    qPrintable(QStringLiteral("call %1 (%2) got no answer: %3")
                                   .arg(id)
                                   .arg(call.tool, QString::fromUtf8(server.readAllStandardError()))));
                const QJsonObject result = answer.value(QStringLiteral("result")).toObject();
                QVERIFY2(result.value(QStringLiteral("isError")).toBool() == call.expectError,
                    qPrintable(
                        QStringLiteral("call %1 (%2): %3")
                            .arg(id)
                            .arg(call.tool,
                                QString::fromUtf8(QJsonDocument(answer).toJson(QJsonDocument::Compact).left(600)))));
                ++id;
            }
            const double resident = test::settledResidentMiB(server.processId());
            if (c == warmUp)
                bound.warmMiB = resident;
            bound.endMiB = resident;
            if (c <= 2 || c % 5 == 0 || c == cycles)
                qInfo("after %d calls: server RSS %.1f MiB", id - 1, resident);
        }
        server.closeWriteChannel(); // end of input: the server exits
        QVERIFY2(server.waitForFinished(300000), "oomlens mcp did not exit at the end of its input");
        const QByteArray errors = server.readAllStandardError();
        QVERIFY2(server.exitStatus() == QProcess::NormalExit && server.exitCode() == 0,
            qPrintable(QStringLiteral("oomlens mcp exited with %1: %2")
                           .arg(server.exitCode())
                           .arg(QString::fromUtf8(errors))));
        QVERIFY2(!errors.contains("Sanitizer"), errors.constData());

        const QString summary = bound.describe(warmUp * static_cast<int>(cycle.size()), id - 1)
                                    .replace(QStringLiteral("round"), QStringLiteral("call"));
        if (!measure) {
            qInfo("AddressSanitizer build: %d calls answered, no leak at exit; the RSS bound is checked in the "
                  "release build",
                id - 1);
            return;
        }
        qInfo("%s", qPrintable(summary));
        QVERIFY2(bound.holds(), qPrintable(summary));
    }
};

QTEST_GUILESS_MAIN(TestMcpLongSession)
#include "tst_mcplongsession.moc"
