#include "common/testutil.h"
#include "common/textfixtures.h"
#include "parsers/text/textparser.h"

#include <QTest>

using namespace oomlens;
using test::value;

class TestMemorySummary : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void fullBinaryUnits()
    {
        const TextFindings findings = test::parseTextFixture("summary_kib_full.txt");
        QCOMPARE(findings.summaries.size(), size_t(1));
        QCOMPARE(classifyText("x", findings), InputKind::MemorySummary);
        const MemorySummary& summary = findings.summaries[0];
        QCOMPARE(summary.device, 1);
        QCOMPARE(summary.ooms.value_or(-1), int64_t(1));
        QCOMPARE(summary.allocRetries.value_or(-1), int64_t(3));
        QCOMPARE(summary.unitEra, std::string("KiB/MiB"));
        QVERIFY(!summary.truncated);
        QVERIFY(!summary.abbreviated);
        QVERIFY(!summary.allZero);
        QCOMPARE(summary.sourceLine, size_t(1));
        QCOMPARE(summary.rows.size(), size_t(11));
        for (const char* key : { "allocated_memory", "active_memory", "requested_memory", "gpu_reserved_memory",
                 "non_releasable_memory", "allocations", "active_allocs", "gpu_reserved_segments",
                 "non_releasable_allocs", "oversize_allocations", "oversize_gpu_segments" })
            QVERIFY2(summary.rows.count(key), key);
        const SummaryRow& allocated = summary.rows.at("allocated_memory");
        QCOMPARE(value(allocated.current), qint64(7680) << 20);
        QCOMPARE(value(allocated.peak), qint64(10137) << 20);
        QCOMPARE(value(allocated.allocated), qint64(1234) << 30);
        QCOMPARE(value(allocated.freed), qint64(1226) << 30);
        QCOMPARE(value(summary.rows.at("non_releasable_memory").current), qint64(512000) << 10);
        QCOMPARE(value(summary.smallPool.at("gpu_reserved_memory").freed), qint64(0));
        QCOMPARE(value(summary.largePool.at("requested_memory").peak), qint64(9935) << 20);
        // Counts scale by 1000 with a K suffix.
        QCOMPARE(value(summary.rows.at("allocations").allocated), qint64(2345000));
        QCOMPARE(value(summary.rows.at("allocations").current), qint64(812));
        QCOMPARE(value(summary.smallPool.at("non_releasable_allocs").freed), qint64(710000));
        QCOMPARE(summary.largePool.size(), size_t(9));
        QVERIFY(!summary.largePool.count("oversize_allocations"));
    }

    void abbreviatedDecimalEra()
    {
        const TextFindings findings = test::parseTextFixture("summary_kb_abbreviated.txt");
        QCOMPARE(findings.summaries.size(), size_t(1));
        const MemorySummary& summary = findings.summaries[0];
        QCOMPARE(summary.unitEra, std::string("KB/MB"));
        QVERIFY(summary.abbreviated);
        QVERIFY(!summary.truncated);
        QCOMPARE(summary.sourceLine, size_t(2));
        QVERIFY(summary.largePool.empty());
        QVERIFY(!summary.rows.count("requested_memory"));
        // "KB" and "MB" in memory_summary are 1024-based, floored by the printer.
        QCOMPARE(value(summary.rows.at("allocated_memory").current), qint64(512000) * 1024);
        QCOMPARE(value(summary.rows.at("gpu_reserved_memory").freed), qint64(0));
        QCOMPARE(value(summary.rows.at("non_releasable_allocs").allocated), qint64(4000));
    }

    void twoDevicesAndShiftedColumns()
    {
        QByteArray text = test::readFile(test::testDataDir() + QStringLiteral("/text/summary_kib_full.txt"));
        QByteArray second = text;
        second.replace("device ID 1", "device ID 0");
        // An overflowing number shifts the columns; splitting on '|' does not care.
        second.replace("|   1234 GiB |", "| 1234567890 GiB |");
        const QByteArray both = text + "\nsome log line\n" + second;
        const TextFindings findings = parseText(std::string_view(both.constData(), static_cast<size_t>(both.size())));
        QCOMPARE(findings.summaries.size(), size_t(2));
        QCOMPARE(findings.summaries[0].device, 1);
        QCOMPARE(findings.summaries[1].device, 0);
        QCOMPARE(value(findings.summaries[1].rows.at("allocated_memory").allocated), qint64(1234567890) << 30);
        QVERIFY(!findings.summaries[1].truncated);
    }

    void asyncAllocatorZeros()
    {
        const std::string text = "|===========================================================================|\n"
                                 "|                  PyTorch CUDA memory summary, device ID 0                 |\n"
                                 "|---------------------------------------------------------------------------|\n"
                                 "|            CUDA OOMs: 0            |        cudaMalloc retries: 0         |\n"
                                 "|===========================================================================|\n"
                                 "|        Metric         | Cur Usage  | Peak Usage | Tot Alloc  | Tot Freed  |\n"
                                 "|---------------------------------------------------------------------------|\n"
                                 "| Allocated memory      |   5931 MiB |   7087 MiB |      0 B   |      0 B   |\n"
                                 "|       from large pool |      0 MiB |      0 MiB |      0 B   |      0 B   |\n"
                                 "|       from small pool |      0 MiB |      0 MiB |      0 B   |      0 B   |\n"
                                 "|---------------------------------------------------------------------------|\n";
        const TextFindings findings = parseText(text);
        QCOMPARE(findings.summaries.size(), size_t(1));
        QVERIFY(findings.summaries[0].allZero);
        QVERIFY(findings.summaries[0].truncated);
    }

    void collapsedWhitespace()
    {
        const std::string text = "| Allocated memory | 100 MiB | 200 MiB | 3 GiB | 2 GiB |\n"
                                 "| from large pool | 90 MiB | 190 MiB | 2 GiB | 1 GiB |\n"
                                 "| Oversize allocations | 0 | 0 | 0 | 0 |\n"
                                 "| Oversize GPU segments | 0 | 0 | 0 | 0 |\n"
                                 "|===========================================================================|\n";
        const TextFindings findings = parseText(text);
        QCOMPARE(findings.summaries.size(), size_t(1));
        const MemorySummary& summary = findings.summaries[0];
        QCOMPARE(value(summary.rows.at("allocated_memory").peak), qint64(200) << 20);
        QCOMPARE(value(summary.largePool.at("allocated_memory").freed), qint64(1) << 30);
        QVERIFY(summary.truncated); // the head is missing
    }

    void truncatedRows_data()
    {
        QTest::addColumn<int>("cut");
        for (int cut : { 250, 700, 1500, 2300, 3000, 3500 })
            QTest::newRow(QByteArray::number(cut).constData()) << cut;
    }

    void truncatedRows()
    {
        QFETCH(int, cut);
        const QByteArray text
            = test::readFile(test::testDataDir() + QStringLiteral("/text/summary_kib_full.txt")).left(cut);
        const TextFindings findings = parseText(std::string_view(text.constData(), static_cast<size_t>(text.size())));
        const QByteArray whole = test::readFile(test::testDataDir() + QStringLiteral("/text/summary_kib_full.txt"));
        const MemorySummary full
            = parseText(std::string_view(whole.constData(), static_cast<size_t>(whole.size()))).summaries.at(0);
        QCOMPARE(findings.summaries.size(), size_t(1));
        QVERIFY(findings.summaries[0].truncated);
        // A cell cut mid-number is dropped, never misread: what is there matches the whole table.
        for (const auto* pools :
            { &findings.summaries[0].rows, &findings.summaries[0].largePool, &findings.summaries[0].smallPool }) {
            const auto& reference = pools == &findings.summaries[0].rows ? full.rows
                : pools == &findings.summaries[0].largePool              ? full.largePool
                                                                         : full.smallPool;
            for (const auto& [key, row] : *pools) {
                const SummaryRow& expected = reference.at(key);
                for (auto member :
                    { &SummaryRow::current, &SummaryRow::peak, &SummaryRow::allocated, &SummaryRow::freed }) {
                    if (row.*member)
                        QCOMPARE(value(row.*member), value(expected.*member));
                }
            }
        }
    }
};

QTEST_GUILESS_MAIN(TestMemorySummary)
#include "tst_memorysummary.moc"
