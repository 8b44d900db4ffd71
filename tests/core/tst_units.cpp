#include "common/oomnames.h"
#include "core/analysis/cardbandkind.h"
#include "core/analysis/userframe.h"
#include "core/diagnosis/fixkind.h"
#include "core/phase.h"
#include "core/snapshot.h"
#include "core/strings.h"
#include "core/textinputs.h"
#include "core/units.h"

#include <QTest>

using namespace oomlens;

class TestUnits : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void formatsLikePyTorch_data()
    {
        QTest::addColumn<qulonglong>("bytes");
        QTest::addColumn<QString>("text");
        QTest::newRow("zero") << 0ULL << QStringLiteral("0 bytes");
        QTest::newRow("1024 stays bytes") << 1024ULL << QStringLiteral("1024 bytes");
        QTest::newRow("1 MiB prints as KiB") << qulonglong(MiB) << QStringLiteral("1024.00 KiB");
        QTest::newRow("1 GiB prints as MiB") << qulonglong(GiB) << QStringLiteral("1024.00 MiB");
        QTest::newRow("3.5 GiB") << 3758096384ULL << QStringLiteral("3.50 GiB");
    }
    void formatsLikePyTorch()
    {
        QFETCH(qulonglong, bytes);
        QFETCH(QString, text);
        QCOMPARE(QString::fromStdString(formatBytes(bytes)), text);
    }

    void signedBytes()
    {
        QCOMPARE(
            QString::fromStdString(formatSignedBytes(-static_cast<int64_t>(3 * GiB))), QStringLiteral("-3.00 GiB"));
        QCOMPARE(QString::fromStdString(formatSignedBytes(512)), QStringLiteral("+512 bytes"));
    }

    // A difference reads "0" when the two runs agree; a ratio has one spelling everywhere.
    void deltasAndRatios()
    {
        QCOMPARE(formatBytesDelta(0), std::string("0"));
        QCOMPARE(formatBytesDelta(-static_cast<int64_t>(GiB) / 2), std::string("-512.00 MiB"));
        QCOMPARE(formatBytesDelta(3 * static_cast<int64_t>(GiB)), std::string("+3.00 GiB"));
        QCOMPARE(formatRatio(1.254), std::string("1.25x"));
        QCOMPARE(formatRatio(2.0, 1), std::string("2.0x"));
    }

    void stringHelpers()
    {
        QVERIFY(contains("torch/optim/adam.py", "/optim/"));
        QVERIFY(!contains("adam.py", "optim/"));
        QCOMPARE(trimmed(" \t memory \r\n"), std::string_view("memory"));
        QCOMPARE(trimmedLeft("  a b "), std::string_view("a b "));
        QCOMPARE(trimmed("   "), std::string_view());
        QCOMPARE(lowercase("CUDA Out Of Memory"), std::string("cuda out of memory"));
        QVERIFY(isDigit('7') && !isDigit('x') && isSpace('\t') && !isSpace('_'));
        // Columns count characters, not UTF-8 bytes: "–" is three bytes and one column.
        QCOMPARE(displayWidth("a–b"), size_t(3));
        QCOMPARE(padLeft("7", 3), std::string("  7"));
        QCOMPARE(padRight("a–b", 5), std::string("a–b  "));
        QCOMPARE(padRight("longer", 3), std::string("longer"));
    }

    // A frame is written in three forms, each in one place (core/analysis/userframe.h).
    void frameForms()
    {
        auto strings = std::make_shared<StringTable>();
        auto table = std::make_shared<FrameTable>();
        const FrameId frame = table->intern({ strings->intern("/home/me/model.py"), strings->intern("forward"), 42 });
        const FrameId frames[] = { frame };
        const StackId stack = table->internStack(frames, 1);
        Snapshot snapshot;
        snapshot.strings = strings;
        snapshot.frames = table;
        QCOMPARE(frameLabel(*snapshot.frames, *snapshot.strings, frame), std::string("forward (/home/me/model.py:42)"));
        QCOMPARE(frameLabel(*snapshot.frames, *snapshot.strings, frame, FramePath::FileName),
            std::string("forward (model.py:42)"));
        QCOMPARE(frameText(snapshot, frame), std::string("/home/me/model.py:42:forward"));
        QCOMPARE(frameSiteText(snapshot, frame), std::string("/home/me/model.py:42 forward"));
        QCOMPARE(userFrameLabel(snapshot, stack), std::string("forward (/home/me/model.py:42)"));
        QCOMPARE(userFrameLabel(snapshot, FrameTable::emptyStack()), std::string());
    }

    // Fix ids, card bands and host kills: every value has one spelling, read back to itself.
    void enumSpellingsRoundTrip()
    {
        for (int i = 0; i <= static_cast<int>(FixKind::SmallerBatch); ++i) {
            const auto kind = static_cast<FixKind>(i);
            QVERIFY2(!fixId(kind).empty(), std::to_string(i).c_str());
            QVERIFY(fixKindFromId(fixId(kind)) == kind);
        }
        QCOMPARE(fixId(FixKind::EvalAccumulation), std::string_view("eval_accumulation_steps"));
        for (int i = 0; i <= static_cast<int>(CardBandKind::OutsideAllocator); ++i) {
            const auto kind = static_cast<CardBandKind>(i);
            QVERIFY(cardBandFromName(cardBandName(kind)) == kind);
        }
        for (int i = 0; i <= static_cast<int>(HostKillKind::Exit137); ++i) {
            const auto kind = static_cast<HostKillKind>(i);
            QVERIFY(hostKillKindFromName(hostKillKindName(kind)) == kind);
        }
        QCOMPARE(hostKillKindName(HostKillKind::Exit137), std::string_view("exit_137"));
        QCOMPARE(phaseCount, static_cast<int>(Phase::Reload) + 1);
    }

    void namesRoundTrip()
    {
        for (int i = 0; i < categoryCount; ++i) {
            const auto category = static_cast<Category>(i);
            QCOMPARE(categoryFromName(categoryName(category)), category);
        }
        QCOMPARE(phaseName(phaseFromName("backward")), std::string_view("backward"));
        QCOMPARE(traceActionFromName("segment_unmap"), TraceAction::SegmentUnmap);
        QCOMPARE(traceActionFromName("something_new"), TraceAction::Unknown);
    }

    // Every backend and message template has one printed name, read back to the same value; the
    // names are the ones the JSON has always carried.
    void backendAndTemplateNamesRoundTrip()
    {
        for (int i = 0; i <= static_cast<int>(Backend::Cpu); ++i) {
            const auto backend = static_cast<Backend>(i);
            QVERIFY(backendFromName(backendName(backend)) == backend);
        }
        for (int i = 0; i <= static_cast<int>(OomTemplate::LevelZero); ++i) {
            const auto id = static_cast<OomTemplate>(i);
            QVERIFY(oomTemplateFromName(oomTemplateName(id)) == id);
        }
        QCOMPARE(backendName(Backend::CudaRuntime), std::string_view("cuda_runtime"));
        QCOMPARE(backendName(Backend::None), std::string_view(""));
        QCOMPARE(oomTemplateName(OomTemplate::CudaMallocAsync), std::string_view("cudaMallocAsync"));
        QCOMPARE(oomTemplateName(OomTemplate::XpuBlockLimit), std::string_view("xpu_block_limit"));
        QVERIFY(!backendFromName("CUDA"));
        QVERIFY(!oomTemplateFromName("mps-2.0"));
    }

    void internsStringsFramesAndStacks()
    {
        StringTable strings;
        const auto a = strings.intern("train.py");
        for (int i = 0; i < 1000; ++i)
            strings.intern("f" + std::to_string(i));
        QCOMPARE(strings.intern("train.py"), a);
        QCOMPARE(strings.get(a), std::string_view("train.py"));

        FrameTable frames;
        const FrameId f1 = frames.intern({ a, strings.intern("forward"), 10 });
        const FrameId f2 = frames.intern({ a, strings.intern("backward"), 20 });
        QCOMPARE(frames.intern({ a, strings.intern("forward"), 10 }), f1);
        const FrameId stackFrames[] = { f1, f2 };
        const StackId s = frames.internStack(stackFrames, 2);
        QVERIFY(s != FrameTable::emptyStack());
        QCOMPARE(frames.internStack(stackFrames, 2), s);
        QCOMPARE(frames.stack(s).size(), size_t(2));
        QVERIFY(frames.stack(FrameTable::emptyStack()).empty());
        QCOMPARE(frames.internStack(stackFrames, 0), FrameTable::emptyStack());
    }
};

QTEST_GUILESS_MAIN(TestUnits)
#include "tst_units.moc"
