#include "common/clirun.h"
#include "common/jsonsnapshot.h"
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

#include <memory>
#include <vector>

// `oomlens summarize` (one summary per rank snapshot, in shards) and the summaries given to
// `diagnose` in place of the snapshots: the same job answer, the failing rank's snapshot opened
// when it is here and named when it is not.
class TestSummarizeCli : public QObject
{
    Q_OBJECT

    using Run = oomlens::test::CliRun;

    QTemporaryDir m_dir;

    static Run oomlens(const QStringList& arguments) { return oomlens::test::runOomlens(arguments); }

    static QString jobDir() { return oomlens::test::testDataDir() + QStringLiteral("/job"); }

    // The job's snapshot files (the folder also holds a traceback and notes).
    static QStringList rankFiles()
    {
        QStringList files;
        const QDir dir(jobDir());
        for (const QString& name : dir.entryList({ QStringLiteral("*.pickle") }, QDir::Files, QDir::Name))
            files.append(dir.filePath(name));
        return files;
    }

    static QStringList filesIn(const QString& folder, const QString& pattern)
    {
        QStringList files;
        const QDir dir(folder);
        for (const QString& name : dir.entryList({ pattern }, QDir::Files, QDir::Name))
            files.append(dir.filePath(name));
        return files;
    }

    QString copyJob(const QString& folder) const
    {
        const QString target = m_dir.filePath(folder);
        QDir().mkpath(target);
        const QDir source(jobDir());
        for (const QString& name : source.entryList(QDir::Files))
            QFile::copy(source.filePath(name), target + QLatin1Char('/') + name);
        return target;
    }

    static void writeFile(const QString& path, const QByteArray& bytes)
    {
        QFile file(path);
        QVERIFY(file.open(QIODevice::WriteOnly));
        QCOMPARE(file.write(bytes), bytes.size());
    }

    // The "job" of `diagnose --json`, less what says how it was made (decoding threads, which
    // ranks came from summaries): what must be the same either way.
    static QJsonObject jobAnswer(const QJsonObject& root)
    {
        QJsonObject job = root[QStringLiteral("job")].toObject();
        job.remove(QStringLiteral("workers"));
        job.remove(QStringLiteral("from_summaries"));
        QJsonArray ranks;
        for (const QJsonValue& value : job[QStringLiteral("ranks")].toArray()) {
            QJsonObject rank = value.toObject();
            rank.remove(QStringLiteral("summary_file"));
            ranks.append(rank);
        }
        job[QStringLiteral("ranks")] = ranks;
        return job;
    }

    static QByteArray canonical(const QJsonObject& object) { return QJsonDocument(object).toJson(); }

    static QByteArray arrayText(const QJsonObject& root, const QString& key)
    {
        return QJsonDocument(root[key].toArray()).toJson();
    }

    // The text up to the failing rank's diagnosis, less its first line ("Job: N rank files, ...").
    static QString jobText(const QByteArray& out)
    {
        const QString text = QString::fromUtf8(out);
        const qsizetype end = text.indexOf(QStringLiteral("== The failing rank"));
        return text.left(end).mid(text.indexOf(QLatin1Char('\n')));
    }

    static int summarizedCount(const Run& run)
    {
        // "summarized K of N rank files ..."
        const QList<QByteArray> words = run.out.split(' ');
        return words.size() > 1 ? words[1].toInt() : -1;
    }

private Q_SLOTS:
    void initTestCase()
    {
        OOMLENS_REQUIRE_BINARY();
        QVERIFY(m_dir.isValid());
    }

    void summariesGiveTheSnapshotsAnswer()
    {
        const QString out = m_dir.filePath(QStringLiteral("summaries"));
        const Run summarize = oomlens({ QStringLiteral("summarize"), jobDir(), QStringLiteral("-o"), out });
        QCOMPARE(summarize.exitCode, 0);
        QVERIFY2(summarize.err.isEmpty(), summarize.err.constData());
        QVERIFY2(summarize.out.startsWith("summarized 8 of 8 rank files"), summarize.out.constData());
        QCOMPARE(QDir(out).entryList(QDir::Files),
            QStringList({ QStringLiteral("rank0.oomlens-summary.json"), QStringLiteral("rank1.oomlens-summary.json"),
                QStringLiteral("rank2.oomlens-summary.json"), QStringLiteral("rank4.oomlens-summary.json"),
                QStringLiteral("rank5.oomlens-summary.json"), QStringLiteral("rank6.oomlens-summary.json"),
                QStringLiteral("rank7.oomlens-summary.json"), QStringLiteral("worker-b.oomlens-summary.json") }));

        // The snapshots themselves (the folder also holds rank 6's traceback, which no summary has).
        const Run direct = oomlens(QStringList { QStringLiteral("diagnose"), QStringLiteral("--json") } + rankFiles());
        const Run merged = oomlens({ QStringLiteral("diagnose"), QStringLiteral("--json"), out });
        QCOMPARE(merged.exitCode, 0);
        QVERIFY2(merged.err.isEmpty(), merged.err.constData());
        const QJsonObject directRoot = oomlens::test::parseJsonObject(direct.out);
        const QJsonObject mergedRoot = oomlens::test::parseJsonObject(merged.out);
        QCOMPARE(canonical(jobAnswer(mergedRoot)), canonical(jobAnswer(directRoot)));
        const QJsonObject job = mergedRoot[QStringLiteral("job")].toObject();
        QCOMPARE(job[QStringLiteral("from_summaries")].toInt(), 8);
        QCOMPARE(job[QStringLiteral("failing_rank")].toInt(-1), 6);
        QCOMPARE(job[QStringLiteral("ranks")].toArray()[3].toObject()[QStringLiteral("rank_source")].toString(),
            QStringLiteral("metadata")); // worker-b's rank came from its capture sidecar, on the node
        QVERIFY(job[QStringLiteral("failing_snapshot_to_copy")].isNull());
        // The failing rank's snapshot is reachable at its recorded path: diagnosed in full, as before.
        for (const QString& key : { QStringLiteral("snapshots"), QStringLiteral("diagnoses") })
            QCOMPARE(arrayText(mergedRoot, key), arrayText(directRoot, key));
        QCOMPARE(mergedRoot[QStringLiteral("snapshots")].toArray().size(), 1);
        // Every summary given is listed as an input.
        int summaryInputs = 0;
        for (const QJsonValue& input : mergedRoot[QStringLiteral("inputs")].toArray())
            summaryInputs += input.toObject()[QStringLiteral("kind")].toString() == QLatin1String("rank_summary");
        QCOMPARE(summaryInputs, 8);

        // The text: the same table, groups and notes; the first line says where the ranks came from.
        const Run directText = oomlens(QStringList { QStringLiteral("diagnose") } + rankFiles());
        const Run mergedText = oomlens({ QStringLiteral("diagnose"), out });
        QCOMPARE(jobText(mergedText.out), jobText(directText.out));
        QVERIFY(mergedText.out.startsWith("Job: 8 rank files, 8 read from summaries\n"));

        // Mixed with the snapshots themselves: each rank once, nothing decoded twice.
        const Run mixed = oomlens(
            QStringList { QStringLiteral("diagnose"), QStringLiteral("--json") } + rankFiles() + QStringList { out });
        QCOMPARE(mixed.exitCode, 0);
        const QJsonObject mixedRoot = oomlens::test::parseJsonObject(mixed.out);
        QCOMPARE(canonical(jobAnswer(mixedRoot)), canonical(jobAnswer(directRoot)));
        QCOMPARE(mixedRoot[QStringLiteral("job")].toObject()[QStringLiteral("workers")].toInt(-1), 0);
    }

    void theMissingSnapshotIsNamed()
    {
        const QString cluster = copyJob(QStringLiteral("cluster"));
        const QString desk = m_dir.filePath(QStringLiteral("desk"));
        QCOMPARE(oomlens({ QStringLiteral("summarize"), cluster, QStringLiteral("-o"), desk }).exitCode, 0);
        QVERIFY(QDir(cluster).removeRecursively());

        const Run run = oomlens({ QStringLiteral("diagnose"), QStringLiteral("--json"), desk });
        QCOMPARE(run.exitCode, 0);
        const QJsonObject root = oomlens::test::parseJsonObject(run.out);
        const QJsonObject job = root[QStringLiteral("job")].toObject();
        QCOMPARE(job[QStringLiteral("failing_rank")].toInt(-1), 6);
        const QString missing = cluster + QStringLiteral("/rank6.pickle");
        QCOMPARE(job[QStringLiteral("failing_snapshot_to_copy")].toString(), missing);
        QVERIFY(job[QStringLiteral("notes")].toArray().first().toString().startsWith(
            QStringLiteral("the failing rank's snapshot is not here: copy ") + missing));
        QVERIFY(root[QStringLiteral("snapshots")].toArray().isEmpty());
        const Run text = oomlens({ QStringLiteral("diagnose"), desk });
        QVERIFY2(text.out.contains("its snapshot is not here"), text.out.constData());
        QVERIFY2(!text.out.contains("No out-of-memory diagnosis"), text.out.constData());
        // The report is still written, with the job section.
        const QString html = m_dir.filePath(QStringLiteral("far.html"));
        QCOMPARE(oomlens({ QStringLiteral("report"), desk, QStringLiteral("-o"), html }).exitCode, 0);

        // Copied beside the summaries: found, checked and diagnosed.
        QVERIFY(QFile::copy(jobDir() + QStringLiteral("/rank6.pickle"), desk + QStringLiteral("/rank6.pickle")));
        const QJsonObject found = oomlens::test::parseJsonObject(
            oomlens({ QStringLiteral("diagnose"), QStringLiteral("--json"), desk }).out);
        QVERIFY(found[QStringLiteral("job")].toObject()[QStringLiteral("failing_snapshot_to_copy")].isNull());
        QCOMPARE(found[QStringLiteral("snapshots")].toArray().size(), 1);
    }

    void anUnreadableFileIsAnErrorEntry()
    {
        const QString folder = copyJob(QStringLiteral("broken"));
        QFile source(folder + QStringLiteral("/rank7.pickle"));
        QVERIFY(source.open(QIODevice::ReadOnly));
        writeFile(folder + QStringLiteral("/rank9.pickle"), source.read(4096)); // sniffed as a pickle, cut short
        const QString out = m_dir.filePath(QStringLiteral("broken-summaries"));
        const Run run = oomlens({ QStringLiteral("summarize"), folder, QStringLiteral("-o"), out });
        QCOMPARE(run.exitCode, 1);
        const QList<QByteArray> lines = run.err.trimmed().split('\n');
        QCOMPARE(lines.size(), 1);
        QVERIFY(lines[0].contains("rank9.pickle"));
        QVERIFY2(run.out.contains("8 read, 1 unreadable"), run.out.constData());
        QCOMPARE(filesIn(out, QStringLiteral("*.oomlens-summary.json")).size(), 9);

        const Run direct = oomlens({ QStringLiteral("diagnose"), QStringLiteral("--json"), folder });
        const Run merged = oomlens({ QStringLiteral("diagnose"), QStringLiteral("--json"), out });
        QCOMPARE(merged.exitCode, 1);
        QCOMPARE(direct.exitCode, 1);
        QVERIFY(merged.err.contains("rank9.pickle"));
        QCOMPARE(canonical(jobAnswer(oomlens::test::parseJsonObject(merged.out))),
            canonical(jobAnswer(oomlens::test::parseJsonObject(direct.out))));
    }

    // The capture layout logs/rank_N/snapshot.pickle: one name in many folders, each summary its own.
    void sameNamesInRankFolders()
    {
        const QString logs = m_dir.filePath(QStringLiteral("logs"));
        for (int r = 0; r < 3; ++r) {
            const QString folder = logs + QStringLiteral("/rank_%1").arg(r);
            QVERIFY(QDir().mkpath(folder));
            QVERIFY(QFile::copy(
                jobDir() + QStringLiteral("/rank%1.pickle").arg(r + 4), folder + QStringLiteral("/snapshot.pickle")));
        }
        const QString out = m_dir.filePath(QStringLiteral("logs-summaries"));
        const QStringList inputs = filesIn(logs + QStringLiteral("/rank_0"), QStringLiteral("*"))
            + filesIn(logs + QStringLiteral("/rank_1"), QStringLiteral("*"))
            + filesIn(logs + QStringLiteral("/rank_2"), QStringLiteral("*"));
        QCOMPARE(oomlens(QStringList { QStringLiteral("summarize"), QStringLiteral("-o"), out } + inputs).exitCode, 0);
        QCOMPARE(QDir(out).entryList(QDir::Files),
            QStringList({ QStringLiteral("rank_0-snapshot.oomlens-summary.json"),
                QStringLiteral("rank_1-snapshot.oomlens-summary.json"),
                QStringLiteral("rank_2-snapshot.oomlens-summary.json") }));
        const QJsonObject job = oomlens::test::parseJsonObject(
            oomlens({ QStringLiteral("diagnose"), QStringLiteral("--json"), out }).out)[QStringLiteral("job")]
                                    .toObject();
        const QJsonArray ranks = job[QStringLiteral("ranks")].toArray();
        QCOMPARE(ranks.size(), 3);
        for (int r = 0; r < 3; ++r)
            QCOMPARE(ranks[r].toObject()[QStringLiteral("rank")].toInt(-1), r);
        QCOMPARE(job[QStringLiteral("failing_rank")].toInt(-1), 2); // rank6.pickle, the one that failed
    }

    // A rank is its rank file. Ranks that replay the same batches write the same bytes, so 512
    // ranks can hold only 8 files' bytes between them: still 512 ranks from the snapshots and from
    // their summaries alike (merged by bytes alone they were 7). The 8 files copied into 4
    // folders are 32 rank files either way too (each rank given 4 times, and said so).
    void aRankIsItsRankFile_data()
    {
        QTest::addColumn<int>("ranks");
        QTest::addColumn<int>("folders");
        QTest::newRow("512 ranks, 8 files' bytes") << 512 << 1;
        QTest::newRow("8 ranks in 4 folders") << 8 << 4;
    }
    void aRankIsItsRankFile()
    {
        QFETCH(int, ranks);
        QFETCH(int, folders);
        const QStringList sources = filesIn(jobDir(), QStringLiteral("*.pickle"));
        QCOMPARE(sources.size(), 8);
        const QString root = m_dir.filePath(QStringLiteral("identity-%1-%2").arg(ranks).arg(folders));
        QStringList inputs;
        for (int f = 0; f < folders; ++f) {
            const QString folder = root + QStringLiteral("/copy%1").arg(f);
            if (ranks == sources.size()) {
                inputs.append(copyJob(QStringLiteral("identity-%1-%2/copy%3").arg(ranks).arg(folders).arg(f)));
                continue;
            }
            QVERIFY(QDir().mkpath(folder));
            for (int r = 0; r < ranks; ++r)
                QVERIFY(QFile::copy(sources[r % sources.size()], folder + QStringLiteral("/rank%1.pickle").arg(r)));
            inputs.append(folder);
        }
        const QString out = root + QStringLiteral("/summaries");
        const Run summarize = oomlens(QStringList { QStringLiteral("summarize"), QStringLiteral("-o"), out } + inputs);
        QCOMPARE(summarize.exitCode, 0);
        QCOMPARE(filesIn(out, QStringLiteral("*.oomlens-summary.json")).size(), ranks * folders);

        const Run direct = oomlens(QStringList { QStringLiteral("diagnose"), QStringLiteral("--json") } + inputs);
        const Run merged = oomlens({ QStringLiteral("diagnose"), QStringLiteral("--json"), out });
        const Run mixed = oomlens(
            QStringList { QStringLiteral("diagnose"), QStringLiteral("--json") } + inputs + QStringList { out });
        QCOMPARE(direct.exitCode, 0);
        QCOMPARE(merged.exitCode, 0);
        QCOMPARE(mixed.exitCode, 0);
        const QJsonObject directJob = jobAnswer(oomlens::test::parseJsonObject(direct.out));
        QCOMPARE(directJob[QStringLiteral("ranks")].toArray().size(), ranks * folders);
        QCOMPARE(canonical(jobAnswer(oomlens::test::parseJsonObject(merged.out))), canonical(directJob));
        // Given both ways at once, each summary stands for its own snapshot: nothing decoded.
        const QJsonObject mixedRoot = oomlens::test::parseJsonObject(mixed.out);
        QCOMPARE(canonical(jobAnswer(mixedRoot)), canonical(directJob));
        QCOMPARE(mixedRoot[QStringLiteral("job")].toObject()[QStringLiteral("workers")].toInt(-1), 0);
    }

    void usageErrors_data()
    {
        QTest::addColumn<QStringList>("arguments");
        QTest::addColumn<QString>("message");
        QTest::newRow("no output") << QStringList { jobDir() } << QStringLiteral("no output folder");
        QTest::newRow("no input") << QStringList { QStringLiteral("-o"), m_dir.path() } << QStringLiteral("no INPUT");
        QTest::newRow("shard past the end") << QStringList { jobDir(), QStringLiteral("-o"), m_dir.path(),
            QStringLiteral("--shard"), QStringLiteral("4/4") }
                                            << QStringLiteral("--shard needs I/N");
        QTest::newRow("shard not a fraction") << QStringList { jobDir(), QStringLiteral("-o"), m_dir.path(),
            QStringLiteral("--shard"), QStringLiteral("two") }
                                              << QStringLiteral("--shard needs I/N");
        QTest::newRow("no jobs") << QStringList { jobDir(), QStringLiteral("-o"), m_dir.path(),
            QStringLiteral("--jobs"), QStringLiteral("0") }
                                 << QStringLiteral("--jobs needs");
        QTest::newRow("stdin") << QStringList { QStringLiteral("-"), QStringLiteral("-o"), m_dir.path() }
                               << QStringLiteral("not standard input");
    }

    void usageErrors()
    {
        QFETCH(QStringList, arguments);
        QFETCH(QString, message);
        const Run run = oomlens(QStringList { QStringLiteral("summarize") } + arguments);
        QCOMPARE(run.exitCode, 2);
        QVERIFY2(QString::fromUtf8(run.err).contains(message), run.err.constData());
    }

    // issue 29's acceptance: a job of 1,024 ranks split into 4 shards summarized by 4 processes at
    // once, then merged: the job table, the failing rank, the groups and the notes are the direct
    // run's. The rank files are tiny JSON snapshots, so the test takes seconds.
    void aThousandRanksInFourShards()
    {
        const QString ranks = m_dir.filePath(QStringLiteral("job1024"));
        QVERIFY(QDir().mkpath(ranks));
        constexpr int rankCount = 1024;
        for (int r = 0; r < rankCount; ++r) {
            if (r == 77)
                continue; // a rank that wrote nothing
            const QString path = ranks + QStringLiteral("/rank%1.json").arg(r);
            if (r == 1000) {
                writeFile(path, QByteArray(R"({"segments": [], "device_traces": [[{"action": "alloc", )"));
                continue;
            }
            // Two pipeline stages (the second holds more weights); replicas differ by under 2 %, and
            // each rank's clock differs from the others' (its file with it, as real dumps do).
            const uint64_t weights = (r < rankCount / 2 ? 64 : 96) << 20;
            uint64_t activations = (32 << 20) + uint64_t(r % 8) * (64 << 10);
            std::optional<int64_t> oomTime;
            if (r == 700 || r == 901) {
                activations = 80 << 20;
                oomTime = r == 901 ? 800'000 : 900'000; // 901 runs out first
            }
            writeFile(path,
                QByteArray::fromStdString(oomlens::test::tinyJsonSnapshot(weights, activations, oomTime, 1000 + r)));
        }

        const QString out = m_dir.filePath(QStringLiteral("job1024-summaries"));
        QProcessEnvironment environment = QProcessEnvironment::systemEnvironment();
        environment.insert(QStringLiteral("QT_QPA_PLATFORM"), QStringLiteral("offscreen"));
        std::vector<std::unique_ptr<QProcess>> shards;
        QElapsedTimer clock;
        clock.start();
        for (int shard = 0; shard < 4; ++shard) {
            auto process = std::make_unique<QProcess>();
            process->setProcessEnvironment(environment);
            process->start(oomlens::test::oomlensBinary(),
                { QStringLiteral("summarize"), ranks, QStringLiteral("-o"), out, QStringLiteral("--shard"),
                    QStringLiteral("%1/4").arg(shard), QStringLiteral("--jobs"), QStringLiteral("1") });
            shards.push_back(std::move(process));
        }
        int summarized = 0;
        for (const auto& process : shards) {
            QVERIFY(process->waitForFinished(240000));
            QCOMPARE(process->exitStatus(), QProcess::NormalExit);
            const Run run { process->exitCode(), process->readAllStandardOutput(), process->readAllStandardError() };
            // The shard holding rank1000.json says so and exits 1; the others summarized every file.
            QVERIFY2(run.exitCode == (run.err.contains("rank1000.json") ? 1 : 0), run.err.constData());
            QVERIFY2(run.out.contains(" of 1023 rank files (shard "), run.out.constData());
            summarized += summarizedCount(run);
        }
        qInfo("4 shards summarized 1023 rank files in %lld ms", static_cast<long long>(clock.elapsed()));
        QCOMPARE(summarized, rankCount - 1);
        QCOMPARE(filesIn(out, QStringLiteral("*.oomlens-summary.json")).size(), rankCount - 1);

        clock.restart();
        const Run direct = oomlens({ QStringLiteral("diagnose"), QStringLiteral("--json"), ranks });
        const qint64 directMs = clock.restart();
        const Run merged = oomlens({ QStringLiteral("diagnose"), QStringLiteral("--json"), out });
        qInfo("diagnose: %lld ms from the snapshots, %lld ms from the summaries", static_cast<long long>(directMs),
            static_cast<long long>(clock.elapsed()));
        QCOMPARE(direct.exitCode, 1); // rank1000.json
        QCOMPARE(merged.exitCode, 1);
        const QJsonObject directRoot = oomlens::test::parseJsonObject(direct.out);
        const QJsonObject mergedRoot = oomlens::test::parseJsonObject(merged.out);
        const QJsonObject job = mergedRoot[QStringLiteral("job")].toObject();
        QCOMPARE(job[QStringLiteral("ranks")].toArray().size(), rankCount - 1);
        QCOMPARE(job[QStringLiteral("from_summaries")].toInt(), rankCount - 1);
        QCOMPARE(job[QStringLiteral("failing_rank")].toInt(-1), 901);
        QCOMPARE(job[QStringLiteral("failing_reason")].toString(), QStringLiteral("first_oom"));
        QVERIFY(job[QStringLiteral("groups")].toArray().size() >= 2);
        QVERIFY(!job[QStringLiteral("notes")].toArray().isEmpty());
        // Table, failing rank, groups, notes: all of it the direct run's.
        QCOMPARE(canonical(jobAnswer(mergedRoot)), canonical(jobAnswer(directRoot)));
        QCOMPARE(
            arrayText(mergedRoot, QStringLiteral("diagnoses")), arrayText(directRoot, QStringLiteral("diagnoses")));

        const Run directText = oomlens({ QStringLiteral("diagnose"), ranks });
        const Run mergedText = oomlens({ QStringLiteral("diagnose"), out });
        QCOMPARE(jobText(mergedText.out), jobText(directText.out));
    }
};

QTEST_GUILESS_MAIN(TestSummarizeCli)
#include "tst_summarizecli.moc"
