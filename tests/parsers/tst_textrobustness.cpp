#include "common/oomnames.h"
#include "common/testutil.h"
#include "common/textfixtures.h"
#include "parsers/text/textlines.h"
#include "parsers/text/textparser.h"

#include <QElapsedTimer>
#include <QRandomGenerator>
#include <QTest>

#include <algorithm>

#include <map>

using namespace oomlens;

namespace {

// A document with every kind of finding, to cut at every length.
std::string compositeDocument()
{
    return test::textFixture("training_log.txt")
        + "RuntimeError: CUDA out of memory. Tried to allocate 9.80 GiB (GPU 0; 14.76 GiB total capacity; 9.94 GiB "
          "already allocated; 3.89 GiB free; 160.79 MiB cached)\n"
          "MPS backend out of memory (MPS allocated: 3.11 GB, other allocations: 5.42 GB, max allowed: 9.07 GB). Tried "
          "to allocate 720.00 MB on private pool. Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper limit for "
          "memory allocations (may cause system failure).\n"
          "torch.OutOfMemoryError: Allocation on device 0 would exceed allowed memory. (out of memory)\nCurrently "
          "allocated     : 9.43 GiB\nRequested               : 640.00 MiB\nDevice limit            : 11.59 GiB\nFree "
          "(according to CUDA): 7.12 MiB\n\n"
          "ResourceExhaustedError: OOM when allocating tensor with shape[32,512,512] and type float on "
          "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc\n"
        + test::textFixture("summary_kib_full.txt") + test::textFixture("nvidia_smi_535.txt");
}

} // namespace

class TestTextRobustness : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void emptyAndBlank_data()
    {
        QTest::addColumn<QByteArray>("bytes");
        QTest::newRow("empty") << QByteArray();
        QTest::newRow("blank") << QByteArray(" \n\t\r\n  ");
        QTest::newRow("prose") << QByteArray("Hello, my training run died last night, any idea why?\n");
        QTest::newRow("lone prefix") << QByteArray("[rank0]:");
        QTest::newRow("only borders") << QByteArray("|=====|\n|-----|\n");
    }

    void emptyAndBlank()
    {
        QFETCH(QByteArray, bytes);
        const std::string_view text(bytes.constData(), static_cast<size_t>(bytes.size()));
        const TextFindings findings = parseText(text);
        QVERIFY(findings.empty());
        QCOMPARE(classifyText(text, findings), InputKind::Unknown);
    }

    void randomBytes()
    {
        QRandomGenerator random(20240601);
        for (int round = 0; round < 50; ++round) {
            std::string bytes(static_cast<size_t>(random.bounded(1, 20000)), '\0');
            for (char& c : bytes)
                c = static_cast<char>(random.bounded(256));
            const TextFindings findings = parseText(bytes);
            for (const OomMessage& message : findings.oomMessages)
                QVERIFY(text::isValidUtf8(message.text));
        }
    }

    void invalidUtf8IsReplaced()
    {
        std::string text
            = "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 1.96 GiB total capacity; 1.24 GiB "
              "already allocated; 2.88 MiB free; 1.25 GiB reserved in total by PyTorch) \xff\xfe\n";
        text = "\x80\xc3" + text + "  File \"/home/\xe9t\xe9/train.py\", line 3, in main\n";
        const TextFindings findings = parseText(text);
        QCOMPARE(findings.oomMessages.size(), size_t(1));
        QCOMPARE(findings.oomMessages[0].requestedBytes.value_or(0), uint64_t(20971520));
        QVERIFY(text::isValidUtf8(findings.oomMessages[0].text));
        for (const TracebackInfo& info : findings.tracebacks) {
            for (const TracebackFrame& frame : info.frames)
                QVERIFY(text::isValidUtf8(frame.filename));
        }
    }

    void ansiColoursAndCarriageReturns()
    {
        const std::string text
            = "\x1b[31mtorch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 1.96 GiB total "
              "capacity; "
              "1.24 GiB already allocated; 2.88 MiB free; 1.25 GiB reserved in total by PyTorch)\x1b[0m\r\n";
        const TextFindings findings = parseText(text);
        QCOMPARE(findings.oomMessages.size(), size_t(1));
        QCOMPARE(findings.oomMessages[0].exception, std::string("torch.OutOfMemoryError"));
        QVERIFY(!findings.oomMessages[0].truncated);
    }

    void hugeSingleLine()
    {
        std::string line;
        line.reserve(20u << 20);
        while (line.size() < (20u << 20))
            line += "CUDA out of memory. Process 1 has | from large pool | 5 MiB memory in use. File \"x\", line 1, in "
                    "f ";
        QElapsedTimer timer;
        timer.start();
        const TextFindings findings = parseText(line);
        QVERIFY2(timer.elapsed() < 20000, "a 20 MB line must parse in linear time");
        QCOMPARE(findings.oomMessages.size(), size_t(1));
        QVERIFY(findings.oomMessages[0].truncated);
        QVERIFY(findings.oomMessages[0].text.size() <= 8192);
    }

    void everyPrefixIsConsistent()
    {
        // Cutting a paste anywhere never produces a value the whole paste contradicts.
        const std::string document = compositeDocument();
        const TextFindings whole = parseText(document);
        QCOMPARE(whole.oomMessages.size(), size_t(6));
        std::map<size_t, const OomMessage*> bySourceLine;
        for (const OomMessage& message : whole.oomMessages)
            bySourceLine[message.sourceLine] = &message;
        for (size_t cut = 0; cut <= document.size(); cut += 5) {
            const TextFindings part = parseText(std::string_view(document).substr(0, cut));
            for (const OomMessage& message : part.oomMessages) {
                const auto it = bySourceLine.find(message.sourceLine);
                QVERIFY2(it != bySourceLine.end(), qPrintable(QStringLiteral("cut at %1").arg(cut)));
                const OomMessage& full = *it->second;
                QCOMPARE(message.backend, full.backend);
                for (auto field : { &OomMessage::requestedBytes, &OomMessage::totalBytes, &OomMessage::freeBytes,
                         &OomMessage::allocatedBytes, &OomMessage::reservedBytes, &OomMessage::reservedUnallocatedBytes,
                         &OomMessage::allowedBytes }) {
                    if (message.*field)
                        QCOMPARE(*(message.*field), (full.*field).value_or(0));
                }
                // Missing fields are reported as a cut message.
                if (message.requestedBytes != full.requestedBytes || message.freeBytes != full.freeBytes)
                    QVERIFY2(message.truncated,
                        qPrintable(QStringLiteral("cut at %1: %2").arg(cut).arg(QString::fromStdString(message.text))));
            }
            for (const MemorySummary& summary : part.summaries) {
                if (summary.rows.size() < whole.summaries.at(0).rows.size())
                    QVERIFY(summary.truncated);
            }
        }
    }

    void largeLogIsLinear()
    {
        // Ordinary training output with an OOM, a traceback and a summary every 2000 lines, at 3 MB
        // and at 30 MB. Ten times the text must cost about ten times the time: the ratio, not a
        // wall-clock bound, so that a loaded machine or a sanitizer build cannot fail it, while a
        // quadratic parser (100x) still does.
        const std::string block = test::textFixture("training_log.txt") + test::textFixture("summary_kib_full.txt");
        const auto makeLog = [&block](size_t bytes, int& ooms) {
            std::string log;
            log.reserve(bytes + (2u << 20));
            ooms = 0;
            for (int i = 0; log.size() < bytes; ++i) {
                log += "[rank0]: 2024-06-01 12:00:00 INFO | step " + std::to_string(i)
                    + " | loss 2.3107 | lr 3.0e-4 | grad_norm 1.02 | tokens/s 51234 | mem 71.2 GiB\n";
                if (i % 2000 == 1999) {
                    log += block;
                    ooms += 2;
                }
            }
            return log;
        };
        const auto timeParse = [](const std::string& log, TextFindings& findings) {
            QElapsedTimer timer;
            timer.start();
            findings = parseText(log);
            return std::max<qint64>(timer.elapsed(), 1);
        };
        int smallOoms = 0;
        int ooms = 0;
        const std::string small = makeLog(3u << 20, smallOoms);
        const std::string log = makeLog(30u << 20, ooms);
        TextFindings findings;
        const qint64 smallElapsed = timeParse(small, findings);
        QCOMPARE(findings.oomMessages.size(), size_t(smallOoms));
        const qint64 elapsed = timeParse(log, findings);
        qInfo("parsed %.1f MB in %lld ms, %.1f MB in %lld ms", double(small.size()) / (1 << 20), smallElapsed,
            double(log.size()) / (1 << 20), elapsed);
        QCOMPARE(findings.oomMessages.size(), size_t(ooms));
        QCOMPARE(findings.summaries.size(), size_t(ooms / 2));
        QCOMPARE(classifyText(log, findings), InputKind::Log);
        QVERIFY2(elapsed < 30 * smallElapsed + 1000,
            qPrintable(QStringLiteral("the text parser must stay linear: %1 ms for 10x the text that took %2 ms")
                           .arg(elapsed)
                           .arg(smallElapsed)));
    }
};

QTEST_GUILESS_MAIN(TestTextRobustness)
#include "tst_textrobustness.moc"
