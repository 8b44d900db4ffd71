#include "common/analysisfixtures.h"
#include "common/testutil.h"
#include "common/tracebuilder.h"
#include "core/analysis/snapshotanalysis.h"
#include "core/diagnosis/blockcount.h"
#include "core/diagnosis/fixladder.h"
#include "core/diagnosis/snapshotdiagnosis.h"
#include "core/diagnosis/textdiagnosis.h"
#include "core/strings.h"
#include "core/units.h"
#include "parsers/snapshotreader.h"
#include "parsers/text/textparser.h"

#include <QTest>

using namespace oomlens;

namespace {

// A card every projection below is computed against by hand (GiB):
//   live = parameters 2 + gradients 2 + optimizer state 4 + activations 8 = 16
//   reserved = live + 1 split = 17, free on the card 0.5 → usable 17.5, request 1
//   before any fix: 17.5 − (16 + 1 + 1) = −0.5 (short by the request minus free)
FixContext handBudget()
{
    FixContext context;
    MemoryBudget& budget = context.budget;
    CategoryBytes bands {};
    bands[static_cast<size_t>(Category::Parameters)] = 2 * GiB;
    bands[static_cast<size_t>(Category::Gradients)] = 2 * GiB;
    bands[static_cast<size_t>(Category::OptimizerState)] = 4 * GiB;
    bands[static_cast<size_t>(Category::Activations)] = 8 * GiB;
    budget.bands = bands;
    budget.liveBytes = 16 * GiB;
    budget.request = GiB;
    budget.fragmentedBytes = GiB;
    budget.usableBytes = 17 * GiB + GiB / 2;
    budget.quadraticBytes = 2 * GiB;
    return context;
}

std::optional<int64_t> gib(double value)
{
    return static_cast<int64_t>(value * static_cast<double>(GiB));
}

} // namespace

class TestDiagProjection : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void budgetModel()
    {
        const MemoryBudget budget = handBudget().budget;
        QCOMPARE(budget.spareAfter(0), gib(-0.5));
        QCOMPARE(budget.spareAfter(4 * GiB), gib(3.5));
        // Recovering the split cache frees no live tensor: 17.5 − (16 + 1) = 0.5.
        QCOMPARE(budget.spareAfter(0, true), gib(0.5));
        MemoryBudget unknown = budget;
        unknown.usableBytes.reset();
        QVERIFY(!unknown.spareAfter(GiB));
        QCOMPARE(budget.fitPhrase(0), std::string("on its own it would still be 512.00 MiB short"));
        QCOMPARE(budget.fitPhrase(4 * GiB), std::string("it would fit with 3.50 GiB to spare"));
    }

    void eachFixKind_data()
    {
        QTest::addColumn<int>("kind");
        QTest::addColumn<QString>("id");
        QTest::addColumn<double>("savedGiB");
        QTest::addColumn<double>("spareGiB");
        // saving → spare = −0.5 + saving (live savings), by hand
        QTest::newRow("micro_batch") << int(FixKind::MicroBatch) << QStringLiteral("micro_batch") << 4.0 << 3.5;
        QTest::newRow("bf16") << int(FixKind::Bf16) << QStringLiteral("bf16") << 4.0 << 3.5;
        // 16 blocks measured: keeps 8/√16 = 2, saves 6
        QTest::newRow("checkpointing") << int(FixKind::Checkpointing) << QStringLiteral("checkpointing") << 6.0 << 5.5;
        // no live saving, the 1 GiB split cache becomes usable: 17.5 − 17 = 0.5
        QTest::newRow("expandable") << int(FixKind::ExpandableSegments) << QStringLiteral("expandable_segments") << 1.0
                                    << 0.5;
        QTest::newRow("sdpa") << int(FixKind::Sdpa) << QStringLiteral("sdpa") << 2.0 << 1.5;
        // 8-bit moments are a quarter of 4: saves 3
        QTest::newRow("optimizer_8bit") << int(FixKind::Optimizer8bit) << QStringLiteral("optimizer_8bit") << 3.0
                                        << 2.5;
        // 4 ranks, ZeRO-1 already fits: 4 − 4/4 = 3
        QTest::newRow("zero") << int(FixKind::Zero) << QStringLiteral("zero") << 3.0 << 2.5;
        QTest::newRow("offload") << int(FixKind::Offload) << QStringLiteral("offload") << 4.0 << 3.5;
        // gradients 2 + optimizer state 4
        QTest::newRow("lora") << int(FixKind::Lora) << QStringLiteral("lora") << 6.0 << 5.5;
        // the case fix frees the 1 GiB it names
        QTest::newRow("release_references")
            << int(FixKind::ReleaseReferences) << QStringLiteral("release_references") << 1.0 << 0.5;
    }

    void eachFixKind()
    {
        QFETCH(int, kind);
        QFETCH(QString, id);
        QFETCH(double, savedGiB);
        QFETCH(double, spareGiB);
        FixContext context = handBudget();
        context.budget.estimatedBlocks = 16;
        context.budget.blocksEvidence = "test";
        context.budget.gpuCount = 4;
        context.budget.gpuCountEvidence = "test";
        context.caseSavingBytes = GiB;
        // LoRA is offered for a model the stacks show (fixladderlora.h): a Llama here.
        context.lora = loraTargetOf({ { "/site-packages/transformers/models/llama/modeling_llama.py", "forward" } });
        const auto fix = makeFix(static_cast<FixKind>(kind), context);
        QVERIFY(fix);
        QCOMPARE(QString::fromStdString(fix->id()), id);
        QCOMPARE(fix->projectedSavingBytes, gib(savedGiB));
        QCOMPARE(fix->fitsAfter, std::optional<bool>(true));
        const std::string spare
            = "it would fit with " + formatBytes(static_cast<uint64_t>(*gib(spareGiB))) + " to spare";
        QVERIFY2(contains(fix->detail, spare), fix->detail.c_str());
    }

    void stopOtherProcessAddsItsMemory()
    {
        FixContext context = handBudget();
        context.otherProcessBytes = 3 * GiB;
        const auto fix = makeFix(FixKind::StopOtherProcess, context);
        QVERIFY(fix);
        // −0.5 + 3 = 2.5
        QVERIFY2(contains(fix->detail, "it would fit with 2.50 GiB to spare"), fix->detail.c_str());
    }

    void expandableShortAndAlreadyOn()
    {
        FixContext context = handBudget();
        context.budget.fragmentedBytes = GiB / 4;
        context.budget.usableBytes = 16 * GiB + GiB / 4 + GiB / 2;
        // 16.75 − 17 = −0.25
        auto fix = makeFix(FixKind::ExpandableSegments, context);
        QVERIFY(fix);
        QCOMPARE(fix->fitsAfter, std::optional<bool>(false));
        QVERIFY2(contains(fix->detail, "still be 256.00 MiB short"), fix->detail.c_str());
        context.expandableSegmentsOn = true;
        QVERIFY(!makeFix(FixKind::ExpandableSegments, context));
    }

    void checkpointingSaysWhereItsBlockCountComesFrom()
    {
        FixContext context = handBudget();
        auto assumed = makeFix(FixKind::Checkpointing, context);
        QVERIFY(contains(assumed->detail, "assuming 16 blocks"));
        context.budget.estimatedBlocks = 4;
        context.budget.blocksEvidence = "9 allocation sites repeat 4 times each";
        const auto measured = makeFix(FixKind::Checkpointing, context);
        // keeps 8/√4 = 4: saves 4
        QCOMPARE(measured->projectedSavingBytes, gib(4));
        QVERIFY(contains(measured->detail, "4 repeated blocks: 9 allocation sites repeat 4 times each"));
    }

    void zeroSaysWhenRanksAreAssumed()
    {
        FixContext context = handBudget();
        const auto assumed = makeFix(FixKind::Zero, context);
        QVERIFY(assumed);
        QVERIFY(contains(assumed->detail, "do not show how many GPUs"));
        // 2 ranks: ZeRO-1 saves 4/2 = 2 → 1.5 to spare
        QCOMPARE(assumed->projectedSavingBytes, gib(2));
        context.budget.usableBytes = 16 * GiB + GiB / 2; // now −1.5 before any fix
        context.budget.gpuCount = 8;
        context.budget.gpuCountEvidence = "the log's line prefixes name ranks 0 to 7";
        const auto known = makeFix(FixKind::Zero, context);
        // 8 ranks: ZeRO-1 saves 4·7/8 = 3.5 → 2.0 to spare
        QCOMPARE(known->projectedSavingBytes, gib(3.5));
        QVERIFY(contains(known->detail, "The run has 8 GPUs (the log's line prefixes name ranks 0 to 7)"));
        QVERIFY(contains(known->detail, "it would fit with 2.00 GiB to spare"));
    }

    void measuredEmptyBandsDropTheirFixes()
    {
        FixContext context = handBudget();
        CategoryBytes bands {};
        bands[static_cast<size_t>(Category::Activations)] = 16 * GiB;
        context.budget.bands = bands;
        for (const FixKind kind : { FixKind::Optimizer8bit, FixKind::Zero, FixKind::Offload, FixKind::Lora })
            QVERIFY(!makeFix(kind, context));
        QVERIFY(makeFix(FixKind::MicroBatch, context));
    }

    // The example case: card 23.65 GiB, 1.12 GiB free, 19.87 GiB allocated, 2.18 GiB reserved but
    // unallocated, 1.50 GiB request. Expandable segments: (22.05 + 1.12) − (19.87 + 1.50) = 1.80.
    void exampleCaseExpandableSegments()
    {
        const QByteArray bytes = test::readFile(QStringLiteral(OOMLENS_SOURCE_DIR "/resources/examples/oom_case.txt"));
        TextFindings findings = parseText(std::string_view(bytes.constData(), static_cast<size_t>(bytes.size())));
        QCOMPARE(findings.oomMessages.size(), size_t(1));
        findings.allocConfs.clear(); // the example sets max_split_size_mb only; expandable segments stay off either way
        const auto diagnoses = diagnoseText(findings);
        const Diagnosis* fragmentation = test::findDiagnosis(diagnoses, DiagnosisId::Fragmentation);
        QVERIFY(fragmentation);
        const Fix& fix = fragmentation->fixes.front();
        QCOMPARE(fix.id(), std::string("expandable_segments"));
        QVERIFY2(contains(fix.detail, "it would fit with 1.80 GiB to spare"), fix.detail.c_str());
        QCOMPARE(fix.fitsAfter, std::optional<bool>(true));
    }

    void rankPrefixesCountGpus()
    {
        const TextFindings findings = parseText(
            "[rank0]: step 10\n[rank3]: step 10\n[rank1]:[W reducer.cpp] warning\n"
            "[rank2]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. "
            "GPU 2 has a total capacity of 79.15 GiB of which 1.20 GiB is free. Including non-PyTorch memory, "
            "this process has 77.94 GiB memory in use. Of the allocated memory 70.10 GiB is allocated by "
            "PyTorch, and 6.80 GiB is reserved by PyTorch but unallocated.\n");
        QCOMPARE(findings.launcherRanks, (std::vector<int> { 0, 1, 2, 3 }));
        const GpuCount count = textGpuCount(findings);
        QCOMPARE(count.count, 4);
        QCOMPARE(count.evidence, std::string("the log's line prefixes name ranks 0 to 3"));

        NvidiaSmiTable table;
        table.gpus.push_back({ 0, "A100", std::nullopt, 80 * GiB });
        table.gpus.push_back({ 1, "A100", std::nullopt, 80 * GiB });
        TextFindings smi;
        smi.nvidiaSmi.push_back(table);
        QCOMPARE(textGpuCount(smi).count, 2);
        QCOMPARE(textGpuCount(TextFindings {}).count, 0);
    }

    // The scenarios' model sizes are known (tests/tools/make_scenarios.py): the block count read
    // from the forward pass must match them, and the synthetic fragmentation loop has no layers.
    void blockCountFromScenarios_data()
    {
        QTest::addColumn<QString>("name");
        QTest::addColumn<int>("blocks");
        QTest::newRow("first_backward") << QStringLiteral("first_backward") << 4;
        QTest::newRow("optimizer_step2") << QStringLiteral("optimizer_step2") << 4;
        QTest::newRow("longest_batch") << QStringLiteral("longest_batch") << 4;
        QTest::newRow("leak") << QStringLiteral("leak") << 4;
        QTest::newRow("capacity") << QStringLiteral("capacity") << 8;
        // the first forward fails in block 2 before it repeats most of block 1's sites: too little to tell
        QTest::newRow("large_allocation") << QStringLiteral("large_allocation") << 0;
        QTest::newRow("fragmentation") << QStringLiteral("fragmentation") << 0;
    }

    void blockCountFromScenarios()
    {
        QFETCH(QString, name);
        QFETCH(int, blocks);
        const SnapshotAnalysis analysis = test::analyzeScenario(name);
        const DeviceAnalysis* device = analysis.primary();
        QVERIFY(device && !device->ooms.empty());
        const BlockEstimate estimate = estimateRepeatedBlocks(*device, device->ooms.back().eventIndex);
        QVERIFY2(estimate.blocks == blocks, estimate.evidence.c_str());
        QCOMPARE(estimate.evidence.empty(), blocks == 0);
    }

    // The two catalogue cases no scenario pickle covers, from snapshot evidence.
    // The weights are small enough that weights, gradients and Adam's moments fit under the
    // limit (1 GiB against at most 1.75 GiB): nothing in the workload explains the overflow, the
    // limit does.
    void memoryFractionFromSnapshot()
    {
        std::string error;
        const auto snapshot
            = test::buildSnapshot("before p 256MiB load\nalloc a 1GiB fwd\noom 512MiB free=6GiB fwd\n", &error);
        QVERIFY2(snapshot, error.c_str());
        const auto diagnoses = diagnoseSnapshot(analyzeSnapshot(snapshot), {});
        QVERIFY(!diagnoses.empty());
        QCOMPARE(diagnoses.front().id, DiagnosisId::MemoryFractionCap);
    }

    // Under a per-process limit the limit is what the process could hold: the refused segment
    // bounds it (3 GiB reserved + 512 MiB) although the card had 6 GiB free, and 2 GiB of fp32
    // weights need 8 GiB with their gradients and Adam's moments. capacity leads, the limit
    // follows as its context; the budget every projection uses is the limit, not the card.
    void capacityUnderLimitFromSnapshot()
    {
        std::string error;
        const auto snapshot
            = test::buildSnapshot("before p 2GiB load\nalloc a 1GiB fwd\noom 512MiB free=6GiB fwd\n", &error);
        QVERIFY2(snapshot, error.c_str());
        const auto diagnoses = diagnoseSnapshot(analyzeSnapshot(snapshot), {});
        QVERIFY(diagnoses.size() >= 2);
        QCOMPARE(diagnoses.front().id, DiagnosisId::Capacity);
        QCOMPARE(diagnoses[1].id, DiagnosisId::MemoryFractionCap);
        const std::string& line = diagnoses.front().evidence.front().text;
        QVERIFY2(line.find("at most 3.50 GiB under a per-process limit") != std::string::npos, line.c_str());
    }

    void otherProcessFromSnapshotAndCard()
    {
        std::string error;
        const auto snapshot
            = test::buildSnapshot("before p 2GiB load\nalloc a 1GiB fwd\noom 512MiB free=100MiB fwd\n", &error);
        QVERIFY2(snapshot, error.c_str());
        SnapshotDiagnosisContext context;
        OomFacts facts;
        facts.total = 16 * GiB; // PyTorch holds ~3 GiB, 0.1 GiB free: ~13 GiB is someone else's
        facts.limit = facts.total;
        context.message = facts;
        const auto diagnoses = diagnoseSnapshot(analyzeSnapshot(snapshot), context);
        QVERIFY(!diagnoses.empty());
        QCOMPARE(diagnoses.front().id, DiagnosisId::OtherProcess);
    }
};

QTEST_GUILESS_MAIN(TestDiagProjection)
#include "tst_diagprojection.moc"
