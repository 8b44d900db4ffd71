#include "common/jsonsnapshot.h"
#include "common/testutil.h"
#include "core/job/jobassembly.h"
#include "core/job/jobtext.h"
#include "core/job/ranksummaryfile.h"
#include "opening/jobgathering.h"
#include "parsers/ranksummaryfiles.h"
#include "parsers/sidecarreader.h"
#include "parsers/snapshotreader.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <stdexcept>

using namespace oomlens;
using oomlens::test::tinyJsonSnapshot;

namespace {

// Every field of a rank set, so that a field the file loses shows.
SummarizedRank fullRank()
{
    SummarizedRank summary;
    RankSummary& rank = summary.rank;
    rank.file = "/cluster/job/rank_5/snapshot.pickle";
    rank.rank = 5;
    rank.rankSource = RankSource::Metadata;
    rank.rankFromName = 4;
    rank.rankFromMetadata = 5;
    rank.worldSize = 1024;
    rank.device = 3;
    rank.peakAllocatedBytes = 70'000'000'123ULL;
    rank.peakReservedBytes = 75'000'000'000ULL;
    rank.peakTimeUs = 1'700'000'000'000'123LL;
    rank.categoriesAtPeak[static_cast<size_t>(Category::Parameters)] = 20'000'000'000ULL;
    rank.categoriesAtPeak[static_cast<size_t>(Category::Activations)] = 50'000'000'000ULL;
    rank.categoriesAtPeak[static_cast<size_t>(Category::Unknown)] = 123;
    rank.topSitesAtPeak = { { "model.py:12 forward", 40'000'000'000ULL }, { "train.py:80 main", 20'000'000'000ULL } };
    rank.oom = true;
    rank.categoriesAtOom[static_cast<size_t>(Category::Activations)] = 51'000'000'000ULL;
    rank.oomTimeUs = 1'700'000'000'000'999LL;
    rank.capacityBytes = 80ULL << 30;
    rank.restOfCardBytes = 2300ULL << 20;
    rank.deviceName = "NVIDIA H100 80GB HBM3 \"é\"";
    rank.topDiagnosisId = DiagnosisId::LongestBatch;
    rank.topDiagnosisTitle = "The longest batch did not fit";
    rank.notes = { "the file name says rank 4 but its capture metadata says rank 5; the metadata's rank is used" };
    summary.snapshot = { rank.file, 123456789, 0xfedcba9876543210ULL };
    summary.oomlensVersion = "9.9.9";
    summary.device = 3;
    summary.rules = "rules.yaml";
    return summary;
}

void writeFile(const QString& path, const std::string& text)
{
    QFile file(path);
    QVERIFY(file.open(QIODevice::WriteOnly));
    file.write(text.data(), static_cast<qint64>(text.size()));
}

} // namespace

class TestRankSummaryFile : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void everyFieldSurvivesTheFile()
    {
        const SummarizedRank written = fullRank();
        const std::string text = summarizedRankToJson(written);
        QVERIFY(text.ends_with('\n'));
        QVERIFY(looksLikeRankSummary(text));
        const SummarizedRank read = summarizedRankFromJson(text);
        const RankSummary& a = written.rank;
        const RankSummary& b = read.rank;
        QCOMPARE(b.file, a.file);
        QCOMPARE(b.rank, a.rank);
        QCOMPARE(b.rankSource, a.rankSource);
        QCOMPARE(b.rankFromName, a.rankFromName);
        QCOMPARE(b.rankFromMetadata, a.rankFromMetadata);
        QCOMPARE(b.worldSize, a.worldSize);
        QCOMPARE(b.error, a.error);
        QCOMPARE(b.device, a.device);
        QCOMPARE(b.peakAllocatedBytes, a.peakAllocatedBytes);
        QCOMPARE(b.peakReservedBytes, a.peakReservedBytes);
        QCOMPARE(b.peakTimeUs, a.peakTimeUs);
        QVERIFY(b.categoriesAtPeak == a.categoriesAtPeak);
        QVERIFY(b.topSitesAtPeak == a.topSitesAtPeak);
        QCOMPARE(b.oom, a.oom);
        QVERIFY(b.categoriesAtOom == a.categoriesAtOom);
        QCOMPARE(b.oomTimeUs, a.oomTimeUs);
        QCOMPARE(b.capacityBytes, a.capacityBytes);
        QCOMPARE(b.restOfCardBytes, a.restOfCardBytes);
        QCOMPARE(b.deviceName, a.deviceName);
        QCOMPARE(b.topDiagnosisId, a.topDiagnosisId);
        QCOMPARE(b.topDiagnosisTitle, a.topDiagnosisTitle);
        QCOMPARE(b.notes, a.notes);
        QCOMPARE(read.snapshot.path, written.snapshot.path);
        QCOMPARE(read.snapshot.sizeBytes, written.snapshot.sizeBytes);
        QCOMPARE(read.snapshot.hash, written.snapshot.hash);
        QCOMPARE(read.oomlensVersion, written.oomlensVersion);
        QCOMPARE(read.device, written.device);
        QCOMPARE(read.rules, written.rules);
        // Written again, byte for byte the same.
        QCOMPARE(summarizedRankToJson(read), text);
    }

    void anUnreadableRankKeepsItsError()
    {
        SummarizedRank written;
        written.rank.file = "rank7.pickle";
        written.rank.rankFromName = 7;
        written.rank.rank = 7;
        written.rank.rankSource = RankSource::FileName;
        written.rank.error = "the snapshot is corrupt: truncated";
        written.snapshot.path = "rank7.pickle";
        const SummarizedRank read = summarizedRankFromJson(summarizedRankToJson(written));
        QVERIFY(!read.rank.readable());
        QCOMPARE(read.rank.error, written.rank.error);
        QCOMPARE(read.rank.rank, 7);
        QVERIFY(!read.snapshot.hash);
        QVERIFY(!read.rank.topDiagnosisId);
    }

    // The hash ties summaries to snapshots across oomlens versions: a change of core/hash.h must
    // come with a new snapshotHashAlgorithm, and this test says so.
    void theContentHashIsPinned()
    {
        QCOMPARE(hashText(snapshotContentHash("")), std::string("201900628ab9c954"));
        QCOMPARE(hashText(snapshotContentHash("oomlens rank summary")), std::string("cc0a4996220720ec"));
        QCOMPARE(hashFromText(hashText(0x0123456789abcdefULL)), std::optional<uint64_t>(0x0123456789abcdefULL));
        QVERIFY(!hashFromText("0123"));
        QVERIFY(!hashFromText("0123456789abcdeg"));
    }

    // Told by content: a summary is no snapshot, no capture sidecar, and neither of those is a summary.
    void summariesAreToldByContent()
    {
        const std::string summary = summarizedRankToJson(fullRank());
        QVERIFY(!looksLikeSnapshot(summary));
        QVERIFY(!looksLikeCaptureSidecar(summary));
        QVERIFY(!looksLikeRankSummary(tinyJsonSnapshot(1 << 20, 1 << 20)));
        QVERIFY(!looksLikeRankSummary(R"({"rank": 3, "world_size": 8, "device_name": "H100"})"));
        QVERIFY(!looksLikeRankSummary("rank 3 says oomlens_rank_summary"));
        QVERIFY(!looksLikeRankSummary(""));
    }

    void damagedFilesSayWhy_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("reason");
        QTest::newRow("malformed") << QStringLiteral(R"({"oomlens_rank_summary": 1, "snapshot": )")
                                   << QStringLiteral("malformed");
        QTest::newRow("newer") << QStringLiteral(R"({"oomlens_rank_summary": 7, "snapshot": {"path": "a"}})")
                               << QStringLiteral("newer than this oomlens");
        QTest::newRow("no snapshot") << QStringLiteral(R"({"oomlens_rank_summary": 1})")
                                     << QStringLiteral("no \"snapshot\"");
        QTest::newRow("wrong type") << QStringLiteral(
            R"({"oomlens_rank_summary": 1, "snapshot": {"path": "a"}, "peak_allocated_bytes": "big"})")
                                    << QStringLiteral("\"peak_allocated_bytes\" is not a byte count");
        QTest::newRow("negative bytes") << QStringLiteral(
            R"({"oomlens_rank_summary": 1, "snapshot": {"path": "a"}, "peak_reserved_bytes": -1})")
                                        << QStringLiteral("\"peak_reserved_bytes\" is not a byte count");
        QTest::newRow("bad hash") << QStringLiteral(
            R"({"oomlens_rank_summary": 1, "snapshot": {"path": "a", "hash": "xyz", "hash_algorithm": "oomlens-hash64-v1"}})")
                                  << QStringLiteral("16 hex digits");
    }

    void damagedFilesSayWhy()
    {
        QFETCH(QString, text);
        QFETCH(QString, reason);
        try {
            summarizedRankFromJson(text.toStdString());
            QFAIL("read a damaged summary");
        } catch (const std::runtime_error& e) {
            QVERIFY2(QString::fromUtf8(e.what()).contains(reason), e.what());
        }
    }

    // The merge on the desktop: summaries and snapshots mixed, one rank's snapshot given both ways,
    // a summary given twice; the failing rank's snapshot found beside its summary, or named when
    // it is not here.
    void summariesAndSnapshotsMergeIntoOneJob()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const QString cluster = dir.filePath(QStringLiteral("cluster"));
        const QString desk = dir.filePath(QStringLiteral("desk"));
        QVERIFY(QDir().mkpath(cluster));
        QVERIFY(QDir().mkpath(desk));
        // rank 2 fails first; rank 3 fails later.
        const std::vector<std::string> snapshots { tinyJsonSnapshot(64 << 20, 32 << 20),
            tinyJsonSnapshot(64 << 20, 33 << 20), tinyJsonSnapshot(64 << 20, 96 << 20, 5000),
            tinyJsonSnapshot(64 << 20, 96 << 20, 9000) };
        std::vector<std::string> direct;
        std::vector<std::string> gathered;
        for (size_t r = 0; r < snapshots.size(); ++r) {
            const QString snapshot = cluster + QStringLiteral("/rank%1.json").arg(r);
            writeFile(snapshot, snapshots[r]);
            direct.push_back(snapshot.toStdString());
        }
        const JobSummary reference = gatherJob(direct).summary;
        QCOMPARE(reference.ranks.size(), size_t(4));
        QCOMPARE(reference.failing()->rank, 2);
        // What the failing rank's peak is made of, by site and by category at the OOM.
        const RankSummary& failing = *reference.failing();
        QCOMPARE(failing.topSitesAtPeak.size(), size_t(2));
        QVERIFY2(failing.topSitesAtPeak.front().first.find("model.py") != std::string::npos,
            failing.topSitesAtPeak.front().first.c_str());
        QCOMPARE(failing.topSitesAtPeak.front().second, uint64_t(96) << 20);
        QCOMPARE(failing.categoriesAtOom[static_cast<size_t>(Category::Activations)], uint64_t(96) << 20);
        QCOMPARE(failing.categoriesAtOom[static_cast<size_t>(Category::Parameters)], uint64_t(64) << 20);

        // Each rank summarized as `summarize` does, its summary put on the desk.
        for (size_t r = 0; r < snapshots.size(); ++r) {
            const GatheredJob one = gatherJob({ direct[r] });
            SummarizedRank summary;
            summary.rank = one.summary.ranks.front();
            summary.snapshot = identifySnapshotFile(direct[r]);
            const QString path = desk + QStringLiteral("/rank%1.oomlens-summary.json").arg(r);
            writeFile(path, summarizedRankToJson(summary));
            QVERIFY(isRankSummaryFile(path.toStdString()));
            gathered.push_back(path.toStdString());
        }
        // Rank 0 also as its snapshot, rank 1's summary twice (copied under another name).
        QVERIFY(QFile::copy(QString::fromStdString(gathered[1]), desk + QStringLiteral("/copy.oomlens-summary.json")));
        std::vector<std::string> mixed = gathered;
        mixed.push_back(direct[0]);
        mixed.push_back(QString(desk + QStringLiteral("/copy.oomlens-summary.json")).toStdString());

        GatheredJob merged = gatherJob(mixed);
        QCOMPARE(merged.summary.ranks.size(), size_t(4));
        QCOMPARE(merged.summary.fromSummaries, size_t(4));
        QCOMPARE(merged.summary.workers, size_t(0)); // nothing left to decode
        QCOMPARE(jobToText(merged.summary).substr(jobToText(merged.summary).find('\n')),
            jobToText(reference).substr(jobToText(reference).find('\n')));
        QCOMPARE(merged.summary.failing()->rank, 2);
        QCOMPARE(merged.failingSnapshot, direct[2]); // the recorded path is reachable here
        QVERIFY(merged.summary.failingSnapshotToCopy.empty());

        // The cluster's files gone: the answer names the file to copy, first among the notes.
        QVERIFY(QDir(cluster).removeRecursively());
        merged = gatherJob(gathered);
        QCOMPARE(merged.summary.failing()->rank, 2);
        QVERIFY(merged.failingSnapshot.empty());
        QCOMPARE(merged.summary.failingSnapshotToCopy, direct[2]);
        QVERIFY(!merged.summary.notes.empty());
        QVERIFY(merged.summary.notes.front().find("copy " + direct[2]) != std::string::npos);
        QVERIFY(failingRankHeading(merged.summary).find("not here") != std::string::npos);

        // Copied beside its summary: found there, and checked to be the same file.
        writeFile(desk + QStringLiteral("/rank2.json"), snapshots[3]); // another rank's dump under its name
        QVERIFY(gatherJob(gathered).failingSnapshot.empty());
        QFile::remove(desk + QStringLiteral("/rank2.json"));
        writeFile(desk + QStringLiteral("/rank2.json"), snapshots[2]);
        merged = gatherJob(gathered);
        QCOMPARE(merged.failingSnapshot, QString(desk + QStringLiteral("/rank2.json")).toStdString());
        QVERIFY(merged.summary.failingSnapshotToCopy.empty());
    }

    // A rank is its rank file: the same bytes under three ranks' names (ranks that replay the same
    // batches) are three ranks, from the snapshots and from their summaries alike; a summary stands
    // for the snapshot of its own rank only.
    void theSameBytesUnderTwoRanksAreTwoRanks()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        const std::string bytes = tinyJsonSnapshot(64 << 20, 32 << 20);
        std::vector<std::string> snapshots;
        std::vector<std::string> summaries;
        for (int r = 0; r < 3; ++r) {
            const QString snapshot = dir.filePath(QStringLiteral("rank%1.json").arg(r));
            writeFile(snapshot, bytes);
            snapshots.push_back(snapshot.toStdString());
            SummarizedRank summary;
            summary.rank = gatherJob({ snapshots.back() }).summary.ranks.front();
            summary.snapshot = identifySnapshotFile(snapshots.back());
            const QString path = dir.filePath(QStringLiteral("rank%1.oomlens-summary.json").arg(r));
            writeFile(path, summarizedRankToJson(summary));
            summaries.push_back(path.toStdString());
        }
        const JobSummary direct = gatherJob(snapshots).summary;
        QCOMPARE(direct.ranks.size(), size_t(3));
        const JobSummary merged = gatherJob(summaries).summary;
        QCOMPARE(merged.ranks.size(), size_t(3));
        QCOMPARE(jobToText(merged).substr(jobToText(merged).find('\n')),
            jobToText(direct).substr(jobToText(direct).find('\n')));
        std::vector<std::string> both = summaries;
        both.insert(both.end(), snapshots.begin(), snapshots.end());
        const JobSummary mixed = gatherJob(both).summary;
        QCOMPARE(mixed.ranks.size(), size_t(3));
        QCOMPARE(mixed.workers, size_t(0)); // each summary claimed its own snapshot
        // Rank 0's summary and rank 1's snapshot, the same bytes: two ranks, one decoded.
        const JobSummary two = gatherJob({ summaries[0], snapshots[1] }).summary;
        QCOMPARE(two.ranks.size(), size_t(2));
        QCOMPARE(two.ranks[0].rank, 0);
        QCOMPARE(two.ranks[1].rank, 1);
        QCOMPARE(two.workers, size_t(1));
        // A file named twice is one rank file.
        QCOMPARE(gatherJob({ snapshots[0], snapshots[0], snapshots[1] }).summary.ranks.size(), size_t(2));

        // The rank by name: rankFromFileName's, else the file's own name.
        QVERIFY(rankFileName("/a/rank3.pickle") == rankFileName("/b/rank_3.pickle"));
        QVERIFY(rankFileName("/a/logs/rank_3/snapshot.pickle") == rankFileName("/b/rank3.pickle"));
        QVERIFY(!(rankFileName("/a/rank3.pickle") == rankFileName("/a/rank4.pickle")));
        QVERIFY(!(rankFileName("/a/worker-a.pickle") == rankFileName("/a/worker-b.pickle")));
        QVERIFY(rankFileName("/a/worker-b.pickle") == rankFileName("/b/worker-b.pickle"));
    }

    void aDamagedSummaryIsAnUnreadableRank()
    {
        QTemporaryDir dir;
        const QString path = dir.filePath(QStringLiteral("rank9.oomlens-summary.json"));
        writeFile(path, R"({"oomlens_rank_summary": 1, "snapshot": {"path": "rank9.pickle"}, "oom": "yes"})");
        const GatheredJob job = gatherJob({ path.toStdString() });
        QCOMPARE(job.summary.ranks.size(), size_t(1));
        QVERIFY(!job.summary.ranks.front().readable());
        QCOMPARE(job.summary.ranks.front().rank, 9);
        QVERIFY(job.summary.ranks.front().error.find("\"oom\" is not true or false") != std::string::npos);
        QVERIFY(!job.summary.failing());
    }
};

QTEST_GUILESS_MAIN(TestRankSummaryFile)
#include "tst_ranksummaryfile.moc"
