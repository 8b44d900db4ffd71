#include "common/testutil.h"
#include "core/presentation/explain.h"
#include "parsers/text/textparser.h"

#include <QTest>

using namespace oomlens;

namespace {

std::string joined(const std::vector<std::string>& lines)
{
    std::string text;
    for (const auto& line : lines)
        text += line + "\n";
    return text;
}

} // namespace

class TestExplain : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void otherProcessMessage()
    {
        const auto findings = parseText("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 50.00 MiB. GPU "
                                        "0 has a total capacity of 9.64 GiB of which "
                                        "22.12 MiB is free. Process 932170 has 6.88 GiB memory in use. Including "
                                        "non-PyTorch memory, this process has 2.60 GiB memory "
                                        "in use. Of the allocated memory 2.31 GiB is allocated by PyTorch, and 34.15 "
                                        "MiB is reserved by PyTorch but unallocated. If "
                                        "reserved but unallocated memory is large try setting "
                                        "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  "
                                        "See documentation for Memory Management  "
                                        "(https://docs.pytorch.org/docs/stable/notes/"
                                        "cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)");
        QCOMPARE(findings.oomMessages.size(), size_t(1));
        const std::string text = joined(explainOomMessage(findings.oomMessages.front()));
        QVERIFY(
            text.find("PyTorch holds 2.34 GiB on the card: 2.31 GiB in live tensors and 34.15 MiB cached but unused.")
            != std::string::npos);
        QVERIFY(text.find("22.12 MiB of it was free") != std::string::npos);
        QVERIFY(text.find("Another process (PID 932170) holds 6.88 GiB") != std::string::npos);
        QVERIFY(text.find("This process uses 2.60 GiB in all; 262.81 MiB of it is outside PyTorch's cache")
            != std::string::npos);
        OOMLENS_COMPARE_GOLDEN(QStringLiteral("diagnosis/explain_other_process.txt"), text);
    }

    void oldCachedTemplate()
    {
        const auto findings = parseText(
            "RuntimeError: CUDA out of memory. Tried to allocate 9.80 GiB (GPU 0; 14.76 GiB total capacity; 9.94 GiB "
            "already allocated; 3.89 GiB free; 160.79 MiB cached)");
        QCOMPARE(findings.oomMessages.size(), size_t(1));
        const std::string text = joined(explainOomMessage(findings.oomMessages.front()));
        QVERIFY(text.find("160.79 MiB cached but unused") != std::string::npos);
        QVERIFY(text.find("The 9.80 GiB request was") != std::string::npos);
    }

    void nvmlGarbageIsCalledOut()
    {
        const auto findings
            = parseText("CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacty of 23.99 GiB of "
                        "which 7.20 GiB is free. Including "
                        "non-PyTorch memory, this process has 17179869184.00 GiB memory in use. Of the allocated "
                        "memory 14.51 GiB is allocated by PyTorch, "
                        "and 685.18 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is "
                        "large try setting max_split_size_mb "
                        "to avoid fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF");
        QCOMPARE(findings.oomMessages.size(), size_t(1));
        const std::string text = joined(explainOomMessage(findings.oomMessages.front()));
        QVERIFY(text.find("NVML could not read it") != std::string::npos);
        QVERIFY(text.find("this process uses") == std::string::npos); // no figure made up from the placeholder
        QVERIFY(text.find("more than the 20.00 MiB requested") != std::string::npos);
    }

    // Memory nobody accounts for is worth a line only when it is real: 20 MiB in the example case is
    // rounding, 3 GiB on a 24 GiB card is another process or a busy GPU.
    void unattributedMemoryOnlyWhenMeaningful()
    {
        const QByteArray bytes = test::readFile(QStringLiteral(OOMLENS_SOURCE_DIR "/resources/examples/oom_case.txt"));
        const auto example = parseText(std::string_view(bytes.constData(), static_cast<size_t>(bytes.size())));
        QCOMPARE(example.oomMessages.size(), size_t(1));
        QVERIFY(joined(explainOomMessage(example.oomMessages.front())).find("by no process the message names")
            == std::string::npos);

        const auto busy = parseText("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB. GPU 0 has "
                                    "a total capacity of 23.65 GiB of which "
                                    "1.12 GiB is free. Of the allocated memory 16.87 GiB is allocated by PyTorch, and "
                                    "2.18 GiB is reserved by PyTorch but "
                                    "unallocated.");
        QCOMPARE(busy.oomMessages.size(), size_t(1));
        // 23.65 − 1.12 − (16.87 + 2.18) = 3.48 GiB
        QVERIFY(joined(explainOomMessage(busy.oomMessages.front()))
                    .find("3.48 GiB (15%) of the card is used outside PyTorch's cache")
            != std::string::npos);
    }

    void summaryReading()
    {
        MemorySummary summary;
        summary.device = 0;
        summary.unitEra = "KiB/MiB";
        summary.ooms = 1;
        summary.allocRetries = 3;
        summary.rows["allocated_memory"] = { 7680ULL << 20, 10137ULL << 20, std::nullopt, std::nullopt };
        summary.rows["gpu_reserved_memory"] = { 9000ULL << 20, 11000ULL << 20, std::nullopt, std::nullopt };
        summary.rows["non_releasable_memory"] = { 512000ULL << 10, 900ULL << 20, std::nullopt, std::nullopt };
        const std::string text = joined(explainSummary(summary));
        QVERIFY(text.find("1 OOMs, 3 cudaMalloc retries") != std::string::npos);
        QVERIFY(text.find("Live tensors: 7.50 GiB now, 9.90 GiB at the peak.") != std::string::npos);
        QVERIFY(text.find("1.29 GiB of the cache is reserved but unallocated (15%).") != std::string::npos);
        QVERIFY(text.find("500.00 MiB is non-releasable (6%)") != std::string::npos);

        summary.allZero = true;
        QVERIFY(joined(explainSummary(summary)).find("cudaMallocAsync") != std::string::npos);
    }
};

QTEST_GUILESS_MAIN(TestExplain)
#include "tst_explain.moc"
