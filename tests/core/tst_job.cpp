#include "common/analysisfixtures.h"
#include "common/testutil.h"
#include "core/caseanalysis.h"
#include "core/job/jobassembly.h"
#include "core/job/jobjson.h"
#include "core/job/jobsummarizer.h"
#include "core/job/jobtext.h"
#include "core/job/rankname.h"
#include "core/job/ranksummary.h"
#include "core/units.h"
#include "parsers/inputloader.h"

#include <QDir>
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QTest>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <thread>

using namespace oomlens;

namespace {

// A readable rank with its peak split between weights and activations (or the mix given).
RankSummary rank(int number, uint64_t peak, bool oom = false, std::optional<int64_t> oomTime = std::nullopt)
{
    RankSummary summary;
    summary.file = "rank" + std::to_string(number) + ".pickle";
    summary.rank = number;
    summary.rankSource = RankSource::FileName;
    summary.peakAllocatedBytes = peak;
    summary.peakReservedBytes = peak + peak / 10;
    summary.categoriesAtPeak[static_cast<size_t>(Category::Parameters)] = peak / 4;
    summary.categoriesAtPeak[static_cast<size_t>(Category::Activations)] = peak - peak / 4;
    summary.oom = oom;
    summary.oomTimeUs = oomTime;
    return summary;
}

std::vector<int> groupRankNumbers(const JobSummary& job, size_t group)
{
    std::vector<int> numbers;
    for (size_t member : job.groups[group].members)
        numbers.push_back(job.ranks[member].rank);
    return numbers;
}

int groupOf(const JobSummary& job, int rankNumber)
{
    for (const RankSummary& summary : job.ranks) {
        if (summary.rank == rankNumber)
            return summary.group;
    }
    return -2;
}

bool anyNoteContains(const JobSummary& job, const std::string& words)
{
    return std::any_of(job.notes.begin(), job.notes.end(),
        [&words](const std::string& note) { return note.find(words) != std::string::npos; });
}

QString jobDir()
{
    return oomlens::test::testDataDir() + QStringLiteral("/job");
}

std::vector<std::string> jobFiles()
{
    std::vector<std::string> files;
    const QDir dir(jobDir());
    for (const QString& name : dir.entryList({ QStringLiteral("*.pickle") }, QDir::Files, QDir::Name))
        files.push_back(dir.filePath(name).toStdString());
    return files;
}

Case readFile(const std::string& path)
{
    Case rankCase;
    addFile(rankCase, path);
    return rankCase;
}

const char* const smallTrace = "alloc w 256MiB load\n"
                               "alloc a 128MiB fwd\n"
                               "free a bwd\n";

} // namespace

class TestJob : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void rankFromFileName_data()
    {
        QTest::addColumn<QString>("path");
        QTest::addColumn<int>("rank"); // -1: none
        QTest::newRow("rank3") << QStringLiteral("rank3.pickle") << 3;
        QTest::newRow("rank_3") << QStringLiteral("/jobs/run1/rank_3.pickle") << 3;
        QTest::newRow("rank-03") << QStringLiteral("rank-03.pkl") << 3;
        QTest::newRow("upper case") << QStringLiteral("RANK12.PICKLE") << 12;
        QTest::newRow("inside a name") << QStringLiteral("oom_snapshot.rank7.pickle.gz") << 7;
        QTest::newRow("launcher prefix") << QStringLiteral("[rank5]_memory.pickle") << 5;
        QTest::newRow("r3") << QStringLiteral("r3.pickle") << 3;
        QTest::newRow("snap_r11") << QStringLiteral("snap_r11.pickle") << 11;
        QTest::newRow("trailing number") << QStringLiteral("snapshot_3.pickle") << 3;
        QTest::newRow("trailing dash number") << QStringLiteral("mem-06.pickle") << 6;
        QTest::newRow("bare number") << QStringLiteral("4.pickle") << 4;
        QTest::newRow("rank folder") << QStringLiteral("logs/rank_2/snapshot.pickle") << 2;
        QTest::newRow("no number") << QStringLiteral("snapshot.pickle") << -1;
        QTest::newRow("a model name is no rank") << QStringLiteral("gpt2.pickle") << -1;
        QTest::newRow("a timestamp is no rank") << QStringLiteral("snapshot_1757253255.pickle") << -1;
        QTest::newRow("a word with r inside") << QStringLiteral("worker-b.pickle") << -1;
    }
    void rankFromFileName()
    {
        QFETCH(QString, path);
        QFETCH(int, rank);
        const std::optional<int> parsed = oomlens::rankFromFileName(path.toStdString());
        QCOMPARE(parsed.value_or(-1), rank);
    }

    // The capture metadata is what the launcher ran the process as; a file can be renamed.
    void metadataWinsOverTheName()
    {
        Case rankCase;
        rankCase.snapshots.push_back(test::traceSnapshot(smallTrace));
        rankCase.inputs.push_back({ "rank3.pickle", InputKind::Snapshot, std::nullopt, 0 });
        CaptureSidecar sidecar;
        sidecar.rank = 5;
        sidecar.worldSize = 8;
        sidecar.totalMemoryBytes = 1 * GiB;
        sidecar.snapshotIndex = 0;
        rankCase.sidecars.push_back(sidecar);
        const CaseAnalysis analysis = analyzeCase(rankCase);
        const RankSummary summary = summarizeRank("rank3.pickle", rankCase, analysis);
        QCOMPARE(summary.rank, 5);
        QCOMPARE(summary.rankSource, RankSource::Metadata);
        QCOMPARE(summary.rankFromName.value_or(-1), 3);
        QCOMPARE(summary.worldSize.value_or(0), 8);
        QCOMPARE(summary.notes.size(), size_t(1));
        QVERIFY(summary.notes.front().find("rank 3") != std::string::npos);
        QCOMPARE(summary.peakAllocatedBytes, uint64_t(384 * MiB));
        QCOMPARE(summary.capacityBytes.value_or(0), uint64_t(1 * GiB));
        QVERIFY(!summary.oom);
    }

    void theOnlyOomIsTheFailingRank()
    {
        const JobSummary job = assembleJob({ rank(0, 10 * GiB), rank(1, 9 * GiB, true), rank(2, 11 * GiB) });
        QVERIFY(job.failing());
        QCOMPARE(job.failing()->rank, 1);
        QCOMPARE(job.failingReason, FailingRankReason::OnlyOom);
        QVERIFY(!job.failingIsClosestOnly());
        QCOMPARE(job.oomRanks, size_t(1));
    }

    // Several ranks failed: the first by time_us, whatever the order of the files or rank numbers.
    void theFirstToFailIsTheFailingRank()
    {
        const JobSummary job = assembleJob({ rank(3, 10 * GiB, true, 5'000'000), rank(1, 10 * GiB, true, 7'000'000),
            rank(2, 10 * GiB, true, 4'999'000), rank(0, 10 * GiB) });
        QCOMPARE(job.failing()->rank, 2);
        QCOMPARE(job.failingReason, FailingRankReason::FirstOom);
        QCOMPARE(job.oomRanks, size_t(3));
        QVERIFY(anyNoteContains(job, "3 ranks hit an OOM"));
        QVERIFY(anyNoteContains(job, "1.0 ms before the next"));
    }

    void oomsWithoutTimeCannotBeOrdered()
    {
        const JobSummary job = assembleJob({ rank(4, 10 * GiB, true), rank(2, 10 * GiB, true) });
        QCOMPARE(job.failingReason, FailingRankReason::OomOrderUnknown);
        QCOMPARE(job.failing()->rank, 2); // the lowest rank, as listed
        QVERIFY(anyNoteContains(job, "cannot be told"));
    }

    void noOomNamesTheRankClosestToItsCard()
    {
        std::vector<RankSummary> ranks { rank(0, 10 * GiB), rank(1, 12 * GiB), rank(2, 9 * GiB) };
        ranks[0].capacityBytes = 16 * GiB; // 11 GiB reserved of 16: 69 %
        ranks[1].capacityBytes = 40 * GiB; // the highest peak, but on a larger card: 33 %
        ranks[2].capacityBytes = 11 * GiB; // 9.9 GiB of 11: 90 %
        const JobSummary job = assembleJob(ranks);
        QCOMPARE(job.failing()->rank, 2);
        QCOMPARE(job.failingReason, FailingRankReason::ClosestToCapacity);
        QVERIFY(job.failingIsClosestOnly());
        QVERIFY(failingRankSentence(job).find("came closest") != std::string::npos);

        const JobSummary unknownCards = assembleJob({ rank(0, 10 * GiB), rank(1, 12 * GiB), rank(2, 9 * GiB) });
        QCOMPARE(unknownCards.failing()->rank, 1);
        QCOMPARE(unknownCards.failingReason, FailingRankReason::HighestPeak);
    }

    void imbalanceIsMaxOverMedian()
    {
        const JobSummary even = assembleJob({ rank(0, 10 * GiB), rank(1, 10 * GiB), rank(2, 10 * GiB) });
        QCOMPARE(even.imbalance, 1.0);
        const JobSummary odd = assembleJob({ rank(0, 4 * GiB), rank(1, 6 * GiB), rank(2, 12 * GiB) });
        QCOMPARE(odd.medianPeakBytes, uint64_t(6 * GiB));
        QCOMPARE(odd.imbalance, 2.0);
        // An even count: the mean of the middle two (8 and 12 → 10).
        const JobSummary four
            = assembleJob({ rank(0, 8 * GiB), rank(1, 12 * GiB), rank(2, 20 * GiB), rank(3, 4 * GiB) });
        QCOMPARE(four.medianPeakBytes, uint64_t(10 * GiB));
        QCOMPARE(four.imbalance, 2.0);
        QVERIFY(anyNoteContains(four, "peaks are uneven: rank 2"));
        // An unreadable rank counts in neither.
        std::vector<RankSummary> withBroken { rank(0, 8 * GiB), rank(1, 8 * GiB), unreadableRank("rank2.pickle", "x") };
        QCOMPARE(assembleJob(withBroken).imbalance, 1.0);
    }

    void ranksAreOrderedByNumberUnknownLast()
    {
        RankSummary unnamed = rank(0, GiB);
        unnamed.rank = -1;
        unnamed.file = "a.pickle";
        const JobSummary job = assembleJob({ rank(10, GiB), unnamed, rank(2, GiB) });
        QCOMPARE(job.ranks[0].rank, 2);
        QCOMPARE(job.ranks[1].rank, 10);
        QCOMPARE(job.ranks[2].file, std::string("a.pickle"));
        QVERIFY(anyNoteContains(job, "nothing of its rank"));
    }

    void alikeRanksAreGrouped()
    {
        // Replicas within 5 % form one group; 6 % apart is another; same peak with another mix too.
        RankSummary otherMix = rank(5, 100 * GiB);
        otherMix.categoriesAtPeak = {};
        otherMix.categoriesAtPeak[static_cast<size_t>(Category::OptimizerState)] = 100 * GiB;
        const JobSummary job = assembleJob({ rank(0, 100 * GiB), rank(1, 98 * GiB), rank(2, 96 * GiB),
            rank(3, 99 * GiB), rank(4, 94 * GiB), otherMix });
        QCOMPARE(job.groups.size(), size_t(3));
        QCOMPARE(groupRankNumbers(job, 0), (std::vector<int> { 0, 1, 2, 3 }));
        QCOMPARE(QString::fromStdString(job.groups[0].label), QStringLiteral("ranks 0–3"));
        QCOMPARE(job.groups[0].dominantCategory, Category::Activations);
        QVERIFY(groupOf(job, 4) != groupOf(job, 0));
        QVERIFY(groupOf(job, 5) != groupOf(job, 0));
        QVERIFY(groupOf(job, 5) != groupOf(job, 4));
        QCOMPARE(job.groups[0].minPeakBytes, uint64_t(96 * GiB));
        QCOMPARE(job.groups[0].maxPeakBytes, uint64_t(100 * GiB));
    }

    // Anchored at the largest peak: a drift of 3 % per rank does not chain 100 → 91 into one group.
    void groupsDoNotChain()
    {
        const JobSummary job
            = assembleJob({ rank(0, 100 * GiB), rank(1, 97 * GiB), rank(2, 94 * GiB), rank(3, 91 * GiB) });
        QCOMPARE(job.groups.size(), size_t(2));
        QCOMPARE(groupOf(job, 0), groupOf(job, 1));
        QCOMPARE(groupOf(job, 2), groupOf(job, 3));
        QVERIFY(groupOf(job, 0) != groupOf(job, 2));
    }

    void notesNameUnevenState()
    {
        std::vector<RankSummary> ranks;
        for (int r = 0; r < 4; ++r) {
            RankSummary summary = rank(r, 20 * GiB);
            summary.categoriesAtPeak[static_cast<size_t>(Category::OptimizerState)] = 4 * GiB;
            summary.categoriesAtPeak[static_cast<size_t>(Category::Activations)] -= 4 * GiB;
            ranks.push_back(summary);
        }
        ranks[0].categoriesAtPeak[static_cast<size_t>(Category::OptimizerState)] = 8 * GiB;
        ranks[0].peakAllocatedBytes += 4 * GiB;
        const JobSummary job = assembleJob(ranks);
        QVERIFY2(anyNoteContains(job, "rank 0 holds 2.0x the median rank's optimizer state"), jobToText(job).c_str());

        // Two pipeline stages holding 5 and 10 GiB of weights.
        std::vector<RankSummary> stages { rank(0, 20 * GiB), rank(1, 20 * GiB), rank(2, 40 * GiB), rank(3, 40 * GiB) };
        const JobSummary pipeline = assembleJob(stages);
        QCOMPARE(pipeline.groups.size(), size_t(2));
        QVERIFY2(anyNoteContains(pipeline, "pipeline stages split unevenly"), jobToText(pipeline).c_str());
        QVERIFY(!anyNoteContains(assembleJob({ rank(0, 20 * GiB), rank(1, 20 * GiB) }), "pipeline"));
    }

    void repeatedAndMissingRanksAreNoted()
    {
        std::vector<RankSummary> ranks { rank(0, GiB), rank(1, GiB), rank(1, GiB) };
        ranks[2].file = "copy/rank1.pickle";
        ranks[0].worldSize = 4;
        const JobSummary job = assembleJob(ranks);
        QVERIFY(anyNoteContains(job, "rank 1 is given 2 times"));
        QVERIFY2(anyNoteContains(job, "missing: 2, 3"), jobToText(job).c_str());
    }

    // The memory bound: however many files, no more decoded snapshots alive than workers, and none
    // left alive once the summary exists.
    void decodedSnapshotsNeverExceedTheWorkers_data()
    {
        QTest::addColumn<int>("workers");
        QTest::newRow("one") << 1;
        QTest::newRow("two") << 2;
        QTest::newRow("three") << 3;
    }
    void decodedSnapshotsNeverExceedTheWorkers()
    {
        QFETCH(int, workers);
        std::atomic_int live { 0 };
        std::atomic_int mostLive { 0 };
        std::atomic_int loads { 0 };
        const std::shared_ptr<const Snapshot> decoded = test::traceSnapshot(smallTrace);
        const RankLoader load = [&](const std::string& file) {
            ++loads;
            const int now = ++live;
            int seen = mostLive.load();
            while (now > seen && !mostLive.compare_exchange_weak(seen, now)) { }
            Case rankCase;
            // Shares the one decoded snapshot, but counts each load's reference as a decoded file alive.
            rankCase.snapshots.push_back(
                std::shared_ptr<const Snapshot>(decoded.get(), [&live, keep = decoded](const Snapshot*) { --live; }));
            rankCase.inputs.push_back({ file, InputKind::Snapshot, std::nullopt, 0 });
            std::this_thread::sleep_for(std::chrono::milliseconds(5)); // let the workers overlap
            return rankCase;
        };
        std::vector<std::string> files;
        for (int r = 0; r < 16; ++r)
            files.push_back("rank" + std::to_string(r) + ".pickle");
        JobOptions options;
        options.maxWorkers = static_cast<size_t>(workers);
        // Called from the worker threads: counted here, checked on the test's thread.
        std::atomic_size_t progressCalls { 0 };
        std::atomic_bool totalsRight { true };
        options.progress = [&progressCalls, &totalsRight](size_t done, size_t total) {
            if (total != 16 || done < 1 || done > 16)
                totalsRight = false;
            ++progressCalls;
        };
        const JobSummary job = summarizeJob(files, load, options);
        QCOMPARE(loads.load(), 16);
        QCOMPARE(progressCalls.load(), size_t(16));
        QVERIFY(totalsRight.load());
        QCOMPARE(job.workers, static_cast<size_t>(workers));
        QVERIFY2(mostLive.load() <= workers, qPrintable(QStringLiteral("%1 alive at once").arg(mostLive.load())));
        QVERIFY(mostLive.load() >= 1);
        QCOMPARE(live.load(), 0);
        QCOMPARE(job.ranks.size(), size_t(16));
        for (int r = 0; r < 16; ++r) {
            QCOMPARE(job.ranks[static_cast<size_t>(r)].rank, r);
            QCOMPARE(job.ranks[static_cast<size_t>(r)].peakAllocatedBytes, uint64_t(384 * MiB));
        }
        QCOMPARE(job.groups.size(), size_t(1));
        QCOMPARE(QString::fromStdString(job.groups[0].label), QStringLiteral("ranks 0–15"));
    }

    void workersAreCoresBoundedByFiles()
    {
        QCOMPARE(jobWorkerCount(1), size_t(1));
        QCOMPARE(jobWorkerCount(0), size_t(1));
        QCOMPARE(jobWorkerCount(64, 2), size_t(2));
        QCOMPARE(jobWorkerCount(3, 8), size_t(3));
        QVERIFY(jobWorkerCount(64) >= 1);
        QVERIFY(jobWorkerCount(64) <= std::max<size_t>(1, std::thread::hardware_concurrency()));
    }

    void anUnreadableRankIsReportedNotFatal()
    {
        const std::string good = QString(jobDir() + QStringLiteral("/rank0.pickle")).toStdString();
        const JobSummary job = summarizeJob({ good, "/nonexistent/rank1.pickle" }, readFile);
        QCOMPARE(job.ranks.size(), size_t(2));
        QVERIFY(job.ranks[0].readable());
        QVERIFY(!job.ranks[1].readable());
        QCOMPARE(job.ranks[1].rank, 1); // from the name, still
        QCOMPARE(job.ranks[1].error, std::string("no such file"));
        QCOMPARE(job.failing()->rank, 0);
        QVERIFY(anyNoteContains(job, "1 rank file could not be read"));
    }

    void cancelLeavesRanksUnread()
    {
        const std::atomic_bool cancel { true };
        JobOptions options;
        options.cancel = &cancel;
        int loads = 0;
        const JobSummary job = summarizeJob(
            { "rank0.pickle", "rank1.pickle" },
            [&loads](const std::string&) {
                ++loads;
                return Case {};
            },
            options);
        QCOMPARE(loads, 0);
        QCOMPARE(job.ranks[0].error, std::string("loading was cancelled"));
        QVERIFY(!job.failing());
    }

    // The bundled job (tests/tools/make_job.py): 2 pipeline stages × 4 replicas, ranks 5 and 6 OOM.
    void theGeneratedJob()
    {
        const std::vector<std::string> files = jobFiles();
        QCOMPARE(files.size(), size_t(8));
        const QJsonObject truth
            = QJsonDocument::fromJson(test::readFile(jobDir() + QStringLiteral("/job.json"))).object();
        const JobSummary job = summarizeJob(files, readFile);

        QCOMPARE(job.ranks.size(), size_t(8));
        for (int r = 0; r < 8; ++r) {
            const RankSummary& summary = job.ranks[static_cast<size_t>(r)];
            const QJsonObject expected = truth[QStringLiteral("ranks")].toArray()[r].toObject();
            QCOMPARE(summary.rank, r);
            QVERIFY2(summary.readable(), summary.error.c_str());
            QCOMPARE(summary.oom, expected[QStringLiteral("oom")].toBool());
            QVERIFY(QString::fromStdString(summary.file).endsWith(expected[QStringLiteral("file")].toString()));
        }
        // worker-b.pickle: the rank only in the sidecar beside it, with the card.
        const RankSummary& sidecarRank = job.ranks[3];
        QCOMPARE(sidecarRank.rankSource, RankSource::Metadata);
        QVERIFY(!sidecarRank.rankFromName);
        QCOMPARE(sidecarRank.capacityBytes.value_or(0),
            static_cast<uint64_t>(truth[QStringLiteral("capacity_bytes")].toDouble()));
        QCOMPARE(job.ranks[0].rankSource, RankSource::FileName);

        QCOMPARE(job.oomRanks, size_t(2));
        QCOMPARE(job.failing()->rank, truth[QStringLiteral("failing_rank")].toInt());
        QCOMPARE(job.failingReason, FailingRankReason::FirstOom);
        QVERIFY(*job.ranks[6].oomTimeUs < *job.ranks[5].oomTimeUs);
        QCOMPARE(job.ranks[6].topDiagnosisId.has_value(), true);

        // Stage 0's four replicas look alike; no stage-1 rank joins them.
        const int stage0 = job.ranks[0].group;
        for (int r = 1; r < 4; ++r)
            QCOMPARE(job.ranks[static_cast<size_t>(r)].group, stage0);
        for (int r = 4; r < 8; ++r)
            QVERIFY(job.ranks[static_cast<size_t>(r)].group != stage0);
        QCOMPARE(job.ranks[4].group, job.ranks[7].group);
        QVERIFY(job.imbalance > 1.1);
        QVERIFY2(anyNoteContains(job, "pipeline stages split unevenly"), jobToText(job).c_str());
        QVERIFY(anyNoteContains(job, "2 ranks hit an OOM (ranks 5, 6); rank 6 was first"));

        // The JSON keys of product.md §5.
        const nlohmann::ordered_json json = jobToJson(job);
        QCOMPARE(json["ranks"].size(), size_t(8));
        QCOMPARE(json["failing_rank"].get<int>(), 6);
        QVERIFY(json["imbalance"].get<double>() > 1.1);
        for (const char* key : { "rank", "file", "peak_allocated_bytes", "oom" })
            QVERIFY2(json["ranks"][0].contains(key), key);
        QCOMPARE(json["ranks"][6]["oom"].get<bool>(), true);
        QCOMPARE(json["ranks"][6]["peak_allocated_bytes"].get<uint64_t>(), job.ranks[6].peakAllocatedBytes);
    }
};

QTEST_GUILESS_MAIN(TestJob)
#include "tst_job.moc"
