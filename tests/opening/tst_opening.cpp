// The one way in (opening/): which files make a job, and what opening a case or a job gives the
// CLI, the app and the MCP server alike — the inputs read, their failures in order, progress,
// cancel and the timeline handed over first. The front ends' suites (tst_diagnosecli,
// tst_jobcli, tst_mcpserver, tst_jobview, tst_dropandpaste, tst_timelinefirst) check their own
// wrappers over this.
#include "common/jsonsnapshot.h"
#include "common/testutil.h"
#include "opening/jobfiles.h"
#include "opening/opening.h"
#include "parsers/inputloader.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <atomic>
#include <mutex>

using namespace oomlens;

namespace {

QString jobFile(const QString& name)
{
    return test::testDataDir() + QStringLiteral("/job/") + name;
}

QString scenario(const QString& name)
{
    return test::testDataDir() + QStringLiteral("/scenarios/") + name;
}

void writeFile(const QString& path, const QByteArray& bytes)
{
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    QCOMPARE(file.write(bytes), bytes.size());
}

std::vector<LoadRequest> files(const QStringList& paths)
{
    std::vector<LoadRequest> requests;
    for (const QString& path : paths)
        requests.push_back(LoadRequest::file(path.toStdString()));
    return requests;
}

// The job rule over the suite's QString paths.
QStringList jobRankFiles(const QStringList& paths)
{
    return test::toQStringList(oomlens::jobRankFiles(test::toStdStrings(paths)));
}

QStringList besideRanks(const QStringList& paths, const QStringList& rankFiles)
{
    return test::toQStringList(oomlens::besideRanks(test::toStdStrings(paths), test::toStdStrings(rankFiles)));
}

QStringList expandFolders(const QStringList& paths)
{
    return test::toQStringList(oomlens::expandFolders(test::toStdStrings(paths)));
}

QStringList inputPaths(const Case& input)
{
    QStringList paths;
    for (const CaseInput& in : input.inputs)
        paths.append(QString::fromStdString(in.path));
    return paths;
}

// A rank summary `oomlens summarize` could have written, recognised by content, whose `oom` is
// not a boolean: a summary that cannot be read.
const QByteArray damagedSummary = R"({"oomlens_rank_summary": 1, "snapshot": {"path": "rank9.pickle"}, "oom": "yes"})";

} // namespace

class TestOpening : public QObject
{
    Q_OBJECT
private slots:
    // Each snapshot is one process: two are two ranks of a job, whatever else is given with them
    // (the log and the traceback then belong to the failing rank). One snapshot with its log is
    // one case. The rule judges files by content, never by name.
    void theJobRule()
    {
        const QString rank5 = jobFile(QStringLiteral("rank5.pickle"));
        const QString rank6 = jobFile(QStringLiteral("rank6.pickle"));
        const QString traceback = jobFile(QStringLiteral("rank6.oom.txt"));
        QCOMPARE(jobRankFiles({ rank5, traceback, rank6 }), QStringList({ rank5, rank6 }));
        QCOMPARE(besideRanks({ rank5, traceback, rank6 }, { rank5, rank6 }), QStringList { traceback });
        QVERIFY(jobRankFiles({ rank6, traceback }).isEmpty());
        QVERIFY(jobRankFiles({ rank6 }).isEmpty());
        QVERIFY(jobRankFiles({ traceback, scenario(QStringLiteral("first_backward.oom.txt")) }).isEmpty());
        QVERIFY(jobRankFiles({ QStringLiteral("-"), rank6 }).isEmpty()); // standard input is text
        QVERIFY(jobRankFiles({ QStringLiteral("/nonexistent/rank0.pickle"), rank6 }).isEmpty());

        // A rank summary means nothing but as a rank of a job, even alone (readable or not).
        QTemporaryDir dir;
        const QString summary = dir.filePath(QStringLiteral("rank9.oomlens-summary.json"));
        writeFile(summary, damagedSummary);
        QCOMPARE(jobRankFiles({ summary }), QStringList { summary });
        QCOMPARE(jobRankFiles({ traceback, summary }), QStringList { summary });

        // A snapshot under a name that says otherwise is still a rank; text named .pickle is not.
        const QString renamed = dir.filePath(QStringLiteral("notes.txt"));
        QVERIFY(QFile::copy(rank5, renamed));
        const QString fake = dir.filePath(QStringLiteral("rank1.pickle"));
        writeFile(fake, "just text\n");
        QCOMPARE(jobRankFiles({ renamed, fake, rank6 }), QStringList({ renamed, rank6 }));
    }

    // Every file in it, so that nothing there is dropped in silence: the ranks, the traceback
    // beside them and the notes (read, or listed with the reason they were not), but the capture
    // sidecar, which is read with its snapshot.
    void aFolderStandsForWhatItHolds()
    {
        const QStringList expanded = expandFolders({ test::testDataDir() + QStringLiteral("/job") });
        QVERIFY(expanded.contains(jobFile(QStringLiteral("rank0.pickle"))));
        QVERIFY(expanded.contains(jobFile(QStringLiteral("worker-b.pickle"))));
        QVERIFY(expanded.contains(jobFile(QStringLiteral("rank6.oom.txt"))));
        QVERIFY(expanded.contains(jobFile(QStringLiteral("README.md"))));
        QVERIFY(!expanded.contains(jobFile(QStringLiteral("worker-b.oomlens.json"))));
        QCOMPARE(jobRankFiles(expanded).size(), qsizetype(8));

        QTemporaryDir empty;
        const QString traceback = jobFile(QStringLiteral("rank6.oom.txt"));
        QCOMPARE(expandFolders({ QStringLiteral("-"), empty.path(), traceback }),
            QStringList({ QStringLiteral("-"), empty.path(), traceback })); // reported as unreadable later
    }

    // Two snapshots and a traceback: the job's summary first, then the failing rank opened in
    // full with the traceback given beside the ranks.
    void ranksAndTheirTracebackAreAJob()
    {
        const QString traceback = jobFile(QStringLiteral("rank6.oom.txt"));
        const Opened opened = openInputs(
            files({ jobFile(QStringLiteral("rank5.pickle")), traceback, jobFile(QStringLiteral("rank6.pickle")) }));
        QVERIFY(!opened.cancelled);
        QVERIFY(opened.failures.empty());
        QVERIFY(opened.job);
        QCOMPARE(opened.job->ranks.size(), size_t(2));
        QVERIFY(opened.job->failing());
        QCOMPARE(opened.job->failing()->rank, 6);
        QCOMPARE(opened.failingSnapshot, jobFile(QStringLiteral("rank6.pickle")).toStdString());
        QVERIFY(opened.loaded);
        QCOMPARE(inputPaths(opened.loaded->input), QStringList({ jobFile(QStringLiteral("rank6.pickle")), traceback }));
        QCOMPARE(opened.loaded->title, std::string("rank6.pickle"));
        QCOMPARE(opened.loaded->input.snapshots.size(), size_t(1));
        QVERIFY(!opened.loaded->analysis.diagnoses.empty());
        QVERIFY(!opened.loaded->input.text.oomMessages.empty()); // the traceback's OOM line, read with rank 6
    }

    // One snapshot and its traceback are one case, analyzed as core analyzes it.
    void oneSnapshotAndItsTracebackAreACase()
    {
        const QStringList paths { scenario(QStringLiteral("first_backward.pickle")),
            scenario(QStringLiteral("first_backward.oom.txt")) };
        const Opened opened = openInputs(files(paths));
        QVERIFY(!opened.job);
        QVERIFY(opened.failures.empty());
        QCOMPARE(inputPaths(opened.loaded->input), paths);

        Case direct;
        for (const QString& path : paths)
            addFile(direct, path.toStdString());
        const CaseAnalysis expected = analyzeCase(direct);
        QCOMPARE(opened.loaded->analysis.diagnoses.size(), expected.diagnoses.size());
        QVERIFY(!expected.diagnoses.empty());
        for (size_t i = 0; i < expected.diagnoses.size(); ++i)
            QVERIFY(opened.loaded->analysis.diagnoses[i].id == expected.diagnoses[i].id);
    }

    // Every input that cannot be read is one failure, in the order given, the others still
    // analyzed; a broken capture sidecar is only a warning (its snapshot was read).
    void failuresInOrderAndSidecarsAsWarnings()
    {
        QTemporaryDir dir;
        const QString snapshot = dir.filePath(QStringLiteral("run.json"));
        writeFile(snapshot, QByteArray::fromStdString(test::tinyJsonSnapshot(64 << 20, 32 << 20, 5000)));
        writeFile(dir.filePath(QStringLiteral("run.oomlens.json")), "{ broken");
        const QString missing = dir.filePath(QStringLiteral("missing.txt"));

        Opened opened = openInputs({ LoadRequest::file(missing.toStdString()),
            LoadRequest::file(snapshot.toStdString()), LoadRequest::pasted("Killed\n", "-") });
        QVERIFY(!opened.job);
        QCOMPARE(opened.failures.size(), size_t(2));
        QCOMPARE(opened.failures[0].path, missing.toStdString());
        QVERIFY(!opened.failures[0].reason.empty());
        QVERIFY(!opened.failures[0].warningOnly);
        QVERIFY(opened.failures[1].path.find("run.oomlens.json") != std::string::npos);
        QVERIFY(opened.failures[1].warningOnly);
        QCOMPARE(opened.failedInputs(), 1);
        QVERIFY(opened.anyReadable());
        QCOMPARE(opened.loaded->input.snapshots.size(), size_t(1));
        QVERIFY(inputPaths(opened.loaded->input).contains(QStringLiteral("-"))); // standard input's name

        opened = openInputs(files({ missing }));
        QCOMPARE(opened.failedInputs(), 1);
        QVERIFY(!opened.anyReadable());
        QVERIFY(opened.loaded); // still a case: the CLI prints what it can of it
    }

    // A rank that cannot be read is a failure of the job; the other ranks still make it.
    void anUnreadableRankIsAFailureOfTheJob()
    {
        QTemporaryDir dir;
        const QString summary = dir.filePath(QStringLiteral("rank9.oomlens-summary.json"));
        writeFile(summary, damagedSummary);
        const QString truncated = dir.filePath(QStringLiteral("rank2.pickle"));
        writeFile(truncated, test::readFile(jobFile(QStringLiteral("rank2.pickle"))).left(4000));
        const Opened opened = openInputs(files({ jobFile(QStringLiteral("rank6.pickle")), truncated, summary }));
        QVERIFY(opened.job);
        QCOMPARE(opened.job->ranks.size(), size_t(3));
        QCOMPARE(opened.job->failing()->rank, 6);
        QCOMPARE(opened.failedInputs(), 2);
        QCOMPARE(opened.failures[0].path, truncated.toStdString()); // the ranks in the order given
        QCOMPARE(opened.failures[1].path, summary.toStdString());
        QCOMPARE(opened.failures[1].where(), summary.toStdString()); // the summary itself is broken
        QVERIFY(opened.failures[1].reason.find("\"oom\" is not true or false") != std::string::npos);
        QCOMPARE(opened.loaded->input.snapshots.size(), size_t(1));

        // Nothing readable: no failing rank, and an empty case (no rank to read in full).
        const Opened none = openInputs(files({ summary }));
        QVERIFY(none.job);
        QVERIFY(!none.job->failing());
        QCOMPARE(none.failedInputs(), 1);
        QVERIFY(none.loaded && none.loaded->input.inputs.empty());
        QVERIFY(none.loaded->title.empty());
    }

    // Progress is in permille of the bytes read, then the analysis: it only grows and ends done.
    void progressGrowsToDone()
    {
        OpenOptions options;
        std::vector<int> permille;
        QStringList texts;
        options.progress = [&](int value, const std::string& text) {
            permille.push_back(value);
            texts.append(QString::fromStdString(text));
        };
        const Opened opened = openCase(nullptr,
            files({ scenario(QStringLiteral("first_backward.pickle")),
                scenario(QStringLiteral("first_backward.oom.txt")) }),
            "run", options);
        QVERIFY(opened.loaded);
        QCOMPARE(opened.loaded->title, std::string("run"));
        QVERIFY(permille.size() >= 3);
        QVERIFY(std::is_sorted(permille.begin(), permille.end()));
        QCOMPARE(permille.back(), 1000);
        QVERIFY(std::find(permille.begin(), permille.end(), 900) != permille.end());
        QCOMPARE(texts.front(), QStringLiteral("Reading first_backward.pickle…"));
        QVERIFY(texts.contains(QStringLiteral("Analyzing…")));
    }

    // A job counts its ranks as the worker pool finishes them.
    void aJobCountsItsRanks()
    {
        OpenOptions options;
        std::mutex mutex;
        std::vector<std::pair<size_t, size_t>> counts;
        options.rankProgress = [&](size_t done, size_t total) {
            const std::lock_guard lock(mutex);
            counts.emplace_back(done, total);
        };
        const QStringList ranks { jobFile(QStringLiteral("rank0.pickle")), jobFile(QStringLiteral("rank5.pickle")),
            jobFile(QStringLiteral("rank6.pickle")) };
        const Opened opened = openJob(test::toStdStrings(ranks), {}, options);
        QVERIFY(opened.job);
        QCOMPARE(counts.size(), size_t(3));
        std::sort(counts.begin(), counts.end());
        for (size_t i = 0; i < counts.size(); ++i)
            QCOMPARE(counts[i], std::make_pair(i + 1, size_t(3)));
    }

    void cancelledBeforeAnythingIsRead()
    {
        std::atomic_bool cancel = true;
        OpenOptions options;
        options.cancel = &cancel;
        const Opened opened
            = openCase(nullptr, files({ scenario(QStringLiteral("first_backward.pickle")) }), {}, options);
        QVERIFY(opened.cancelled);
        QVERIFY(!opened.loaded);

        const Opened job = openInputs(
            files({ jobFile(QStringLiteral("rank5.pickle")), jobFile(QStringLiteral("rank6.pickle")) }), options);
        QVERIFY(job.cancelled);
        QVERIFY(!job.loaded);
    }

    // The timeline first: handed over once, from a thread of its own, before openCase returns,
    // as the very case it then returns. Only a new case stages; a job's failing rank never does.
    void theTimelineIsHandedOverFirst()
    {
        OpenOptions options;
        options.timelineFirstFrom = 0;
        std::atomic_int calls = 0;
        AnalyzedCasePtr handedOver;
        size_t snapshotsSeen = 0;
        options.timelineFirst = [&](const AnalyzedCasePtr& partial) {
            ++calls;
            handedOver = partial;
            snapshotsSeen = partial->analysis.snapshots.size();
        };
        const std::vector<LoadRequest> run = files(
            { scenario(QStringLiteral("first_backward.pickle")), scenario(QStringLiteral("first_backward.oom.txt")) });
        const Opened opened = openCase(nullptr, run, "run", options);
        QCOMPARE(calls.load(), 1);
        QCOMPARE(handedOver.get(), opened.loaded.get());
        QCOMPARE(snapshotsSeen, size_t(1));
        QVERIFY(!opened.loaded->analysis.diagnoses.empty());

        // Added to an open case: the case is already drawn, nothing to stage.
        const Opened added = openCase(opened.loaded, files({ jobFile(QStringLiteral("rank6.oom.txt")) }), {}, options);
        QCOMPARE(calls.load(), 1);
        QCOMPARE(added.loaded->input.inputs.size(), opened.loaded->input.inputs.size() + 1);
        QCOMPARE(added.loaded->title, std::string("run"));

        // Below the threshold the case arrives whole.
        options.timelineFirstFrom = OpenOptions::defaultTimelineFirstFrom;
        openCase(nullptr, run, {}, options);
        QCOMPARE(calls.load(), 1);

        options.timelineFirstFrom = 0;
        openInputs(
            files({ jobFile(QStringLiteral("rank5.pickle")), jobFile(QStringLiteral("rank6.pickle")) }), options);
        QCOMPARE(calls.load(), 1);
    }

    // Added to an open case, only the new inputs' failures are this opening's.
    void addingReportsOnlyTheNewFailures()
    {
        const Opened first = openCase(nullptr, files({ QStringLiteral("/nonexistent/a.txt") }), "a");
        QCOMPARE(first.failedInputs(), 1);
        const Opened added = openCase(first.loaded, { LoadRequest::pasted("Killed\n") }, {});
        QVERIFY(added.failures.empty());
        QVERIFY(added.anyReadable());
        QCOMPARE(inputPaths(added.loaded->input),
            QStringList({ QStringLiteral("/nonexistent/a.txt"), QStringLiteral("(pasted)") }));
    }
};

QTEST_GUILESS_MAIN(TestOpening)
#include "tst_opening.moc"
