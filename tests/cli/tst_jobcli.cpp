#include "common/clirun.h"
#include "common/testutil.h"

#include <QDir>
#include <QFile>
#include <QJsonArray>
#include <QJsonObject>
#include <QTemporaryDir>
#include <QTest>

// `oomlens diagnose` and `oomlens report` given the rank files of one job (tests/data/job, made by
// tests/tools/make_job.py): the job summary first, then the failing rank's diagnosis; "job" in the
// JSON (product.md §5); the job section of the report.
class TestJobCli : public QObject
{
    Q_OBJECT

    using Run = oomlens::test::CliRun;

    QTemporaryDir m_dir;

    static Run oomlens(const QStringList& arguments) { return oomlens::test::runOomlens(arguments); }

    static QString jobDir() { return oomlens::test::testDataDir() + QStringLiteral("/job"); }

    static QStringList rankFiles()
    {
        QStringList files;
        const QDir dir(jobDir());
        for (const QString& name : dir.entryList({ QStringLiteral("*.pickle") }, QDir::Files, QDir::Name))
            files.append(dir.filePath(name));
        return files;
    }

    static QString oomText() { return jobDir() + QStringLiteral("/rank6.oom.txt"); }

    // The job's files copied to a folder of the test's own, `rename` giving some of them other names.
    QString copyJob(const QString& folder, const QHash<QString, QString>& rename = {}) const
    {
        const QString target = m_dir.filePath(folder);
        QDir().mkpath(target);
        const QDir source(jobDir());
        for (const QString& name : source.entryList(QDir::Files)) {
            const QString as = rename.value(name, name);
            if (!as.isEmpty())
                QFile::copy(source.filePath(name), target + QLatin1Char('/') + as);
        }
        return target;
    }

    static QStringList picklesIn(const QString& folder)
    {
        QStringList files;
        const QDir dir(folder);
        for (const QString& name : dir.entryList({ QStringLiteral("*.pickle") }, QDir::Files, QDir::Name))
            files.append(dir.filePath(name));
        return files;
    }

private Q_SLOTS:
    void initTestCase()
    {
        OOMLENS_REQUIRE_BINARY();
        QVERIFY(m_dir.isValid());
        QCOMPARE(rankFiles().size(), 8);
    }

    void textShowsTheJobThenTheFailingRank()
    {
        // --full: every section of the failing rank's case (the default answer is brief, below).
        const Run run = oomlens(QStringList { QStringLiteral("diagnose"), QStringLiteral("--full") } + rankFiles()
            + QStringList { oomText() });
        QCOMPARE(run.exitCode, 0);
        QVERIFY2(run.err.isEmpty(), run.err.constData());
        const QString out = QString::fromUtf8(run.out);
        QVERIFY2(out.startsWith(QStringLiteral("Job: 8 rank files")), qPrintable(out.left(300)));
        const qsizetype failing = out.indexOf(QStringLiteral("Failing rank: rank 6"));
        const qsizetype table = out.indexOf(QStringLiteral("peak allocated"));
        const qsizetype groups = out.indexOf(QStringLiteral("1. ranks 0–3"));
        const qsizetype heading = out.indexOf(QStringLiteral("== The failing rank: rank 6"));
        const qsizetype diagnosis = out.indexOf(QStringLiteral("Diagnosis, most likely first"));
        QVERIFY(failing > 0);
        QVERIFY(table > failing);
        QVERIFY(groups > table);
        QVERIFY(heading > groups);
        QVERIFY(diagnosis > heading);
        QVERIFY(out.contains(QStringLiteral("first of 2 ranks to hit an OOM")));
        // The text input went to the failing rank's case: its message is explained there.
        const qsizetype message = out.indexOf(QStringLiteral("OOM message (cuda"));
        QVERIFY(message > heading);
        QVERIFY(out.contains(QStringLiteral("rank6.oom.txt: OOM message")));
        // Only the failing rank is diagnosed in full: one snapshot section.
        QCOMPARE(out.count(QStringLiteral("\nSnapshot ")), 1);
        QVERIFY(out.contains(QStringLiteral("Snapshot ") + jobDir() + QStringLiteral("/rank6.pickle")));

        // The default answer: the job, then the failing rank's verdict.
        const Run brief = oomlens(QStringList { QStringLiteral("diagnose") } + rankFiles() + QStringList { oomText() });
        QCOMPARE(brief.exitCode, 0);
        const QString briefOut = QString::fromUtf8(brief.out);
        QVERIFY(briefOut.startsWith(QStringLiteral("Job: 8 rank files")));
        QVERIFY(briefOut.indexOf(QStringLiteral("Verdict: "))
            > briefOut.indexOf(QStringLiteral("== The failing rank: rank 6")));
    }

    void jsonAddsTheJob()
    {
        const Run run = oomlens(QStringList { QStringLiteral("diagnose"), QStringLiteral("--json") } + rankFiles()
            + QStringList { oomText() });
        QCOMPARE(run.exitCode, 0);
        const QJsonObject root = oomlens::test::parseJsonObject(run.out);
        QVERIFY(root.contains(QStringLiteral("job")));
        const QJsonObject job = root[QStringLiteral("job")].toObject();
        const QJsonArray ranks = job[QStringLiteral("ranks")].toArray();
        QCOMPARE(ranks.size(), 8);
        for (int r = 0; r < ranks.size(); ++r) {
            const QJsonObject rank = ranks[r].toObject();
            for (const char* key : { "rank", "file", "peak_allocated_bytes", "oom" })
                QVERIFY2(rank.contains(QLatin1String(key)), key);
            QCOMPARE(rank[QStringLiteral("rank")].toInt(), r);
            QVERIFY(rank[QStringLiteral("peak_allocated_bytes")].toDouble() > 0);
            QCOMPARE(rank[QStringLiteral("oom")].toBool(), r == 5 || r == 6);
        }
        QCOMPARE(ranks[3].toObject()[QStringLiteral("rank_source")].toString(), QStringLiteral("metadata"));
        QVERIFY(ranks[3].toObject()[QStringLiteral("file")].toString().endsWith(QStringLiteral("worker-b.pickle")));
        QVERIFY(job[QStringLiteral("imbalance")].isDouble());
        QVERIFY(job[QStringLiteral("imbalance")].toDouble() > 1.1);
        QCOMPARE(job[QStringLiteral("failing_rank")].toInt(-1), 6);
        QCOMPARE(job[QStringLiteral("failing_reason")].toString(), QStringLiteral("first_oom"));

        // The rest of the document describes the failing rank, with the text given beside the ranks.
        const QJsonArray snapshots = root[QStringLiteral("snapshots")].toArray();
        QCOMPARE(snapshots.size(), 1);
        QCOMPARE(snapshots[0].toObject()[QStringLiteral("peak_allocated_bytes")].toDouble(),
            ranks[6].toObject()[QStringLiteral("peak_allocated_bytes")].toDouble());
        QCOMPARE(root[QStringLiteral("oom_messages")].toArray().size(), 1);
        QVERIFY(!root[QStringLiteral("diagnoses")].toArray().isEmpty());
        // Every input given is listed.
        QStringList paths;
        for (const QJsonValue& input : root[QStringLiteral("inputs")].toArray())
            paths.append(input.toObject()[QStringLiteral("path")].toString());
        for (const QString& file : rankFiles() + QStringList { oomText() })
            QVERIFY2(paths.contains(file), qPrintable(file));
    }

    // A job's output folder stands for the files in it: its rank files, the traceback beside
    // them, and its notes, listed as not read without failing the run.
    void aFolderIsItsRankFiles()
    {
        const Run run = oomlens({ QStringLiteral("diagnose"), QStringLiteral("--json"), jobDir() });
        QCOMPARE(run.exitCode, 0);
        QVERIFY2(run.err.contains("README.md: not read: "), run.err.constData());
        const QJsonObject job = oomlens::test::parseJsonObject(run.out)[QStringLiteral("job")].toObject();
        QCOMPARE(job[QStringLiteral("ranks")].toArray().size(), 8);
        QCOMPARE(job[QStringLiteral("failing_rank")].toInt(-1), 6);
        // A folder holding no snapshot is still one unreadable input.
        QDir().mkpath(m_dir.filePath(QStringLiteral("nothing")));
        const Run nothing = oomlens({ QStringLiteral("diagnose"), m_dir.filePath(QStringLiteral("nothing")) });
        QCOMPARE(nothing.exitCode, 1);
        QVERIFY(nothing.err.contains("is a folder"));
    }

    // One snapshot is a case as before: no job.
    void oneSnapshotIsNoJob()
    {
        const Run run = oomlens({ QStringLiteral("diagnose"), QStringLiteral("--json"), rankFiles().first() });
        QCOMPARE(run.exitCode, 0);
        QVERIFY(!oomlens::test::parseJsonObject(run.out).contains(QStringLiteral("job")));
        const Run text = oomlens({ QStringLiteral("diagnose"), rankFiles().first(), oomText() });
        QVERIFY(!text.out.startsWith("Job:"));
    }

    void aBrokenRankIsOneErrorLine()
    {
        const QString folder = copyJob(QStringLiteral("broken"));
        // A pickle cut short: sniffed as a snapshot, fails to decode.
        QFile source(folder + QStringLiteral("/rank7.pickle"));
        QVERIFY(source.open(QIODevice::ReadOnly));
        const QByteArray head = source.read(4096);
        QFile broken(folder + QStringLiteral("/rank9.pickle"));
        QVERIFY(broken.open(QIODevice::WriteOnly));
        broken.write(head);
        broken.close();

        const Run run
            = oomlens(QStringList { QStringLiteral("diagnose"), QStringLiteral("--json") } + picklesIn(folder));
        QCOMPARE(run.exitCode, 1);
        const QList<QByteArray> lines = run.err.trimmed().split('\n');
        QCOMPARE(lines.size(), 1);
        QVERIFY(lines[0].contains("rank9.pickle"));
        const QJsonObject job = oomlens::test::parseJsonObject(run.out)[QStringLiteral("job")].toObject();
        const QJsonArray ranks = job[QStringLiteral("ranks")].toArray();
        QCOMPARE(ranks.size(), 9);
        const QJsonObject last = ranks[8].toObject();
        QCOMPARE(last[QStringLiteral("rank")].toInt(), 9);
        QVERIFY(last[QStringLiteral("error")].isString());
        QCOMPARE(job[QStringLiteral("failing_rank")].toInt(-1), 6);
    }

    void reportOpensWithTheJob()
    {
        const QString html = m_dir.filePath(QStringLiteral("job.html"));
        const Run run = oomlens(QStringList { QStringLiteral("report") } + rankFiles()
            + QStringList { oomText(), QStringLiteral("-o"), html });
        QCOMPARE(run.exitCode, 0);
        QFile file(html);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QString document = QString::fromUtf8(file.readAll());
        const qsizetype job = document.indexOf(QStringLiteral("<section id=\"job\">"));
        const qsizetype diagnosis = document.indexOf(QStringLiteral("<section id=\"diagnosis\">"));
        QVERIFY(job > 0);
        QVERIFY(diagnosis > job);
        QVERIFY(document.contains(QStringLiteral("<a href=\"#job\">")));
        const QString section = document.mid(job, diagnosis - job);
        QVERIFY(section.contains(QStringLiteral("class=\"chart job-ranks\"")));
        QVERIFY(section.contains(QStringLiteral("<a href=\"#diagnosis\">")));
        QVERIFY(section.contains(QStringLiteral("Imbalance ")));
        QVERIFY(section.contains(QStringLiteral("ranks 0–3")));
        QVERIFY(section.contains(QStringLiteral("<tr class=\"failing\"><td>6</td>")));
        // One stacked column per rank: each rank's tooltip, and the two OOM markers.
        for (int r = 0; r < 8; ++r)
            QVERIFY(section.contains(QStringLiteral("<title>rank %1 (").arg(r)));
        QVERIFY(section.contains(QStringLiteral(">first OOM</text>")));
        QCOMPARE(section.count(QStringLiteral(">OOM</text>")), 1);
        QVERIFY(!section.contains(QStringLiteral("<script")));
    }

    // A file name is input: escaped in the report like every other string.
    void reportEscapesFileNames()
    {
        const QString folder = copyJob(
            QStringLiteral("hostile"), { { QStringLiteral("rank2.pickle"), QStringLiteral("rank2<script>.pickle") } });
        const QString html = m_dir.filePath(QStringLiteral("hostile.html"));
        const Run run = oomlens(
            QStringList { QStringLiteral("report") } + picklesIn(folder) + QStringList { QStringLiteral("-o"), html });
        QCOMPARE(run.exitCode, 0);
        QFile file(html);
        QVERIFY(file.open(QIODevice::ReadOnly));
        const QByteArray document = file.readAll();
        QVERIFY(document.contains("rank2&lt;script&gt;.pickle"));
        QVERIFY(!document.contains("<script"));
    }
};

QTEST_GUILESS_MAIN(TestJobCli)
#include "tst_jobcli.moc"
