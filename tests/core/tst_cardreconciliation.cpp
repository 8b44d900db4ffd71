#include "common/analysisfixtures.h"
#include "common/testutil.h"
#include "core/caseanalysis.h"
#include "core/jsonexport.h"
#include "core/presentation/cardreconciliation.h"
#include "core/report/htmlreport.h"
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

bool contains(const std::string& haystack, const std::string& needle)
{
    return haystack.find(needle) != std::string::npos;
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
// (core/presentation/cardreconciliation.h), whichever inputs give the figures.
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
            keys << QString::fromStdString(band.key);
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
        QVERIFY(contains(html, "This process outside PyTorch&#39;s allocator")
            || contains(html, "This process outside PyTorch's allocator"));
        QVERIFY(contains(html, "The rest of the card: what it usually is"));
    }
};

QTEST_GUILESS_MAIN(TestCardReconciliation)
#include "tst_cardreconciliation.moc"
