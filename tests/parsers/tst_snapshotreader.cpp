#include "common/snapshotbytes.h"
#include "common/testutil.h"
#include "core/backgroundrelease.h"
#include "parsers/filemapping.h"
#include "parsers/inputloader.h"
#include "parsers/pickle/snapshotcompare.h"
#include "parsers/snapshotreader.h"

#include <QFile>
#include <QTemporaryDir>

#include <QTest>

#include <algorithm>
#include <atomic>

using namespace oomlens;

namespace {

constexpr uint64_t MiB = 1024 * 1024;

bool writeFile(const QString& path, const QByteArray& bytes)
{
    QFile file(path);
    return file.open(QIODevice::WriteOnly) && file.write(bytes) == bytes.size();
}

QByteArray fixture(const char* name)
{
    return test::readFile(test::testDataDir() + QStringLiteral("/snapshots/") + QLatin1String(name));
}

using test::view;

std::shared_ptr<const Snapshot> read(const QByteArray& bytes, SnapshotDecoder decoder = SnapshotDecoder::Native)
{
    return test::readSnapshotBytes(bytes, decoder);
}

std::string stackText(const Snapshot& s, StackId id)
{
    std::string out;
    for (const FrameId f : s.frames->stack(id))
        out += std::string(s.strings->get(s.frames->frame(f).name)) + ";";
    return out;
}

bool hasWarning(const Snapshot& s, const char* fragment)
{
    return std::any_of(s.warnings.begin(), s.warnings.end(),
        [&](const std::string& w) { return w.find(fragment) != std::string::npos; });
}

} // namespace

class TestSnapshotReader : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void segmentListEra()
    {
        const auto s = read(fixture("era_segment_list.pickle"));
        QVERIFY(s);
        QCOMPARE(s->era, Snapshot::Era::SegmentList);
        QCOMPARE(s->segments.size(), size_t(2));
        QCOMPARE(s->blocks.size(), size_t(3));
        QCOMPARE(s->devices(), (std::vector<int32_t> { 0, 1 }));
        QVERIFY(s->traces.empty());
        QVERIFY(!s->segments[0].isLargePool);
        QVERIFY(s->segments[1].isLargePool);
        // Pre-2.1 blocks have no address: they tile the segment from its base.
        QCOMPARE(s->blocks[0].address, uint64_t(0x7F0000000000));
        QCOMPARE(s->blocks[1].address, uint64_t(0x7F0000000000) + MiB);
        // history[0] stands for the owning allocation: its frames and real_size.
        QCOMPARE(stackText(*s, s->blocks[0].stack), std::string("forward;train_step;"));
        QCOMPARE(s->blocks[0].requestedSize, uint64_t(1000000));
        QCOMPARE(s->blocks[0].state, BlockState::ActiveAllocated);
        QCOMPARE(s->blocks[1].state, BlockState::Inactive);
        QCOMPARE(s->segments[1].firstBlock, 2u);
        QCOMPARE(s->segments[1].blockCount, 1u);
    }

    void historyEra()
    {
        const auto s = read(fixture("era_history.pickle"));
        QVERIFY(s);
        QCOMPARE(s->era, Snapshot::Era::BlockHistory);
        QCOMPARE(s->blocks.size(), size_t(3));
        QCOMPARE(s->blocks[1].address, uint64_t(0x7F1000200000));
        QCOMPARE(s->blocks[1].state, BlockState::ActivePendingFree);
        QCOMPARE(s->blocks[1].requestedSize, MiB); // requested_size wins over history's real_size
        QCOMPARE(stackText(*s, s->blocks[0].stack), std::string("forward;train_step;"));
        QCOMPARE(s->blocks[2].stack, FrameTable::emptyStack());
        QVERIFY(s->segments[0].pool.isDefault());
        QCOMPARE(s->traces.size(), size_t(1));
        QCOMPARE(s->traces[0].events.size(), size_t(1));
        QCOMPARE(s->traces[0].events[0].action, TraceAction::Snapshot);
        QCOMPARE(s->traces[0].events[0].size, 3 * MiB);
        QCOMPARE(s->traces[0].events[0].timeUs, int64_t(0));
    }

    void tracesEra()
    {
        const auto s = read(fixture("era_traces.pickle"));
        QVERIFY(s);
        QCOMPARE(s->era, Snapshot::Era::Traces);
        QCOMPARE(s->pickleProtocol, 4);
        QCOMPARE(s->container, std::string("pickle"));
        QVERIFY(s->segments[0].isExpandable);
        QCOMPARE(stackText(*s, s->segments[0].stack), std::string("forward;train_step;"));
        QCOMPARE(s->traces.size(), size_t(2));
        QVERIFY(s->traces[1].events.empty());
        QCOMPARE(s->devices(), std::vector<int32_t> { 0 });
        const auto& events = s->traces[0].events;
        const std::vector<TraceAction> expected { TraceAction::SegmentMap, TraceAction::Alloc, TraceAction::Alloc,
            TraceAction::FreeRequested, TraceAction::FreeCompleted, TraceAction::SegmentUnmap, TraceAction::Snapshot };
        QCOMPARE(events.size(), expected.size());
        for (size_t i = 0; i < expected.size(); ++i)
            QCOMPARE(events[i].action, expected[i]);
        QCOMPARE(events[1].size, 6 * MiB - 8);
        QCOMPARE(events[1].addr, uint64_t(0x7F2000000000));
        QCOMPARE(events[6].timeUs, int64_t(1700000000000006));
        // A free_* entry shares its frame list with the alloc: one interned stack.
        QCOMPARE(events[2].stack, events[4].stack);
        QCOMPARE(stackText(*s, events[2].stack),
            std::string(
                "c10::cuda::CUDACachingAllocator::malloc(int, unsigned long, CUstream_st*);_engine_run_backward;"
                "train_step;"));
        QCOMPARE(events[5].stack, FrameTable::emptyStack());
    }

    void newestEra()
    {
        const auto s = read(fixture("newest_p4.pickle"));
        QVERIFY(s);
        const auto& events = s->traces.at(0).events;
        QCOMPARE(events.size(), size_t(6));
        QCOMPARE(events[3].action, TraceAction::Annotate);
        QCOMPARE(s->strings->get(events[3].userMetadata), std::string_view("activations"));
        QCOMPARE(events[4].action, TraceAction::Unknown);
        QCOMPARE(events[5].action, TraceAction::Oom);
        QCOMPARE(events[5].deviceFree(), 3 * MiB); // oom entries carry device_free instead of addr
        QCOMPARE(events[5].size, 128 * MiB);
        QCOMPARE(s->strings->get(events[1].compileContext), std::string_view("0/1 [inductor]"));
        QVERIFY(!events[0].compileContext.isValid()); // "" means none
        QCOMPARE(s->strings->get(events[2].userMetadata), std::string_view("step 3"));
        QCOMPARE(s->blocks[1].state, BlockState::ActivePendingFree); // "active_awaiting_free" spelling
        QCOMPARE(s->segments[0].pool, (PoolId { 1, 7 }));
        // Newest PyTorch writes pool_id on trace entries too; entries without it record none.
        QCOMPARE(s->entryPools.size(), size_t(1));
        QCOMPARE(s->poolOf(events[1]), std::optional<PoolId>(PoolId { 0, 0 }));
        QVERIFY(!s->poolOf(events[0]));
        // FX-augmented frames keep filename/name/line.
        QCOMPARE(stackText(*s, events[0].stack), std::string("forward;train_step;"));

        QVERIFY(s->allocatorSettings);
        const auto& settings = *s->allocatorSettings;
        QCOMPARE(settings.allocConf, std::string("expandable_segments:False,max_split_size_mb:128"));
        QCOMPARE(settings.maxSplitSize, int64_t(128 * MiB));
        QCOMPARE(settings.garbageCollectionThreshold, 0.6);
        QCOMPARE(settings.pinnedNumRegisterThreads, int64_t(1));
        QCOMPARE(settings.roundupPower2Divisions.size(), size_t(16));
        QCOMPARE(settings.roundupPower2Divisions[0], (std::pair<std::string, int64_t>("1", 4)));

        QCOMPARE(s->annotations.size(), size_t(2));
        QCOMPARE(s->annotations[0].timeUs, int64_t(1760000000000001));
        QCOMPARE(s->annotations[1].fields,
            (std::vector<std::pair<std::string, std::string>> { { "stage", "END" }, { "name", "ProfilerStep#3" } }));

        QVERIFY(hasWarning(*s, "mystery_action"));
        QVERIFY(hasWarning(*s, "new_field"));
        QVERIFY(hasWarning(*s, "unknown_top_level"));
        // Empty host_segments/host_traces: nothing pinned, nothing to show (tst_pinnedhostsnapshot).
        QVERIFY(!s->hostMemory);
        QVERIFY(!hasWarning(*s, "host_segments"));
    }

    void everyContainerAndProtocol_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("container");
        QTest::addColumn<int>("protocol");
        QTest::newRow("protocol 0") << "newest_p0.pickle"
                                    << "pickle" << 0;
        QTest::newRow("protocol 1") << "newest_p1.pickle"
                                    << "pickle" << 0;
        QTest::newRow("protocol 2") << "newest_p2.pickle"
                                    << "pickle" << 2;
        QTest::newRow("protocol 3") << "newest_p3.pickle"
                                    << "pickle" << 3;
        QTest::newRow("protocol 5") << "newest_p5.pickle"
                                    << "pickle" << 5;
        QTest::newRow("gzip") << "newest.pickle.gz"
                              << "gzip" << 4;
        QTest::newRow("torch.save stored") << "newest_stored.zip"
                                           << "torch.save zip" << 2;
        QTest::newRow("torch.save deflated") << "newest_deflated.zip"
                                             << "torch.save zip" << 2;
        QTest::newRow("json") << "newest.json"
                              << "json" << 0;
        QTest::newRow("memory_viz html") << "newest_memory_viz.html"
                                         << "memory_viz html" << 4;
    }

    void everyContainerAndProtocol()
    {
        QFETCH(QString, file);
        QFETCH(QString, container);
        QFETCH(int, protocol);
        const auto reference = read(fixture("newest_p4.pickle"));
        const QByteArray bytes = fixture(file.toUtf8().constData());
        const auto s = read(bytes);
        QVERIFY(reference && s);
        QCOMPARE(QString::fromStdString(s->container), container);
        QCOMPARE(s->pickleProtocol, protocol);
        Snapshot normalized = *s;
        normalized.container = reference->container;
        normalized.pickleProtocol = reference->pickleProtocol;
        std::string diff;
        QVERIFY2(sameSnapshot(*reference, normalized, &diff), diff.c_str());
        const bool legacyPickle
            = file.startsWith(QLatin1String("newest_p0")) || file.startsWith(QLatin1String("newest_p1"));
        QCOMPARE(looksLikeSnapshot(view(bytes)), !legacyPickle);
    }

    // The embedded-Python decoder is the oracle: both must build the same model.
    void decodersAgreeOnFixtures_data()
    {
        QTest::addColumn<QString>("file");
        for (const char* name : { "era_segment_list.pickle", "era_history.pickle", "era_traces.pickle",
                 "newest_p0.pickle", "newest_p1.pickle", "newest_p2.pickle", "newest_p4.pickle", "newest_p5.pickle",
                 "newest.pickle.gz", "newest_deflated.zip", "newest_memory_viz.html", "annotated_tensors.pickle",
                 "npu_segments.pickle", "xpu_traces.pickle" })
            QTest::newRow(name) << QString::fromLatin1(name);
    }

    void decodersAgreeOnFixtures()
    {
        QFETCH(QString, file);
        const QByteArray bytes = fixture(file.toUtf8().constData());
        const auto native = read(bytes, SnapshotDecoder::Native);
        const auto python = read(bytes, SnapshotDecoder::Python);
        QVERIFY(native && python);
        std::string diff;
        QVERIFY2(sameSnapshot(*native, *python, &diff), diff.c_str());
    }

    void sameSnapshotSeesDifferences()
    {
        const auto a = read(fixture("era_traces.pickle"));
        QVERIFY(a);
        Snapshot b = *a;
        std::string diff;
        QVERIFY(sameSnapshot(*a, b, &diff));
        b.traces[0].events[3].size += 1;
        QVERIFY(!sameSnapshot(*a, b, &diff));
        QCOMPARE(diff, std::string("traces[0].events[3].size: 4194304 vs 4194305"));
        b = *a;
        b.blocks[0].stack = FrameTable::emptyStack();
        QVERIFY(!sameSnapshot(*a, b, &diff));
        QVERIFY(diff.rfind("blocks[0].stack", 0) == 0);
    }

    void sniffing_data()
    {
        QTest::addColumn<QByteArray>("bytes");
        QTest::addColumn<bool>("expected");
        QTest::newRow("empty") << QByteArray() << false;
        QTest::newRow("oom text") << QByteArray(
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB")
                                  << false;
        QTest::newRow("unrelated json") << QByteArray("{\"a\": 1, \"b\": [1, 2]}") << false;
        QTest::newRow("json list of numbers") << QByteArray("[1, 2, 3]") << false;
        QTest::newRow("text starting with paren") << QByteArray("(dp0\nthis is a note.") << false;
        QTest::newRow("pickle protocol 1 magic-less") << QByteArray("}q\x00.", 4) << false;
        QTest::newRow("pickle protocol 9") << QByteArray("\x80\x09}.", 4) << false;
        QTest::newRow("pickle protocol 2") << QByteArray("\x80\x02}q\x00.", 6) << true;
        QTest::newRow("html without blob") << QByteArray("<!DOCTYPE html><html><body>hi</body></html>") << false;
        QTest::newRow("zip without data.pkl") << QByteArray("PK\x03\x04 not really a zip") << false;
        QTest::newRow("json snapshot") << QByteArray(" {\"segments\": [], \"device_traces\": []}") << true;
    }

    void sniffing()
    {
        QFETCH(QByteArray, bytes);
        QFETCH(bool, expected);
        QCOMPARE(looksLikeSnapshot(view(bytes)), expected);
    }

    void wholeFileMapping()
    {
        // addFile decodes a mapping of the file and hands the mapping to the background releaser:
        // the bytes must be the file's, stay readable after the file is closed, and an empty file
        // must fall back to reading (it cannot be mapped).
        QTemporaryDir dir;
        const QByteArray bytes = fixture("era_traces.pickle");
        const QString path = dir.filePath(QStringLiteral("snapshot.pickle"));
        QVERIFY(writeFile(path, bytes));
        std::optional<FileMapping> mapping;
        {
            QFile file(path);
            QVERIFY(file.open(QIODevice::ReadOnly));
            mapping = mapFileHandle(file.handle(), uint64_t(file.size()));
        }
        QVERIFY(mapping);
        QCOMPARE(QByteArray(mapping->bytes.data(), qsizetype(mapping->bytes.size())), bytes);
        QVERIFY(readSnapshot(mapping->bytes).snapshot);
        releaseInBackground(std::move(mapping->owner));
        waitForBackgroundReleases();

        const QString empty = dir.filePath(QStringLiteral("empty.pickle"));
        QVERIFY(writeFile(empty, QByteArray()));
        QFile emptyFile(empty);
        QVERIFY(emptyFile.open(QIODevice::ReadOnly));
        QVERIFY(!mapFileHandle(emptyFile.handle(), uint64_t(emptyFile.size())));

        Case loaded;
        addFile(loaded, path.toStdString());
        QCOMPARE(loaded.snapshots.size(), size_t(1));
        QVERIFY(!loaded.inputs.front().error);
    }

    void progressAndCancel()
    {
        const QByteArray bytes = fixture("era_traces.pickle");
        uint64_t last = 0;
        SnapshotReadOptions options;
        options.progress = [&](uint64_t done, uint64_t total) {
            QVERIFY(done <= total);
            last = done;
        };
        QVERIFY(readSnapshot(view(bytes), options).snapshot);
        QCOMPARE(last, uint64_t(bytes.size()));

        if (!test::hasShared())
            return;
        const QByteArray big = test::readFile(test::corpusDir()
            + QStringLiteral("/snapshots/kkaitlyn111__cs336-a2-systems__memory_ctx256_fullstep_.pickle"));
        std::atomic_bool cancel { true };
        options.cancel = &cancel;
        const auto result = readSnapshot(view(big), options);
        QVERIFY(!result.snapshot);
        QVERIFY(result.cancelled);
    }

    void fallbackToPython()
    {
        // STRING (a quoted Python-2 literal) is left to the embedded decoder.
        const QByteArray bytes("\x80\x02]q\x00S'abc'\np1\na.", 17);
        SnapshotReadOptions options;
        options.allowFallback = false;
        auto result = readSnapshot(view(bytes), options);
        QVERIFY(!result.snapshot);
        QVERIFY2(result.error.find("STRING") != std::string::npos, result.error.c_str());
        options.allowFallback = true;
        result = readSnapshot(view(bytes), options);
        // The fallback decodes it, and the model then says it is no snapshot: one clear error.
        QVERIFY(!result.snapshot);
        QVERIFY2(result.error.find("not a memory snapshot") != std::string::npos, result.error.c_str());
        QCOMPARE(result.usedDecoder, SnapshotDecoder::Python);
    }
};

QTEST_GUILESS_MAIN(TestSnapshotReader)
#include "tst_snapshotreader.moc"
