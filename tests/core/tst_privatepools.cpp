// Private pools (CUDA graphs, MemPools): per pool at the dump, their reserved bytes over the
// trace, and the OOM message's "allocated in private pools" checked against the trace.
#include "common/analysisfixtures.h"
#include "common/testutil.h"
#include "core/analysis/privatepools.h"
#include "core/caseanalysis.h"
#include "core/jsonexport.h"
#include "core/presentation/privatepoolsjson.h"
#include "core/report/htmlreport.h"
#include "parsers/inputloader.h"

#include <QTest>

using namespace oomlens;

namespace {

constexpr uint64_t MiB = uint64_t(1) << 20;

// Weights in the default pool, a graph pool whose first buffer was freed (cached, 32 MiB), a
// MemPool with one 40 MiB buffer and a freed 8 MiB one in its own 20 MiB segment.
const char* pools = R"(
alloc w 64MiB load
alloc g1 32MiB fwd pool=1,0 stream=5
alloc g2 16MiB fwd pool=1,0 stream=5
free g1 bwd
alloc m1 40MiB fwd pool=0,1
alloc m2 8MiB fwd pool=0,1
free m2 fwd
oom 1GiB free=100MiB fwd
)";

const PoolAtDump* findPool(const PrivatePools& all, PoolId id)
{
    for (const PoolAtDump& p : all.pools) {
        if (p.id == id)
            return &p;
    }
    return nullptr;
}

QString realExtra(const char* name)
{
    return test::testDataDir() + QStringLiteral("/real/extra/") + QLatin1String(name);
}

} // namespace

class TestPrivatePools : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void namesFollowThePoolId()
    {
        QCOMPARE(poolOwner(PoolId { 0, 0 }), PoolOwner::Default);
        QCOMPARE(poolOwner(PoolId { 2, 0 }), PoolOwner::CudaGraph);
        QCOMPARE(poolOwner(PoolId { 0, 3 }), PoolOwner::MemPool);
        QCOMPARE(poolName(PoolId { 1, 0 }), std::string("CUDA graph pool (1, 0)"));
    }

    void perPoolAtTheDump()
    {
        const SnapshotAnalysis a = test::analyzeTrace(pools);
        const PrivatePools p = privatePools(*a.snapshot, *a.primary());
        QCOMPARE(p.pools.size(), size_t(3));
        QVERIFY(p.pools.front().id.isDefault());
        QVERIFY(p.hasPrivate());

        const PoolAtDump* graph = findPool(p, { 1, 0 });
        QVERIFY(graph);
        QCOMPARE(graph->segments.size(), size_t(2));
        QCOMPARE(graph->reservedBytes, 48 * MiB);
        QCOMPARE(graph->allocatedBytes, 16 * MiB);
        QCOMPARE(graph->freeBytes, 32 * MiB);
        QCOMPARE(graph->largestFreeBlock, 32 * MiB);

        const PoolAtDump* mempool = findPool(p, { 0, 1 });
        QVERIFY(mempool);
        QCOMPARE(mempool->reservedBytes, 60 * MiB);
        QCOMPARE(mempool->allocatedBytes, 40 * MiB);
        QCOMPARE(mempool->freeBytes, 20 * MiB);
        QCOMPARE(p.privateReservedBytes(), 108 * MiB);
        QCOMPARE(p.privateFreeBytes(), 52 * MiB);
    }

    void reservedOverTime()
    {
        const SnapshotAnalysis a = test::analyzeTrace(pools);
        const PrivatePools p = privatePools(*a.snapshot, *a.primary());
        const auto& events = a.snapshot->trace(0)->events;
        QCOMPARE(p.privateReservedAfter.size(), events.size());
        QCOMPARE(p.initialPrivateReserved, uint64_t(0));
        // Nothing private until the graph's first segment, all 108 MiB at the end.
        QCOMPARE(p.privateReservedAfter[1], uint64_t(0)); // after w's alloc
        QCOMPARE(p.privateReservedAfter[2], 32 * MiB); // g1's segment_alloc
        QCOMPARE(p.privateReservedAfter.back(), 108 * MiB);
        for (size_t i = 1; i < events.size(); ++i)
            QVERIFY(p.privateReservedAfter[i] >= p.privateReservedAfter[i - 1]); // nothing released
    }

    void allocationsKnowTheirPool()
    {
        const SnapshotAnalysis a = test::analyzeTrace(pools);
        const PrivatePools p = privatePools(*a.snapshot, *a.primary());
        int graph = 0, mempool = 0, standard = 0;
        for (const Allocation& allocation : a.primary()->allocations) {
            const auto pool = p.poolOf(allocation);
            QVERIFY(pool);
            graph += poolOwner(*pool) == PoolOwner::CudaGraph;
            mempool += poolOwner(*pool) == PoolOwner::MemPool;
            standard += pool->isDefault();
        }
        QCOMPARE(graph, 2);
        QCOMPARE(mempool, 2);
        QCOMPARE(standard, 1);
    }

    void messageFigureComparedAtTheOom()
    {
        const SnapshotAnalysis a = test::analyzeTrace(pools);
        const PrivatePools agrees = privatePools(*a.snapshot, *a.primary(), 52 * MiB);
        QVERIFY(agrees.atOom);
        QCOMPARE(agrees.atOom->privateFreeBytes, 52 * MiB);
        QCOMPARE(agrees.atOom->unattributedFreeBytes, uint64_t(0));
        QVERIFY(agrees.atOom->agrees);
        QVERIFY(agrees.atOom->statement.find("agrees") != std::string::npos);

        const PrivatePools differs = privatePools(*a.snapshot, *a.primary(), 10 * MiB);
        QVERIFY(!differs.atOom->agrees);
        QVERIFY(differs.atOom->statement.find("do not agree") != std::string::npos);
    }

    // Newest PyTorch writes pool_id on every entry: a MemPool whose segment was released before
    // the dump is still known, at the oom, over time and for its allocation.
    void entriesRecordTheirPool()
    {
        const char* released = R"(
alloc w 64MiB load
segment_alloc mp 40MiB pool=0,1
alloc m1 8MiB fwd pool=0,1 in=mp
free m1 fwd
oom 1GiB free=10MiB fwd
segment_free mp
)";
        const SnapshotAnalysis without = test::analyzeTrace(released);
        const PrivatePools unknown = privatePools(*without.snapshot, *without.primary(), 40 * MiB);
        QVERIFY(unknown.atOom);
        QCOMPARE(unknown.atOom->unattributedFreeBytes, 40 * MiB);
        QCOMPARE(unknown.atOom->privateFreeBytes, uint64_t(0));

        const SnapshotAnalysis a = test::analyzeTrace(std::string("entrypools\n") + released);
        const PrivatePools p = privatePools(*a.snapshot, *a.primary(), 40 * MiB);
        QVERIFY(p.entriesRecordPools());
        QVERIFY(p.atOom);
        QCOMPARE(p.atOom->privateFreeBytes, 40 * MiB);
        QCOMPARE(p.atOom->unattributedFreeBytes, uint64_t(0));
        QVERIFY(p.atOom->agrees);
        const auto& events = a.snapshot->trace(0)->events;
        const int64_t oom = a.primary()->ooms.back().eventIndex;
        QCOMPARE(p.privateReservedAfter[size_t(oom)], 40 * MiB);
        QCOMPARE(p.privateReservedAfter.back(), uint64_t(0)); // released
        QCOMPARE(events.back().action, TraceAction::SegmentFree);
        for (const Allocation& allocation : a.primary()->allocations) {
            if (allocation.requestedSize == 8 * MiB) {
                QCOMPARE(p.poolOf(allocation), std::optional<PoolId>(PoolId { 0, 1 }));
                QVERIFY(!unknown.poolOf(
                    without.primary()->allocations[size_t(&allocation - &a.primary()->allocations[0])]));
            }
        }
    }

    void noPrivatePoolsNoOomCheck()
    {
        const SnapshotAnalysis a = test::analyzeTrace("alloc a 64MiB fwd\noom 1GiB free=0 fwd\n");
        const PrivatePools p = privatePools(*a.snapshot, *a.primary());
        QVERIFY(!p.hasPrivate());
        QVERIFY(!p.atOom);
    }

    void eagerReportHasNoPoolSection()
    {
        Case input;
        addFile(input, realExtra("features.pickle.gz").toStdString());
        const CaseAnalysis analysis = analyzeCase(input);
        QVERIFY(report::buildHtmlReport(input, analysis).find("Private pools (CUDA graphs") == std::string::npos);
        QCOMPARE(caseToJson(input, analysis).at("private_pools").at(0).at("has_private").get<bool>(), false);
    }

    // The real H100 run: forward+backward+step captured into a CUDA graph (pool (1, 0)), a MemPool
    // whose segments PyTorch released when it was destroyed, after the failed 1 GiB request.
    void realGraphPools()
    {
        Case input;
        addFile(input, realExtra("graph_pools.pickle.gz").toStdString());
        addFile(input, realExtra("graph_pools.oom.txt").toStdString());
        const CaseAnalysis analysis = analyzeCase(input);
        const auto pools = casePrivatePools(input, analysis, 0);
        QVERIFY(pools);
        QCOMPARE(pools->pools.size(), size_t(2));
        const PoolAtDump* graph = findPool(*pools, { 1, 0 });
        QVERIFY(graph);
        QCOMPARE(graph->segments.size(), size_t(27));
        QCOMPARE(graph->reservedBytes, uint64_t(585105408));
        QCOMPARE(graph->allocatedBytes, uint64_t(68157440));
        QCOMPARE(graph->freeBytes, uint64_t(585105408 - 156348416));
        QVERIFY(pools->atOom);
        const PrivatePoolsAtOom& oom = *pools->atOom;
        QVERIFY(oom.messageBytes);
        // 456.89 MiB printed: the graph pool's cached blocks plus the destroyed MemPool's 48 MiB.
        QVERIFY(oom.unattributedFreeBytes >= 48 * MiB);
        QVERIFY2(oom.agrees, oom.statement.c_str());
        QVERIFY(oom.statement.find("released before the dump") != std::string::npos);

        const auto document = caseToJson(input, analysis);
        const auto& entry = document.at("private_pools").at(0);
        QCOMPARE(entry.at("has_private").get<bool>(), true);
        QCOMPARE(entry.at("pools").size(), size_t(2));
        QCOMPARE(entry.at("pools").at(1).at("owner").get<std::string>(), std::string("cuda_graph"));
        QCOMPARE(entry.at("at_oom").at("agrees").get<bool>(), true);
        const std::string html = report::buildHtmlReport(input, analysis);
        QVERIFY(html.find("<h3>Private pools (CUDA graphs, MemPools)</h3>") != std::string::npos);
        QVERIFY(html.find("<td>CUDA graph pool (1, 0)</td><td>27</td>") != std::string::npos);
        QVERIFY(html.find("it agrees with the trace") != std::string::npos);
        qInfo("graph pool free at the oom %llu, unattributed %llu, message %llu",
            static_cast<unsigned long long>(oom.privateFreeBytes),
            static_cast<unsigned long long>(oom.unattributedFreeBytes),
            static_cast<unsigned long long>(*oom.messageBytes));
    }
};

QTEST_GUILESS_MAIN(TestPrivatePools)
#include "tst_privatepools.moc"
