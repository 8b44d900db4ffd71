#include "common/analysisfixtures.h"
#include "common/testutil.h"
#include "core/analysis/cardreconciliation.h"
#include "core/analysis/cardtimeline.h"
#include "core/caseanalysis.h"
#include "core/jsonexport.h"
#include "core/presentation/palette.h"
#include "core/report/htmlreport.h"
#include "core/strings.h"
#include "core/textreport.h"
#include "core/units.h"
#include "parsers/inputloader.h"

#include <QTest>

#include <cmath>

using namespace oomlens;

namespace {

Case openFile(const QString& relative)
{
    Case input;
    addFile(input, QString(test::testDataDir() + QLatin1Char('/') + relative).toStdString());
    return input;
}

// Figures printed to two decimals: "23.69 GiB" is within 5 MiB of the bytes it stands for.
uint64_t printedGiB(double gib)
{
    return static_cast<uint64_t>(std::llround(gib * double(GiB)));
}

uint64_t figureBytes(const CardReconciliation& card, const char* key)
{
    const CardFigure* figure = card.figure(key);
    if (!figure || !figure->bytes)
        return 0;
    return *figure->bytes;
}

bool near(uint64_t actual, uint64_t expected)
{
    const uint64_t difference = actual > expected ? actual - expected : expected - actual;
    return difference <= 8 * MiB;
}

} // namespace

// The allocator's, this process's and the card's memory reconciled in one table
// (core/analysis/cardreconciliation.h), whichever inputs give the figures.
class TestCardReconciliation : public QObject
{
    Q_OBJECT

private slots:
    void messageWithOtherProcessAndNvidiaSmi()
    {
        const Case input = openFile(QStringLiteral("history/card_oom.txt"));
        QCOMPARE(input.text.oomMessages.size(), size_t(1));
        const CardReconciliation card = reconcileCard(input, analyzeCase(input));
        QVERIFY(card.available());
        QCOMPARE(card.device, 0);
        QCOMPARE(figureBytes(card, "allocated"), printedGiB(18.00));
        QCOMPARE(figureBytes(card, "reserved"), printedGiB(19.25));
        QCOMPARE(figureBytes(card, "cached_free"), printedGiB(1.25));
        QCOMPARE(figureBytes(card, "process_used"), printedGiB(20.75));
        QCOMPARE(figureBytes(card, "process_outside_allocator"), printedGiB(1.50));
        QCOMPARE(figureBytes(card, "other_processes"), printedGiB(2.50));
        QCOMPARE(figureBytes(card, "card_free"), 256 * MiB);
        QVERIFY(near(figureBytes(card, "card_total"), printedGiB(23.69)));
        QVERIFY(near(figureBytes(card, "outside_allocator"), printedGiB(23.69 - 0.25 - 19.25)));
        QVERIFY(near(figureBytes(card, "unattributed"), printedGiB(23.69 - 0.25 - 19.25 - 1.50 - 2.50)));
        QCOMPARE(card.figure("process_used")->source, std::string("OOM message"));
        QCOMPARE(card.figure("process_used")->view, CardFigure::View::Process);
        QCOMPARE(card.figure("card_total")->view, CardFigure::View::Card);

        // The bar: every holder once, left to right, adding up to the card.
        QStringList keys;
        uint64_t sum = 0;
        for (const CardBand& band : card.bands) {
            keys << QString::fromStdString(std::string(cardBandName(band.kind)));
            sum += band.bytes;
        }
        QCOMPARE(keys.join(QLatin1Char(',')),
            QStringLiteral("allocated,cached_free,process_outside_allocator,other_processes,unattributed,free"));
        QCOMPARE(sum, figureBytes(card, "card_total"));

        QCOMPARE(card.parts.size(), size_t(5));
        QCOMPARE(card.parts[2].key, std::string("nccl"));
        QVERIFY(contains(card.parts[0].typicalSize, "GiB"));
        bool othersNoted = false;
        for (const std::string& note : card.notes)
            othersNoted = othersNoted || contains(note, "Other processes hold 2.50 GiB");
        QVERIFY(othersNoted);
    }

    void sidecarBesideSnapshot()
    {
        // The capture helper's sidecar carries the exception: its message gives card and process.
        const Case input = openFile(QStringLiteral("sidecar/capture.pickle"));
        QCOMPARE(input.sidecars.size(), size_t(1));
        const CardReconciliation card = reconcileCard(input, analyzeCase(input));
        QVERIFY(card.available());
        QCOMPARE(figureBytes(card, "process_used"), printedGiB(22.47));
        QCOMPARE(figureBytes(card, "reserved"), printedGiB(21.50) + 512 * MiB);
        QVERIFY(near(figureBytes(card, "process_outside_allocator"), printedGiB(22.47 - 22.00)));
    }

    void snapshotAndSidecarCapacityWithoutMessage()
    {
        Case input;
        input.snapshots.push_back(test::traceSnapshot("alloc a 10GiB fwd\nalloc b 2GiB fwd\noom 4GiB free=1GiB fwd\n"));
        input.inputs.push_back({ "run.pickle", InputKind::Snapshot, std::nullopt, 0 });
        CaptureSidecar sidecar;
        sidecar.totalMemoryBytes = 16 * GiB;
        sidecar.snapshotIndex = 0;
        input.sidecars.push_back(sidecar);
        const CaseAnalysis analysis = analyzeCase(input);
        const CardReconciliation card = reconcileCard(input, analysis);
        QVERIFY(card.available());
        QCOMPARE(card.figure("card_total")->source, std::string("capture sidecar"));
        QCOMPARE(figureBytes(card, "card_free"), GiB);
        QCOMPARE(card.figure("card_free")->source, std::string("snapshot's oom event"));
        QCOMPARE(card.figure("reserved")->source, std::string("snapshot at the OOM"));
        const uint64_t reserved = figureBytes(card, "reserved");
        QVERIFY(reserved >= 12 * GiB);
        QCOMPARE(figureBytes(card, "outside_allocator"), 16 * GiB - GiB - reserved);
        // Nothing names this process: the table says so instead of guessing.
        QVERIFY(!card.figure("process_used")->bytes);
        QCOMPARE(card.figure("process_used")->source, std::string("not given"));
        bool explained = false;
        for (const std::string& note : card.notes)
            explained = explained || contains(note, "this process has X memory in use");
        QVERIFY(explained);
    }

    void nvidiaSmiAloneWithASnapshot()
    {
        Case input;
        input.snapshots.push_back(test::traceSnapshot("alloc a 20GiB fwd\n"));
        input.inputs.push_back({ "run.pickle", InputKind::Snapshot, std::nullopt, 0 });
        // The sidecar's nvidia-smi: one process on GPU 0 using 22990 MiB of 24576 MiB, 23010 MiB used.
        Case withSmi = openFile(QStringLiteral("sidecar/capture.pickle"));
        input.text.nvidiaSmi = withSmi.text.nvidiaSmi;
        QVERIFY(!input.text.nvidiaSmi.empty());
        const CardReconciliation card = reconcileCard(input, analyzeCase(input));
        QVERIFY(card.available());
        QCOMPARE(figureBytes(card, "card_total"), 24576 * MiB);
        QCOMPARE(figureBytes(card, "card_free"), (24576 - 23010) * MiB);
        QCOMPARE(card.figure("card_free")->source, std::string("nvidia-smi"));
        QCOMPARE(figureBytes(card, "process_used"), 22990 * MiB);
        QCOMPARE(card.figure("process_used")->source, std::string("nvidia-smi"));
        QCOMPARE(card.figure("reserved")->source, std::string("snapshot at the dump"));
        QCOMPARE(figureBytes(card, "process_outside_allocator"), 22990 * MiB - figureBytes(card, "reserved"));
    }

    // The OOM message and the snapshot of the same failure, recorded on an H100: every figure the
    // message prints (allocated, reserved, free, private pools) agrees with the trace's oom event.
    void realMessageAgreesWithItsSnapshot_data()
    {
        QTest::addColumn<QString>("name");
        for (const char* name :
            { "graph_pools", "capacity_first_backward", "lora_first_backward", "other_process", "output_leak" })
            QTest::newRow(name) << QString::fromLatin1(name);
    }

    void realMessageAgreesWithItsSnapshot()
    {
        QFETCH(QString, name);
        Case input = openFile(QStringLiteral("real/extra/") + name + QStringLiteral(".pickle.gz"));
        addFile(input,
            QString(test::testDataDir() + QStringLiteral("/real/extra/") + name + QStringLiteral(".oom.txt"))
                .toStdString());
        CaseAnalysis analysis = analyzeCase(input);
        const CardReconciliation card = reconcileCard(input, analysis);
        QVERIFY(card.available());
        QVERIFY(card.oomEvent >= 0);
        QVERIFY(card.oomChecks.size() >= 3); // allocated, reserved, free
        for (const OomFigureCheck& check : card.oomChecks)
            QVERIFY2(check.agrees,
                (check.key + ": message " + std::to_string(check.messageBytes) + " vs snapshot "
                    + std::to_string(check.snapshotBytes))
                    .c_str());
        if (name == QLatin1String("graph_pools")) {
            QCOMPARE(card.oomChecks.back().key, std::string("private_pools"));
        }

        // The same snapshot beside a message of another moment: both numbers, and that they differ.
        input.text.oomMessages.front().reservedBytes = *input.text.oomMessages.front().reservedBytes + 3 * GiB;
        const CardReconciliation other = reconcileCard(input, analysis);
        const OomFigureCheck* reserved = nullptr;
        for (const OomFigureCheck& check : other.oomChecks)
            reserved = check.key == "reserved" ? &check : reserved;
        QVERIFY(reserved && !reserved->agrees);
        bool said = false;
        for (const std::string& note : other.notes)
            said = said
                || (contains(note, formatBytes(reserved->messageBytes))
                    && contains(note, formatBytes(reserved->snapshotBytes)) && contains(note, "not the same moment"));
        QVERIFY(said);
        reconcileCase(input, analysis); // the analysis reconciles the card once: again, for the changed message
        const nlohmann::ordered_json json = caseToJson(input, analysis)["card_reconciliation"];
        bool disagreesInJson = false;
        for (const auto& check : json["message_vs_snapshot"])
            disagreesInJson = disagreesInJson || (check["key"] == "reserved" && check["agrees"] == false);
        QVERIFY(disagreesInJson);
    }

    // The rest of the card as a timeline band: what the card held besides PyTorch's reserved
    // memory, by holder, under the card's total (cardtimeline.h), in the report's chart too.
    void restOfTheCardIsABandOnTheTimeline()
    {
        const Case input = openFile(QStringLiteral("history/card_oom.txt"));
        const CardReconciliation card = reconcileCard(input, analyzeCase(input));
        const auto band = cardTimelineBand(card);
        QVERIFY(band);
        QCOMPARE(band->device, 0);
        QCOMPARE(band->totalBytes, figureBytes(card, "card_total"));
        QCOMPARE(band->totalSource, std::string("OOM message"));
        QCOMPARE(band->outsideBytes, *card.restOfCardBytes);
        uint64_t sum = 0;
        std::vector<std::string> keys;
        for (const CardBand& part : band->parts) {
            sum += part.bytes;
            keys.push_back(std::string(cardBandName(part.kind)));
        }
        QCOMPARE(sum, band->outsideBytes);
        QCOMPARE(keys, (std::vector<std::string> { "process_outside_allocator", "other_processes", "unattributed" }));
        QVERIFY(contains(band->label, "1.50 GiB"));
        QVERIFY(contains(band->label, "2.50 GiB"));
        QVERIFY(contains(band->label, "card total"));

        // A snapshot with the sidecar's capacity: the report's chart stacks the band on reserved.
        Case withSnapshot;
        withSnapshot.snapshots.push_back(
            test::traceSnapshot("alloc a 10GiB fwd\nalloc b 2GiB fwd\noom 4GiB free=1GiB fwd\n"));
        withSnapshot.inputs.push_back({ "run.pickle", InputKind::Snapshot, std::nullopt, 0 });
        CaptureSidecar sidecar;
        sidecar.totalMemoryBytes = 16 * GiB;
        sidecar.snapshotIndex = 0;
        withSnapshot.sidecars.push_back(sidecar);
        const CaseAnalysis analysis = analyzeCase(withSnapshot);
        const auto sidecarBand = cardTimelineBand(reconcileCard(withSnapshot, analysis));
        QVERIFY(sidecarBand);
        QCOMPARE(sidecarBand->totalBytes, 16 * GiB);
        QCOMPARE(sidecarBand->totalSource, std::string("capture sidecar"));
        const std::string html = report::buildHtmlReport(withSnapshot, analysis);
        QVERIFY(contains(html, "class=\"rest-of-card\""));
        QVERIFY(contains(html, "swatch rest-of-card"));
        QVERIFY(contains(html, "Outside PyTorch at the OOM, " + formatBytes(sidecarBand->outsideBytes)));

        // No card, no band.
        Case alone;
        alone.snapshots.push_back(test::traceSnapshot("alloc a 1GiB fwd\n"));
        alone.inputs.push_back({ "run.pickle", InputKind::Snapshot, std::nullopt, 0 });
        const CaseAnalysis aloneAnalysis = analyzeCase(alone);
        QVERIFY(!cardTimelineBand(reconcileCard(alone, aloneAnalysis)));
        QVERIFY(!contains(report::buildHtmlReport(alone, aloneAnalysis), "class=\"rest-of-card\""));
    }

    void nothingToReconcileWithoutTheCard()
    {
        Case input;
        input.snapshots.push_back(test::traceSnapshot("alloc a 1GiB fwd\n"));
        input.inputs.push_back({ "run.pickle", InputKind::Snapshot, std::nullopt, 0 });
        const CaseAnalysis analysis = analyzeCase(input);
        QVERIFY(!reconcileCard(input, analysis).available());
        QVERIFY(caseToJson(input, analysis)["card_reconciliation"].is_null());
        QVERIFY(!contains(caseToText(input, analysis), "The card's memory"));
        QVERIFY(!contains(report::buildHtmlReport(input, analysis), "id=\"card\""));
    }

    void jsonTextAndReportShowTheSameTable()
    {
        const Case input = openFile(QStringLiteral("history/card_oom.txt"));
        const CaseAnalysis analysis = analyzeCase(input);
        const nlohmann::ordered_json json = caseToJson(input, analysis)["card_reconciliation"];
        QVERIFY(json.is_object());
        bool found = false;
        for (const auto& figure : json["figures"]) {
            if (figure["key"] == "process_outside_allocator") {
                found = true;
                QCOMPARE(figure["view"].get<std::string>(), std::string("process"));
                QCOMPARE(figure["bytes"].get<uint64_t>(), printedGiB(1.50));
            }
        }
        QVERIFY(found);
        QCOMPARE(json["rest_of_card"].size(), size_t(5));
        QVERIFY(json["rest_of_card_bytes"].get<uint64_t>() > 4 * GiB);

        const std::string text = caseToText(input, analysis);
        QVERIFY(contains(text, "The card's memory: allocator, process, card (device 0)"));
        QVERIFY(contains(text, "This process outside PyTorch's allocator"));
        QVERIFY(contains(text, "1.50 GiB"));
        QVERIFY(contains(text, "NCCL buffers"));

        const std::string html = report::buildHtmlReport(input, analysis);
        QVERIFY(contains(html, "<section id=\"card\""));
        QVERIFY(contains(html, "href=\"#card\""));
        QVERIFY(contains(html, "class=\"cardbar\""));
        QVERIFY(contains(html, "data-band=\"process_outside_allocator\""));
        // The card bar in the app's colours: one palette for the report and the views.
        QVERIFY(
            contains(html, "background: " + cardBandColor(CardBandKind::ProcessOutsideAllocator).hex() + "\"></span>"));
        QVERIFY(contains(html, "This process outside PyTorch&#39;s allocator")
            || contains(html, "This process outside PyTorch's allocator"));
        QVERIFY(contains(html, "The rest of the card: what it usually is"));
    }

    // Each backend's rest of the card in its own runtime's words; the keys (the JSON's) are the roles
    // and stay the same on every backend.
    void restOfCardPerBackend()
    {
        const auto names = [](Backend backend) {
            std::string text;
            for (const RestOfCardPart& part : restOfCardParts(backend))
                text += part.key + ": " + part.name + " " + part.typicalSize + " " + part.whatToCheck + "\n";
            return text;
        };
        const std::string cuda = names(Backend::Cuda), hip = names(Backend::Hip), xpu = names(Backend::Xpu),
                          npu = names(Backend::Npu);
        QVERIFY(contains(cuda, "CUDA context") && contains(cuda, "NCCL buffers") && contains(cuda, "nvidia-smi"));
        QVERIFY(contains(hip, "HIP context") && contains(hip, "RCCL") && contains(hip, "rocm-smi"));
        QVERIFY(contains(xpu, "Level Zero context") && contains(xpu, "oneCCL") && contains(xpu, "xpu-smi"));
        QVERIFY(contains(npu, "HCCL") && contains(npu, "npu-smi"));
        for (const std::string* other : { &hip, &xpu, &npu }) {
            for (const char* foreign : { "CUDA context", "cuBLAS", "nvidia-smi", "cudaMalloc" })
                QVERIFY2(!contains(*other, foreign), foreign);
        }
        for (Backend backend : { Backend::Cuda, Backend::Hip, Backend::Xpu, Backend::Npu, Backend::Musa }) {
            const std::vector<RestOfCardPart> parts = restOfCardParts(backend);
            QCOMPARE(parts.size(), size_t(5));
            QCOMPARE(parts[0].key, std::string("cuda_context"));
            QCOMPARE(parts[2].key, std::string("nccl"));
        }
        QVERIFY(contains(outsideCacheHolders(Backend::Xpu), "oneCCL"));
        QVERIFY(!contains(outsideCacheHolders(Backend::Hip), "cuBLAS"));
    }
};

QTEST_GUILESS_MAIN(TestCardReconciliation)
#include "tst_cardreconciliation.moc"
