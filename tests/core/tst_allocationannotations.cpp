#include "common/snapshotbytes.h"
#include "common/testutil.h"
#include "core/analysis/allocationannotations.h"
#include "core/analysis/annotationspans.h"
#include "core/caseanalysis.h"
#include "core/jsonexport.h"
#include "core/report/htmlreport.h"
#include "parsers/inputloader.h"

#include <QTest>

#include <nlohmann/json.hpp>

using namespace oomlens;

// torch.cuda.memory._annotate_tensor (PyTorch 2.14+) records `annotate` trace entries keyed to the
// base of a live allocation. tests/data/snapshots/annotated_tensors.pickle (make_fixtures.py's
// annotated_era) holds two notes on one tensor, one on a block reused at the same address later,
// one on an address the trace holds no allocation for, inside a _set_memory_metadata run.
namespace {

constexpr uint64_t MiB = 1024 * 1024;
constexpr uint64_t base = 0x7F4000000000;

QByteArray fixtureBytes()
{
    return test::readFile(test::testDataDir() + QStringLiteral("/snapshots/annotated_tensors.pickle"));
}

} // namespace

class TestAllocationAnnotations : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void annotationsAttachToTheLiveAllocation_data()
    {
        QTest::addColumn<int>("decoder");
        QTest::newRow("native") << int(SnapshotDecoder::Native);
        QTest::newRow("python") << int(SnapshotDecoder::Python);
    }

    void annotationsAttachToTheLiveAllocation()
    {
        QFETCH(int, decoder);
        const auto snapshot = test::readSnapshotBytes(fixtureBytes(), SnapshotDecoder(decoder));
        QVERIFY(snapshot);
        const SnapshotAnalysis analysis = analyzeSnapshot(snapshot);
        const DeviceAnalysis& device = *analysis.primary();
        const AllocationAnnotations annotations(*snapshot, device);
        const auto& all = annotations.all();
        QCOMPARE(all.size(), size_t(4));
        QCOMPARE(all[0].text, std::string("saved for backward"));
        QCOMPARE(all[1].text, std::string("layer 3 kv"));
        QCOMPARE(all[2].text, std::string("lost"));
        QCOMPARE(all[3].text, std::string("grad bucket"));

        // The first two name the 16 MiB tensor allocated at the base, the last the 12 MiB block the
        // allocator later handed out at the same address: the one live at the annotation's moment.
        QVERIFY(all[0].allocation >= 0 && all[0].allocation == all[1].allocation);
        const Allocation& first = device.allocations[size_t(all[0].allocation)];
        QCOMPARE(first.address, base);
        QCOMPARE(first.requestedSize, 16 * MiB);
        QVERIFY(first.freeEvent >= 0);
        QVERIFY(all[3].allocation >= 0 && all[3].allocation != all[0].allocation);
        const Allocation& reused = device.allocations[size_t(all[3].allocation)];
        QCOMPARE(reused.address, base);
        QCOMPARE(reused.requestedSize, 12 * MiB);
        QVERIFY(reused.freeEvent < 0);
        QCOMPARE(all[2].allocation, -1); // no allocation at 0x7f40dead0000

        QCOMPARE(annotations.joinedText(all[0].allocation), std::string("saved for backward; layer 3 kv"));
        QCOMPARE(annotations.of(all[3].allocation).size(), size_t(1));
        QCOMPARE(annotations.atEvent(all[1].event), &all[1]);
        QVERIFY(!annotations.atEvent(0));
        // The annotation site's frames are the call to _annotate_tensor, kept apart from the block's.
        QCOMPARE(snapshot->strings->get(snapshot->frames->frame(snapshot->frames->stack(all[0].stack)[0]).name),
            std::string_view("pack_hook"));
        QCOMPARE(all[3].stack, FrameTable::emptyStack());
    }

    // An annotate entry's user_metadata is its note, not the thread's _set_memory_metadata label:
    // the "epoch 1" run goes on through them as one span.
    void annotationsDoNotSplitMetadataRuns()
    {
        const auto snapshot = test::readSnapshotBytes(fixtureBytes());
        QVERIFY(snapshot);
        const SnapshotAnalysis analysis = analyzeSnapshot(snapshot);
        const std::vector<AnnotationSpan> spans = annotationSpans(*snapshot, *analysis.primary());
        int epochSpans = 0;
        for (const AnnotationSpan& span : spans) {
            QVERIFY2(span.name != "saved for backward" && span.name != "grad bucket", span.name.c_str());
            epochSpans += span.name == "epoch 1" ? 1 : 0;
        }
        QCOMPARE(epochSpans, 1);
    }

    void diagnoseJsonListsThem()
    {
        const QByteArray bytes = fixtureBytes();
        Case input;
        addInput(input, "annotated_tensors.pickle", test::view(bytes));
        QVERIFY(!input.inputs.at(0).error);
        const CaseAnalysis analysis = analyzeCase(input);
        const nlohmann::ordered_json json = caseToJson(input, analysis);
        const auto& notes = json.at("allocation_annotations").at(0);
        QCOMPARE(notes.size(), size_t(4));
        QCOMPARE(notes[0].at("text").get<std::string>(), std::string("saved for backward"));
        QCOMPARE(notes[0].at("address").get<uint64_t>(), base);
        QCOMPARE(notes[0].at("device").get<int>(), 0);
        QCOMPARE(notes[0].at("site").get<std::string>(), std::string("model.py:88:pack_hook"));
        const auto& allocation = notes[0].at("allocation");
        QCOMPARE(allocation.at("requested_bytes").get<uint64_t>(), 16 * MiB);
        QCOMPARE(allocation.at("live_at_dump").get<bool>(), false);
        QVERIFY(allocation.at("live_at_oom").is_null()); // the trace has no OOM
        QVERIFY(notes[2].at("allocation").is_null());
        QVERIFY(notes[3].at("site").is_null());
        QCOMPARE(notes[3].at("allocation").at("requested_bytes").get<uint64_t>(), 12 * MiB);
        QCOMPARE(notes[3].at("allocation").at("live_at_dump").get<bool>(), true);
    }

    // The report lists every note with the allocation it names, and the largest allocations carry
    // their notes.
    void reportListsThem()
    {
        const QByteArray bytes = fixtureBytes();
        Case input;
        addInput(input, "annotated_tensors.pickle", test::view(bytes));
        const std::string html = report::buildHtmlReport(input, analyzeCase(input));
        const size_t section = html.find("<h3>Annotations</h3>");
        QVERIFY(section != std::string::npos);
        const std::string table = html.substr(section, html.find("</table>", section) - section);
        for (const char* text : { "saved for backward", "layer 3 kv", "lost", "grad bucket", "pack_hook (model.py:88)",
                 "16.00 MiB", "12.00 MiB", "not in the trace", "live at the dump" })
            QVERIFY2(table.find(text) != std::string::npos, text);
        QVERIFY(html.find("· note: saved for backward; layer 3 kv</summary>") != std::string::npos);
    }
};

QTEST_MAIN(TestAllocationAnnotations)
#include "tst_allocationannotations.moc"
