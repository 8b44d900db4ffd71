#include "common/oomnames.h"
#include "core/phase.h"
#include "core/snapshot.h"
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
