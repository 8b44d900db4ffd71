#include "common/testutil.h"
#include "common/textfixtures.h"
#include "parsers/text/allocconfparser.h"
#include "parsers/text/textparser.h"

#include <QTest>

using namespace oomlens;
using test::value;

namespace {

constexpr qint64 mib = qint64(1) << 20;

} // namespace

class TestNvidiaSmi : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void wideLayout()
    {
        const TextFindings findings = test::parseTextFixture("nvidia_smi_535.txt");
        QCOMPARE(findings.nvidiaSmi.size(), size_t(1));
        QCOMPARE(classifyText("x", findings), InputKind::NvidiaSmi);
        const NvidiaSmiTable& table = findings.nvidiaSmi[0];
        QCOMPARE(table.driverVersion, std::string("535.104.05"));
        QCOMPARE(table.cudaVersion, std::string("12.2"));
        QCOMPARE(table.sourceLine, size_t(3));
        QCOMPARE(table.gpus.size(), size_t(2));
        QCOMPARE(table.gpus[0].name, std::string("NVIDIA GeForce RTX 3090"));
        QCOMPARE(value(table.gpus[0].usedBytes), 169 * mib);
        QCOMPARE(value(table.gpus[1].usedBytes), 23010 * mib);
        QCOMPARE(value(table.gpus[1].totalBytes), 24576 * mib);
        QCOMPARE(table.gpus[1].index, 1);
        QCOMPARE(table.processes.size(), size_t(3));
        QCOMPARE(table.processes[0].type, std::string("G"));
        QCOMPARE(table.processes[0].name, std::string("/usr/lib/xorg/Xorg"));
        QCOMPARE(table.processes[1].pid.value_or(0), int64_t(28690));
        QCOMPARE(table.processes[1].gpu, 1);
        QCOMPARE(value(table.processes[1].bytes), 22990 * mib);
        QCOMPARE(table.processes[2].type, std::string("C+G"));
        QVERIFY(!table.processes[2].bytes); // N/A under WDDM
    }

    void classicLayout()
    {
        const TextFindings findings = test::parseTextFixture("nvidia_smi_450.txt");
        QCOMPARE(findings.nvidiaSmi.size(), size_t(1));
        const NvidiaSmiTable& table = findings.nvidiaSmi[0];
        QCOMPARE(table.driverVersion, std::string("450.80.02"));
        QCOMPARE(table.gpus.size(), size_t(1));
        QCOMPARE(table.gpus[0].name, std::string("Tesla V100-SXM2..."));
        QCOMPARE(value(table.gpus[0].totalBytes), 16160 * mib);
        QCOMPARE(table.processes.size(), size_t(1));
        QCOMPARE(table.processes[0].name, std::string("...abcdef/venv/bin/python3.7"));
        QCOMPARE(value(table.processes[0].bytes), 16127 * mib);
    }

    void listGpuProcesses()
    {
        const TextFindings findings
            = parseText("GPU:0\nprocess      12345 uses     1234.000 MB GPU memory\n"
                        "process      12346 uses      512.500 MB GPU memory\nGPU:1\nno processes are running\n");
        QCOMPARE(findings.nvidiaSmi.size(), size_t(1));
        const auto& processes = findings.nvidiaSmi[0].processes;
        QCOMPARE(processes.size(), size_t(2));
        QCOMPARE(processes[0].pid.value_or(0), int64_t(12345));
        QCOMPARE(value(processes[0].bytes), 1234 * mib);
        QCOMPARE(value(processes[1].bytes), 512 * mib + mib / 2);
    }

    void csvQuery()
    {
        const TextFindings findings
            = parseText("memory.used [MiB], memory.total [MiB]\n1234 MiB, 81920 MiB\n80000 MiB, 81920 MiB\n");
        QCOMPARE(findings.nvidiaSmi.size(), size_t(1));
        QCOMPARE(findings.nvidiaSmi[0].gpus.size(), size_t(2));
        QCOMPARE(value(findings.nvidiaSmi[0].gpus[1].usedBytes), 80000 * mib);
    }

    void csvQueryWithIndexAndName()
    {
        const TextFindings findings
            = parseText("$ nvidia-smi --query-gpu=index,name,memory.used,memory.total --format=csv\n"
                        "index, name, memory.used [MiB], memory.total [MiB]\n"
                        "0, NVIDIA A100-SXM4-80GB, 79112 MiB, 81920 MiB\n"
                        "3, NVIDIA A100-SXM4-80GB, 4 MiB, 81920 MiB\n");
        QCOMPARE(findings.nvidiaSmi.size(), size_t(1));
        const auto& gpus = findings.nvidiaSmi[0].gpus;
        QCOMPARE(gpus.size(), size_t(2));
        QCOMPARE(gpus[1].index, 3);
        QCOMPARE(gpus[0].name, std::string("NVIDIA A100-SXM4-80GB"));
        QCOMPARE(value(gpus[0].usedBytes), 79112 * mib);
        QCOMPARE(value(gpus[1].totalBytes), 81920 * mib);
    }

    void csvRowsWithoutMemoryAreIgnored()
    {
        const TextFindings findings
            = parseText("index, name, memory.used [MiB], memory.total [MiB]\n0, A100, N/A, N/A\n");
        QVERIFY(findings.nvidiaSmi.empty() || findings.nvidiaSmi[0].gpus.empty());
    }

    void allocConf_data()
    {
        QTest::addColumn<QString>("line");
        QTest::addColumn<QString>("source");
        QTest::addColumn<bool>("expandable");
        QTest::addColumn<qint64>("maxSplit");
        QTest::addColumn<QString>("backend");
        QTest::newRow("export") << "export PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"
                                << "export" << true << qint64(-1) << "native";
        QTest::newRow("export quoted")
            << "export PYTORCH_CUDA_ALLOC_CONF=\"max_split_size_mb:128, garbage_collection_threshold:0.6\""
            << "export" << false << qint64(128) << "native";
        QTest::newRow("command prefix") << "PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync python train.py"
                                        << "env" << false << qint64(-1) << "cudaMallocAsync";
        QTest::newRow("hip") << "export PYTORCH_HIP_ALLOC_CONF=expandable_segments:True"
                             << "export" << true << qint64(-1) << "native";
        QTest::newRow("os.environ")
            << "os.environ[\"PYTORCH_CUDA_ALLOC_CONF\"] = \"expandable_segments:True,max_split_size_mb:512\""
            << "os.environ" << true << qint64(512) << "native";
        QTest::newRow("setdefault") << "os.environ.setdefault('PYTORCH_CUDA_ALLOC_CONF', 'max_split_size_mb:64')"
                                    << "os.environ" << false << qint64(64) << "native";
        QTest::newRow("set_allocator_settings")
            << "torch.cuda.memory._set_allocator_settings(\"expandable_segments:False\")"
            << "set_allocator_settings" << false << qint64(-1) << "native";
        QTest::newRow("list value")
            << "export PYTORCH_CUDA_ALLOC_CONF=roundup_power2_divisions:[256:1,512:2,>:4],expandable_segments:True"
            << "export" << true << qint64(-1) << "native";
    }

    void allocConf()
    {
        QFETCH(QString, line);
        const TextFindings findings = parseText(line.toStdString());
        QCOMPARE(findings.allocConfs.size(), size_t(1));
        const AllocConfSetting& setting = findings.allocConfs[0];
        QTEST(QString::fromStdString(setting.source), "source");
        QTEST(setting.expandableSegments(), "expandable");
        QTEST(static_cast<qint64>(setting.maxSplitSizeMb().value_or(-1)), "maxSplit");
        QTEST(QString::fromStdString(std::string(allocatorBackendName(setting.backend()))), "backend");
        QCOMPARE(setting.sourceLine, size_t(1));
        // A setting alone is context, not a document of its own kind.
        QCOMPARE(classifyText(line.toStdString(), findings), InputKind::Log);
    }

    void allocConfLists()
    {
        AllocConfSetting setting;
        text::parseAllocConfOptions("roundup_power2_divisions:[256:1,>:4], max_split_size_mb : 200", setting);
        QCOMPARE(setting.options.size(), size_t(2));
        QCOMPARE(setting.options.at("roundup_power2_divisions"), std::string("[256:1,>:4]"));
        QCOMPARE(setting.maxSplitSizeMb().value_or(0), int64_t(200));
    }

    void notSettings()
    {
        QVERIFY(parseText(
            "If reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True")
                    .allocConfs.empty());
        QVERIFY(parseText("export PYTORCH_CUDA_ALLOC_CONF=").allocConfs.empty());
        QVERIFY(parseText("PYTORCH_CUDA_ALLOC_CONF is documented at pytorch.org").allocConfs.empty());
    }
};

QTEST_GUILESS_MAIN(TestNvidiaSmi)
#include "tst_nvidiasmi.moc"
