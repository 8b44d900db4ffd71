#include "common/testutil.h"
#include "core/analysis/snapshotanalysis.h"
#include "core/units.h"
#include "parsers/snapshotreader.h"

#include <QDir>
#include <QTest>

#include <unordered_map>

using namespace oomlens;

namespace {

std::shared_ptr<const Snapshot> load(const QString& name, std::string* error = nullptr)
{
    const QByteArray bytes = test::readFile(test::corpusDir() + QStringLiteral("/snapshots/") + name);
    if (bytes.isEmpty())
        return nullptr;
    const auto result = readSnapshot(std::string_view(bytes.constData(), static_cast<size_t>(bytes.size())));
    if (error)
        *error = result.error;
    return result.snapshot;
}

// memory_viz's Active Memory Timeline, written independently of the analysis: alloc opens,
// free_completed closes, unseen frees and unopened active blocks are older than the trace.
uint64_t memoryVizPeak(const Snapshot& s, int32_t device)
{
    const DeviceTrace* trace = s.trace(device);
    std::unordered_map<uint64_t, uint64_t> open;
    int64_t initial = 0;
    std::vector<int64_t> deltas;
    if (trace) {
        for (const TraceEvent& e : trace->events) {
            if (e.action == TraceAction::Alloc) {
                open[e.addr] = e.size;
                deltas.push_back(static_cast<int64_t>(e.size));
            } else if (e.action == TraceAction::FreeCompleted || e.action == TraceAction::Free) {
                auto it = open.find(e.addr);
                if (it != open.end()) {
                    open.erase(it);
                } else {
                    initial += static_cast<int64_t>(e.size);
                }
                deltas.push_back(-static_cast<int64_t>(e.size));
            } else if (e.action == TraceAction::FreeRequested && !open.count(e.addr)) {
                // Older than the trace; counted when its free_completed comes (or at the dump).
                open[e.addr] = e.size;
                initial += static_cast<int64_t>(e.size);
            }
        }
    }
    for (const Segment& seg : s.segments) {
        if (seg.device != device)
            continue;
        for (uint32_t b = seg.firstBlock; b < seg.firstBlock + seg.blockCount; ++b) {
            const Block& block = s.blocks[b];
            if ((block.state == BlockState::ActiveAllocated || block.state == BlockState::ActivePendingFree)
                && !open.count(block.address))
                initial += static_cast<int64_t>(block.requestedSize ? block.requestedSize : block.size);
            open.erase(block.address);
        }
    }
    int64_t level = initial, peak = initial;
    for (int64_t d : deltas) {
        level += d;
        peak = std::max(peak, level);
    }
    return static_cast<uint64_t>(peak);
}

QStringList corpusFiles()
{
    QDir dir(test::corpusDir() + QStringLiteral("/snapshots"));
    QStringList files = dir.entryList(
        { QStringLiteral("*.pickle"), QStringLiteral("*.pkl"), QStringLiteral("*.json") }, QDir::Files, QDir::Name);
    return files;
}

uint64_t sum(const CategoryBytes& bytes)
{
    uint64_t total = 0;
    for (uint64_t v : bytes)
        total += v;
    return total;
}

} // namespace

class TestRealSnapshots : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void initTestCase()
    {
        OOMLENS_REQUIRE_SHARED();
        if (!load(QStringLiteral("JasperSolt__EoR_NN__snapshot.pickle")))
            QSKIP("the snapshot decoder is not available in this build");
    }

    void everyFile_data()
    {
        QTest::addColumn<QString>("file");
        for (const QString& f : corpusFiles())
            QTest::newRow(f.toUtf8().constData()) << f;
    }

    void everyFile()
    {
        QFETCH(QString, file);
        std::string error;
        const auto snapshot = load(file, &error);
        QVERIFY2(snapshot, ("decoder failed: " + error).c_str());
        const SnapshotAnalysis result = analyzeSnapshot(snapshot);
        for (const DeviceAnalysis& d : result.devices) {
            QCOMPARE(sum(d.categoriesAtPeak), d.peakAllocatedBytes);
            QCOMPARE(d.peakAllocatedBytes, memoryVizPeak(*snapshot, d.device));
            QCOMPARE(d.eventPhase.size(), d.eventAllocation.size());
            for (const Allocation& a : d.allocations)
                QVERIFY(a.reason < d.reasons.size());
        }
    }

    void forwardHasNoGradientsNorOptimizerState_data()
    {
        QTest::addColumn<QString>("forward");
        QTest::addColumn<QString>("fullstep");
        const QString p = QStringLiteral("kkaitlyn111__cs336-a2-systems__");
        QTest::newRow("ctx128") << p + QStringLiteral("memory_ctx128_forward_.pickle")
                                << p + QStringLiteral("memory_ctx128_fullstep_.pickle");
        QTest::newRow("ctx256") << p + QStringLiteral("memory_ctx256_forward_.pickle")
                                << p + QStringLiteral("memory_ctx256_fullstep_.pickle");
        QTest::newRow("ctx512") << p + QStringLiteral("memory_ctx512_forward_.pickle")
                                << p + QStringLiteral("memory_ctx512_fullstep_.pickle");
        QTest::newRow("memory_files") << p + QStringLiteral("memory_files__memory_ctx128_forward.pickle")
                                      << p + QStringLiteral("memory_files__memory_ctx128_fullstep.pickle");
        QTest::newRow("root") << p + QStringLiteral("root__memory_ctx128_forward.pickle")
                              << p + QStringLiteral("root__memory_ctx128_fullstep.pickle");
    }

    void forwardHasNoGradientsNorOptimizerState()
    {
        QFETCH(QString, forward);
        QFETCH(QString, fullstep);
        auto bandsOf = [](const QString& file) {
            CategoryBytes bytes {};
            const auto result = analyzeSnapshot(load(file));
            for (const Allocation& a : result.primary()->allocations)
                bytes[static_cast<size_t>(a.category)] += a.requestedSize;
            return bytes;
        };
        const CategoryBytes fwd = bandsOf(forward);
        QCOMPARE(fwd[size_t(Category::Gradients)], uint64_t(0));
        QCOMPARE(fwd[size_t(Category::OptimizerState)], uint64_t(0));
        QVERIFY(fwd[size_t(Category::Activations)] > 0);
        const CategoryBytes full = bandsOf(fullstep);
        QVERIFY(full[size_t(Category::Gradients)] > 0);
        QVERIFY(full[size_t(Category::OptimizerState)] > 0);
    }

    void lightningClosureActivations()
    {
        // Nesta-gitU: a DiT trained with PyTorch Lightning, whose training_step runs inside
        // optimizer.step(). Its ~21.5 GiB of activations were once banded as optimizer state.
        const auto snapshot = load(QStringLiteral("Nesta-gitU__discrete_diffusion__memory_snapshot.json"));
        QVERIFY(snapshot);
        const auto result = analyzeSnapshot(snapshot);
        const DeviceAnalysis* d = result.primary();
        QVERIFY(d);
        const CategoryBytes& peak = d->categoriesAtPeak;
        QVERIFY2(peak[size_t(Category::Activations)] > 20 * GiB,
            std::to_string(peak[size_t(Category::Activations)]).c_str());
        QVERIFY(peak[size_t(Category::OptimizerState)] < GiB);
        QCOMPARE(d->ooms.size(), size_t(1));
        QCOMPARE(d->ooms.front().phase, Phase::Forward);
        QVERIFY(d->ooms.front().liveByCategory[size_t(Category::Activations)] > 20 * GiB);
    }

    void threeGpuFileUsesTheOomDevice()
    {
        const auto snapshot = load(QStringLiteral("Constructor-Sun__code_location__memory_snapshot.pickle"));
        QVERIFY(snapshot);
        const auto result = analyzeSnapshot(snapshot);
        const DeviceAnalysis* d = result.primary();
        QVERIFY(d);
        QCOMPARE(d->ooms.size(), size_t(1));
        int32_t oomDevice = -1;
        for (const DeviceTrace& t : snapshot->traces)
            for (const TraceEvent& e : t.events)
                if (e.action == TraceAction::Oom)
                    oomDevice = t.device;
        QCOMPARE(result.primaryDevice, oomDevice);
        const OomAnalysis& oom = d->ooms.front();
        QCOMPARE(sum(oom.liveByCategory), oom.allocatedBytes);
        QVERIFY(oom.reservedBytes > 0);
    }
};

QTEST_GUILESS_MAIN(TestRealSnapshots)
#include "tst_realsnapshots.moc"
