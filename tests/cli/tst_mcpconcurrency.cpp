// `oomlens mcp` with a long call in flight, as an agent drives it over stdio: the reader stays
// free (a ping and a question about a cached case are answered while a job of big snapshots is
// read), the long call reports its progress, and notifications/cancelled stops it with no answer.
#include "common/clirun.h"
#include "common/longsession.h"
#include "common/testutil.h"

#include <QDir>
#include <QElapsedTimer>
#include <QFile>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QProcess>
#include <QProcessEnvironment>
#include <QTemporaryDir>
#include <QTest>

#include <vector>

using namespace oomlens;

namespace {

// The server's lines as they arrive, each parsed.
class Client
{
public:
    explicit Client(QProcess& server)
        : m_server(server)
    { }

    void send(const QJsonObject& message)
    {
        m_server.write(QJsonDocument(message).toJson(QJsonDocument::Compact) + '\n');
    }

    // Reads lines until one answers `id` (notifications and other answers are kept); empty when
    // none comes within `ms`.
    QJsonObject waitForAnswer(int id, int ms = 120000)
    {
        return waitFor(
            [id](const QJsonObject& line) {
                return line.contains(QStringLiteral("id")) && line[QStringLiteral("id")] == id;
            },
            ms);
    }

    template <typename Predicate> QJsonObject waitFor(Predicate matches, int ms)
    {
        QElapsedTimer timer;
        timer.start();
        for (;;) {
            for (const QJsonObject& line : std::as_const(m_lines)) {
                if (matches(line))
                    return line;
            }
            if (timer.elapsed() > ms)
                return {};
            if (!m_server.canReadLine() && !m_server.waitForReadyRead(100))
                continue;
            while (m_server.canReadLine())
                m_lines.append(QJsonDocument::fromJson(m_server.readLine()).object());
        }
    }

    void readRest()
    {
        m_server.waitForFinished(120000);
        for (const QByteArray& line : m_server.readAllStandardOutput().split('\n')) {
            if (!line.trimmed().isEmpty())
                m_lines.append(QJsonDocument::fromJson(line).object());
        }
    }

    const QList<QJsonObject>& lines() const { return m_lines; }

private:
    QProcess& m_server;
    QList<QJsonObject> m_lines;
};

QJsonObject request(int id, const QString& method, const QJsonObject& params = {})
{
    return { { QStringLiteral("jsonrpc"), QStringLiteral("2.0") }, { QStringLiteral("id"), id },
        { QStringLiteral("method"), method }, { QStringLiteral("params"), params } };
}

QJsonObject diagnose(int id, const QJsonArray& inputs, const QJsonValue& token = QJsonValue(QJsonValue::Undefined))
{
    QJsonObject params { { QStringLiteral("name"), QStringLiteral("diagnose") },
        { QStringLiteral("arguments"), QJsonObject { { QStringLiteral("inputs"), inputs } } } };
    if (!token.isUndefined())
        params[QStringLiteral("_meta")] = QJsonObject { { QStringLiteral("progressToken"), token } };
    return request(id, QStringLiteral("tools/call"), params);
}

bool isProgressOf(const QJsonObject& line, const QString& token)
{
    return line[QStringLiteral("method")] == QStringLiteral("notifications/progress")
        && line[QStringLiteral("params")].toObject()[QStringLiteral("progressToken")] == token;
}

} // namespace

class TestMcpConcurrency : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void aLongCallNeitherBlocksNorOutlivesItsCancel()
    {
        OOMLENS_REQUIRE_BINARY();
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const test::GeneratedSnapshot big = test::generateSnapshot(dir.path(), QStringLiteral("big.pickle"),
            { QStringLiteral("--events"), QStringLiteral("100000"), QStringLiteral("--oom") });
        QVERIFY2(!big.path.isEmpty(), "bench/gen_snapshot.py did not write the snapshot");
        // A job of 24 ranks, each the big snapshot: seconds of decoding, rank after rank.
        const QString job = dir.filePath(QStringLiteral("job"));
        QVERIFY(QDir().mkpath(job));
        for (int rank = 0; rank < 24; ++rank)
            QVERIFY(QFile::link(big.path, QStringLiteral("%1/rank%2.pickle").arg(job).arg(rank)));
        const QString small = test::testDataDir() + QStringLiteral("/scenarios/first_backward.pickle");

        QTemporaryDir runtimeDir;
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert(QStringLiteral("XDG_RUNTIME_DIR"), runtimeDir.path());
        QProcess server;
        server.setProcessEnvironment(environment);
        server.start(test::oomlensBinary(), { QStringLiteral("mcp") });
        QVERIFY(server.waitForStarted());
        Client client(server);
        client.send(request(1, QStringLiteral("initialize"),
            { { QStringLiteral("protocolVersion"), QStringLiteral("2025-06-18") },
                { QStringLiteral("capabilities"), QJsonObject {} },
                { QStringLiteral("clientInfo"), QJsonObject { { QStringLiteral("name"), QStringLiteral("tst") } } } }));
        QVERIFY(client.waitForAnswer(1).contains(QStringLiteral("result")));
        client.send({ { QStringLiteral("jsonrpc"), QStringLiteral("2.0") },
            { QStringLiteral("method"), QStringLiteral("notifications/initialized") } });
        client.send(diagnose(2, { small }));
        QVERIFY(client.waitForAnswer(2).contains(QStringLiteral("result"))); // now cached
        QElapsedTimer timer;
        timer.start();
        client.send(request(3, QStringLiteral("ping")));
        QVERIFY(client.waitForAnswer(3).contains(QStringLiteral("result")));
        const qint64 idlePingUs = timer.nsecsElapsed() / 1000;

        // The long call, with a progress token; its first notification says it is under way.
        timer.restart();
        client.send(diagnose(10, { job }, QStringLiteral("big")));
        QVERIFY2(
            !client.waitFor([](const QJsonObject& line) { return isProgressOf(line, QStringLiteral("big")); }, 120000)
                 .isEmpty(),
            "no progress notification for the long call");
        // A ping and a cached question meanwhile: answered before the long call.
        QElapsedTimer ping;
        ping.start();
        client.send(request(11, QStringLiteral("ping")));
        QVERIFY(client.waitForAnswer(11).contains(QStringLiteral("result")));
        const qint64 busyPingUs = ping.nsecsElapsed() / 1000;
        ping.restart();
        client.send(diagnose(12, { small }));
        const QJsonObject cached = client.waitForAnswer(12);
        const qint64 cachedUs = ping.nsecsElapsed() / 1000;
        QCOMPARE(cached[QStringLiteral("result")].toObject()[QStringLiteral("isError")].toBool(true), false);
        for (const QJsonObject& line : client.lines())
            QVERIFY2(line[QStringLiteral("id")] != 10, "the long call finished before the test could cancel it");

        // Cancelled: it stops, sends nothing more for id 10, and the server serves on.
        QElapsedTimer stopping;
        stopping.start();
        client.send({ { QStringLiteral("jsonrpc"), QStringLiteral("2.0") },
            { QStringLiteral("method"), QStringLiteral("notifications/cancelled") },
            { QStringLiteral("params"),
                QJsonObject {
                    { QStringLiteral("requestId"), 10 }, { QStringLiteral("reason"), QStringLiteral("test") } } } });
        client.send(request(13, QStringLiteral("ping")));
        QVERIFY(client.waitForAnswer(13).contains(QStringLiteral("result")));
        server.closeWriteChannel(); // the end of the input: the server finishes what runs, then exits
        client.readRest();
        const qint64 cancelToExitMs = stopping.elapsed();
        QCOMPARE(server.exitStatus(), QProcess::NormalExit);
        QCOMPARE(server.exitCode(), 0);
        int progress = 0;
        for (const QJsonObject& line : client.lines()) {
            QVERIFY2(!line.contains(QStringLiteral("id")) || line[QStringLiteral("id")] != 10,
                qPrintable(QStringLiteral("the cancelled call was answered: ")
                    + QString::fromUtf8(QJsonDocument(line).toJson(QJsonDocument::Compact).left(300))));
            progress += isProgressOf(line, QStringLiteral("big"));
        }
        QVERIFY(progress >= 1);
        qInfo("ping idle %lld us; ping while a 24-rank job decodes %lld us; a cached diagnose meanwhile %lld us; "
              "cancel to exit %lld ms; %d progress notifications",
            idlePingUs, busyPingUs, cachedUs, cancelToExitMs, progress);
    }
};

QTEST_GUILESS_MAIN(TestMcpConcurrency)
#include "tst_mcpconcurrency.moc"
