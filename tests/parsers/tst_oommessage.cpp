#include "common/oomnames.h"
#include "common/textfixtures.h"
#include "parsers/text/sizeparse.h"
#include "parsers/text/textparser.h"

#include <QTest>

#include <algorithm>

using namespace oomlens;
using test::value;

namespace {

constexpr qint64 none = -1; // what test::value() gives for a field the message lacks

} // namespace

class TestOomMessage : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void sizes_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<qint64>("bytes");
        QTest::newRow("GiB two decimals") << QStringLiteral("3.50 GiB") << qint64(3758096384);
        QTest::newRow("bytes") << QStringLiteral("512 bytes") << qint64(512);
        QTest::newRow("zero bytes") << QStringLiteral("0 bytes") << qint64(0);
        QTest::newRow("KiB rounds half up") << QStringLiteral("982.50 KiB") << qint64(1006080);
        QTest::newRow("MiB") << QStringLiteral("160.79 MiB") << qint64(168600535);
        QTest::newRow("XLA without space") << QStringLiteral("16.00GiB") << qint64(17179869184);
        QTest::newRow("MPS GB is binary") << QStringLiteral("9.07 GB") << qint64(9738838344);
        QTest::newRow("no TiB in format_size") << QStringLiteral("130206.04 GiB") << qint64(139807670885417);
    }

    void sizes()
    {
        QFETCH(QString, text);
        QFETCH(qint64, bytes);
        const std::string utf8 = text.toStdString();
        const auto token = text::parseSizeAt(utf8, 0);
        QVERIFY(token);
        QCOMPARE(value(token->bytes), bytes);
        QCOMPARE(token->end, utf8.size());
    }

    void garbageSizeIsEmpty()
    {
        const auto token = text::parseSizeAt("17179869184.00 GiB", 0);
        QVERIFY(token);
        QVERIFY(token->garbage);
        QVERIFY(!token->bytes);
        QVERIFY(!text::parseSizeAt("12.5 parsecs", 0));
    }

    void templates_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("backend");
        QTest::addColumn<QString>("templateId");
        QTest::addColumn<QString>("exception");
        QTest::addColumn<int>("device");
        test::addOomByteColumns();
        QTest::addColumn<QString>("version");
        QTest::addColumn<bool>("truncated");
        QTest::addColumn<bool>("probable");

        // formats.md §2.12, verbatim
        QTest::newRow("T0 cached") << QStringLiteral(
            "RuntimeError: CUDA out of memory. Tried to allocate 9.80 GiB (GPU 0; 14.76 GiB total capacity; 9.94 GiB "
            "already allocated; 3.89 GiB free; 160.79 MiB cached).")
                                   << "cuda"
                                   << "T0"
                                   << "RuntimeError" << 0 << qint64(10522669875) << qint64(15848429322)
                                   << qint64(4176855695) << qint64(10672993731) << qint64(10672993731 + 168600535)
                                   << qint64(168600535) << none << "<=1.3" << false << false;
        QTest::newRow("T1 no hint") << QStringLiteral(
            "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 1.96 GiB total capacity; 1.24 GiB "
            "already allocated; 2.88 MiB free; 1.25 GiB reserved in total by PyTorch)")
                                    << "cuda"
                                    << "T1"
                                    << "RuntimeError" << 0 << qint64(20971520) << qint64(2104533975) << qint64(3019899)
                                    << qint64(1331439862) << qint64(1342177280) << qint64(1342177280 - 1331439862)
                                    << none << "1.4-1.9" << false << false;
        QTest::newRow("T1 hint RuntimeError")
            << QStringLiteral(
                   "RuntimeError: CUDA out of memory. Tried to allocate 5.74 GiB (GPU 0; 5.50 GiB total capacity; "
                   "588.00 MiB already allocated; 4.13 GiB free; 588.00 MiB reserved in total by PyTorch) If reserved "
                   "memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  See "
                   "documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF")
            << "cuda"
            << "T1"
            << "RuntimeError" << 0 << qint64(6163278070) << qint64(5905580032) << qint64(4434553733)
            << qint64(616562688) << qint64(616562688) << qint64(0) << none << "1.10-1.12" << false << false;
        QTest::newRow("T1 hint torch.cuda")
            << QStringLiteral(
                   "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 10.73 GiB (GPU 0; 8.00 GiB "
                   "total capacity; 17.20 GiB already allocated; 0 bytes free; 19.15 GiB reserved in total by PyTorch) "
                   "If reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.  "
                   "See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF")
            << "cuda"
            << "T1"
            << "torch.cuda.OutOfMemoryError" << 0 << qint64(11521249772) << qint64(8589934592) << qint64(0)
            << qint64(18468359373) << qint64(20562155930) << qint64(20562155930 - 18468359373) << none << "1.13-2.0"
            << false << false;
        QTest::newRow("T2 this process") << QStringLiteral(
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacty "
            "of 5.78 GiB of which 8.12 MiB is free. Including non-PyTorch memory, this process has 5.48 GiB memory in "
            "use. Of the allocated memory 5.10 GiB is allocated by PyTorch, and 297.78 MiB is reserved by PyTorch but "
            "unallocated. If reserved but unallocated memory is large try setting max_split_size_mb to avoid "
            "fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF")
                                         << "cuda"
                                         << "T2"
                                         << "torch.cuda.OutOfMemoryError" << 0 << qint64(20971520) << qint64(6206227743)
                                         << qint64(8514437) << qint64(5476083302) << qint64(5476083302 + 312244961)
                                         << qint64(312244961) << none << "2.1" << false << false;
        QTest::newRow("T2 two processes") << QStringLiteral(
            "CUDA out of memory. Tried to allocate 32.00 GiB. GPU 0 has a total capacty of 23.69 GiB of which 14.12 "
            "GiB is free. Process 2006998 has 256.00 MiB memory in use. Including non-PyTorch memory, this process has "
            "9.30 GiB memory in use. Of the allocated memory 9.00 GiB is allocated by PyTorch, and 982.50 KiB is "
            "reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
            "max_split_size_mb to avoid fragmentation.  See documentation for Memory Management and "
            "PYTORCH_CUDA_ALLOC_CONF") << "cuda"
                                          << "T2"
                                          << "" << 0 << qint64(34359738368) << qint64(25436943811)
                                          << qint64(15161234555) << qint64(9663676416) << qint64(9663676416 + 1006080)
                                          << qint64(1006080) << none << "2.1" << false << false;
        QTest::newRow("T3") << QStringLiteral(
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.00 MiB. GPU 0 has a total capacity "
            "of 23.65 GiB of which 11.06 MiB is free. Including non-PyTorch memory, this process has 23.60 GiB memory "
            "in use. Of the allocated memory 22.90 GiB is allocated by PyTorch, and 194.87 MiB is reserved by PyTorch "
            "but unallocated. If reserved but unallocated memory is large try setting "
            "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory "
            "Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")
                            << "cuda"
                            << "T3"
                            << "torch.cuda.OutOfMemoryError" << 0 << qint64(23068672) << qint64(25393994138)
                            << qint64(11597251) << qint64(24588687770) << qint64(24588687770 + 204336005)
                            << qint64(204336005) << none << "2.2-2.4" << false << false;
        QTest::newRow("T4") << QStringLiteral(
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 50.00 MiB. GPU 0 has a total capacity of "
            "9.64 GiB of which 22.12 MiB is free. Process 932170 has 6.88 GiB memory in use. Including non-PyTorch "
            "memory, this process has 2.60 GiB memory in use. Of the allocated memory 2.31 GiB is allocated by "
            "PyTorch, and 34.15 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is "
            "large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See "
            "documentation for Memory Management  "
            "(https://docs.pytorch.org/docs/stable/notes/"
            "cuda.html#optimizing-memory-usage-with-pytorch-cuda-alloc-conf)")
                            << "cuda"
                            << "T4"
                            << "torch.OutOfMemoryError" << 0 << qint64(52428800) << qint64(10350871183)
                            << qint64(23194501) << qint64(2480343613) << qint64(2480343613 + 35808870)
                            << qint64(35808870) << none << "2.8+" << false << false;
        QTest::newRow("T2 NVML garbage") << QStringLiteral(
            "CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacty of 23.99 GiB of which 7.20 GiB "
            "is free. Including non-PyTorch memory, this process has 17179869184.00 GiB memory in use. Of the "
            "allocated memory 14.51 GiB is allocated by PyTorch, and 685.18 MiB is reserved by PyTorch but "
            "unallocated. If reserved but unallocated memory is large try setting max_split_size_mb to avoid "
            "fragmentation.  See documentation for Memory Management and PYTORCH_CUDA_ALLOC_CONF")
                                         << "cuda"
                                         << "T2"
                                         << "" << 0 << qint64(20971520) << qint64(25759066358) << qint64(7730941133)
                                         << qint64(15579993866) << qint64(15579993866 + 718463304) << qint64(718463304)
                                         << none << "2.1" << false << false;
        QTest::newRow("HIP") << QStringLiteral(
            "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 978.00 MiB. GPU 0 has a total capacity of "
            "15.98 GiB of which 630.00 MiB is free. Of the allocated memory 0 bytes is allocated by PyTorch, and 0 "
            "bytes is reserved by PyTorch but unallocated. If reserved but unallocated memory is large try setting "
            "PYTORCH_HIP_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for Memory "
            "Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")
                             << "hip"
                             << "T3"
                             << "torch.OutOfMemoryError" << 0 << qint64(1025507328) << qint64(17158394348)
                             << qint64(660602880) << qint64(0) << qint64(0) << qint64(0) << none << "2.5-2.7" << false
                             << false;
        QTest::newRow("MPS GiB") << QStringLiteral(
            "MPS backend out of memory (MPS allocated: 7.80 GiB, other allocations: 6.94 GiB, max allowed: 18.13 GiB). "
            "Tried to allocate 3.46 GiB on private pool. Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper "
            "limit for memory allocations (may cause system failure).")
                                 << "mps"
                                 << "mps"
                                 << "" << none << qint64(3715146711) << none << none << qint64(8375186227) << none
                                 << none << qint64(19466939269) << "2.0+" << false << false;
        QTest::newRow("MPS GB") << QStringLiteral(
            "MPS backend out of memory (MPS allocated: 3.11 GB, other allocations: 5.42 GB, max allowed: 9.07 GB). "
            "Tried to allocate 720.00 MB on private pool. Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper "
            "limit for memory allocations (may cause system failure).")
                                << "mps"
                                << "mps"
                                << "" << none << qint64(754974720) << none << none << qint64(3339337073) << none << none
                                << qint64(9738838344) << "2.0+" << false << false;
        QTest::newRow("MPS 1.x") << QStringLiteral(
            "RuntimeError: MPS backend out of memory (currently allocated: 1.00 GB, max allowed: 2.00 GB). Tried to "
            "allocate 512.00 MB on shared pool. Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper limit for "
            "memory allocations (may cause system failure).")
                                 << "mps"
                                 << "mps"
                                 << "RuntimeError" << none << qint64(536870912) << none << none << qint64(1073741824)
                                 << none << none << qint64(2147483648) << "1.12-1.13" << false << false;
        QTest::newRow("cudaMallocAsync") << QStringLiteral(
            "torch.OutOfMemoryError: Allocation on device 0 would exceed allowed memory. (out of memory)\nCurrently "
            "allocated     : 9.43 GiB\nRequested               : 640.00 MiB\nDevice limit            : 11.59 GiB\nFree "
            "(according to CUDA): 7.12 MiB\nPyTorch limit (set by user-supplied memory fraction)\n                     "
            "   : 17179869184.00 GiB") << "cuda"
                                         << "cudaMallocAsync"
                                         << "torch.OutOfMemoryError" << 0 << qint64(671088640) << qint64(12444667740)
                                         << qint64(7465861) << qint64(10125385400) << none << none << none << "2.5+"
                                         << false << false;
        QTest::newRow("XLA bytes") << QStringLiteral(
            "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 33762398024 bytes.")
                                   << "xla"
                                   << "xla"
                                   << "" << none << qint64(33762398024) << none << none << none << none << none << none
                                   << "" << false << false;
        QTest::newRow("XLA rematerialization")
            << QStringLiteral("2024-05-01 10:00:00.000 W external/xla/xla/service/hlo_rematerialization.cc:2946] Can't "
                              "reduce memory use below 7.20GiB (7730941132 bytes) by rematerialization; only reduced "
                              "to 18.05GiB (19378530112 bytes)\njaxlib.xla_extension.XlaRuntimeError: "
                              "RESOURCE_EXHAUSTED: Out of memory while trying to allocate 16.00GiB.")
            << "xla"
            << "xla"
            << "jaxlib.xla_extension.XlaRuntimeError" << none << qint64(17179869184) << none << none << none << none
            << none << qint64(7730941133) << "" << false << false;
        QTest::newRow("TF") << QStringLiteral(
            "ResourceExhaustedError: OOM when allocating tensor with shape[32,512,512] and type float on "
            "/job:localhost/replica:0/task:0/device:GPU:0 by allocator GPU_0_bfc")
                            << "tf"
                            << "tf"
                            << "ResourceExhaustedError" << 0 << qint64(32 * 512 * 512 * 4) << none << none << none
                            << none << none << none << "" << false << false;
        QTest::newRow("XPU allowed") << QStringLiteral(
            "torch.OutOfMemoryError: XPU out of memory. Tried to allocate 8.11 GiB. GPU 0 has a total capacity of "
            "16.54 GiB of which 16.54 GiB is free. 8.27 GiB allowed; Of the allocated memory 0 bytes is allocated by "
            "PyTorch, and 0 bytes is reserved by PyTorch but unallocated. Please use `empty_cache` to release all "
            "unoccupied cached memory.")
                                     << "xpu"
                                     << "xpu"
                                     << "torch.OutOfMemoryError" << 0 << qint64(8708046193) << qint64(17759689769)
                                     << qint64(17759689769) << qint64(0) << qint64(0) << qint64(0) << qint64(8879844884)
                                     << "2.5+" << false << false;
        QTest::newRow("DPCPP") << QStringLiteral(
            "RuntimeError: DPCPP out of memory. Tried to allocate 2.00 GiB (GPU 0; 15.75 GiB total capacity; 12.00 GiB "
            "already allocated; 13.00 GiB reserved in total by PyTorch)")
                               << "xpu"
                               << "dpcpp"
                               << "RuntimeError" << 0 << qint64(2147483648) << qint64(16911433728) << none
                               << qint64(12884901888) << qint64(13958643712) << qint64(1073741824) << none << ""
                               << false << false;
        QTest::newRow("NPU") << QStringLiteral(
            "RuntimeError: NPU out of memory. Tried to allocate 1.00 GiB (NPU 3; 30.00 GiB total capacity; 28.50 GiB "
            "already allocated; 28.60 GiB current active; 500.00 MiB free; 29.00 GiB reserved in total by PyTorch) If "
            "reserved memory is >> allocated memory try setting max_split_size_mb to avoid fragmentation.")
                             << "npu"
                             << "npu"
                             << "RuntimeError" << 3 << qint64(1073741824) << qint64(32212254720) << qint64(524288000)
                             << qint64(30601641984) << qint64(31138512896) << qint64(536870912) << none << "" << false
                             << false;
        QTest::newRow("MUSA") << QStringLiteral(
            "RuntimeError: MUSA out of memory. Tried to allocate 256.00 MiB (GPU 0; 15.00 GiB total capacity; 14.00 "
            "GiB already allocated; 100.00 MiB free; 14.50 GiB reserved in total by PyTorch)")
                              << "musa"
                              << "musa"
                              << "RuntimeError" << 0 << qint64(268435456) << qint64(16106127360) << qint64(104857600)
                              << qint64(15032385536) << qint64(15569256448) << qint64(536870912) << none << "" << false
                              << false;
        QTest::newRow("private pools and allowed")
            << QStringLiteral(
                   "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total capacity "
                   "of 79.15 GiB of which 1.00 GiB is free. Including non-PyTorch memory, this process has 78.00 GiB "
                   "memory in use. 40.00 GiB allowed; Of the allocated memory 70.00 GiB is allocated by PyTorch, with "
                   "10.00 GiB allocated in private pools (e.g., CUDA Graphs), and 6.00 GiB is reserved by PyTorch but "
                   "unallocated. If reserved but unallocated memory is large try setting "
                   "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.  See documentation for "
                   "Memory Management  (https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)")
            << "cuda"
            << "T3"
            << "torch.OutOfMemoryError" << 1 << qint64(2147483648) << qint64(84986665370) << qint64(1073741824)
            << qint64(75161927680) << qint64(81604378624) << qint64(6442450944) << qint64(42949672960) << "2.5-2.7"
            << false << false;
        QTest::newRow("cut after the free memory")
            << QStringLiteral(
                   "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity "
                   "of 79.15 GiB of which 1.00 GiB is free. Of the allocated memory 70.00 GiB is allo")
            << "cuda"
            << "T3"
            << "torch.OutOfMemoryError" << 0 << qint64(2147483648) << qint64(84986665370) << qint64(1073741824)
            << qint64(75161927680) << none << none << none << "2.5+" << true << false;
        QTest::newRow("cuBLAS") << QStringLiteral(
            "RuntimeError: CUDA error: CUBLAS_STATUS_ALLOC_FAILED when calling `cublasCreate(handle)`")
                                << "cublas"
                                << "cublas"
                                << "RuntimeError" << none << none << none << none << none << none << none << none << ""
                                << false << true;
        QTest::newRow("cuDNN") << QStringLiteral("RuntimeError: cuDNN error: CUDNN_STATUS_NOT_SUPPORTED. This error "
                                                 "may appear if you passed in a non-contiguous input.")
                               << "cudnn"
                               << "cudnn"
                               << "RuntimeError" << none << none << none << none << none << none << none << none << ""
                               << false << true;
        QTest::newRow("CUDA runtime") << QStringLiteral(
            "torch.AcceleratorError: CUDA error: out of memory\nCUDA kernel errors might be asynchronously reported at "
            "some other API call, so the stacktrace below might be incorrect.\nFor debugging consider passing "
            "CUDA_LAUNCH_BLOCKING=1\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.")
                                      << "cuda_runtime"
                                      << "cuda_runtime"
                                      << "torch.AcceleratorError" << none << none << none << none << none << none
                                      << none << none << "2.0+" << false << true;
        QTest::newRow("CUDA driver") << QStringLiteral("RuntimeError: CUDA driver error: out of memory")
                                     << "cuda_runtime"
                                     << "cuda_driver"
                                     << "RuntimeError" << none << none << none << none << none << none << none << none
                                     << "" << false << true;
        QTest::newRow("CPU allocator") << QStringLiteral(
            "RuntimeError: [enforce fail at alloc_cpu.cpp:73] . DefaultCPUAllocator: can't allocate memory: you tried "
            "to allocate 34359738368 bytes. Error code 12 (Cannot allocate memory)")
                                       << "cpu"
                                       << "cpu"
                                       << "" << none << qint64(34359738368) << none << none << none << none << none
                                       << none << "" << false << true;
        QTest::newRow("CPU allocator Windows") << QStringLiteral(
            "RuntimeError: DefaultCPUAllocator: not enough memory: you tried to allocate 1073741824 bytes.")
                                               << "cpu"
                                               << "cpu"
                                               << "RuntimeError" << none << qint64(1073741824) << none << none << none
                                               << none << none << none << "" << false << true;
    }

    void templates()
    {
        QFETCH(QString, text);
        const TextFindings findings = parseText(text.toStdString());
        QCOMPARE(findings.oomMessages.size(), size_t(1));
        const OomMessage& message = findings.oomMessages.front();
        QTEST(QString::fromStdString(backendText(message.backend)), "backend");
        QTEST(QString::fromStdString(oomTemplateText(message.templateId)), "templateId");
        QTEST(QString::fromStdString(message.exception), "exception");
        QTEST(message.device.value_or(-1), "device");
        test::compareOomBytes(message);
        if (QTest::currentTestFailed())
            return;
        QTEST(QString::fromStdString(message.torchVersionHint), "version");
        QTEST(message.truncated, "truncated");
        QTEST(message.probable, "probable");
        QCOMPARE(
            message.sourceLine, size_t(1) + (QTest::currentDataTag() == QByteArray("XLA rematerialization") ? 1 : 0));
        QVERIFY(!message.text.empty());
        QCOMPARE(classifyText(text.toStdString(), findings), InputKind::OomMessage);
    }

    void processes()
    {
        const auto findings = parseText(
            "CUDA out of memory. Tried to allocate 32.00 GiB. GPU 0 has a total capacty of 23.69 GiB of which "
            "14.12 GiB is free. Process 2006998 has 256.00 MiB memory in use. Including non-PyTorch memory, "
            "this process has 9.30 GiB memory in use. Of the allocated memory 9.00 GiB is allocated by "
            "PyTorch, and 982.50 KiB is reserved by PyTorch but unallocated.");
        QCOMPARE(findings.oomMessages.size(), size_t(1));
        const auto& processes = findings.oomMessages[0].processes;
        QCOMPARE(processes.size(), size_t(2));
        QCOMPARE(processes[0].pid.value_or(0), int64_t(2006998));
        QCOMPARE(value(processes[0].bytes), qint64(268435456));
        QVERIFY(!processes[0].self);
        QVERIFY(processes[1].self);
        QVERIFY(!processes[1].pid);
        QCOMPARE(value(processes[1].bytes), qint64(9985798963));
    }

    void garbageProcessHasNote()
    {
        const auto findings = parseText(
            "CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacty of 23.99 GiB of which "
            "7.20 GiB is free. Including non-PyTorch memory, this process has 17179869184.00 GiB memory in "
            "use. Of the allocated memory 14.51 GiB is allocated by PyTorch, and 685.18 MiB is reserved by "
            "PyTorch but unallocated.");
        QCOMPARE(findings.oomMessages.size(), size_t(1));
        const OomMessage& message = findings.oomMessages[0];
        QCOMPARE(message.processes.size(), size_t(1));
        QVERIFY(message.processes[0].self);
        QVERIFY(!message.processes[0].bytes);
        QVERIFY(!message.notes.empty());
    }

    void rewrappedMessage()
    {
        // A terminal or a chat box broke the message in arbitrary places.
        const std::string text
            = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 22.00 MiB. GPU 0 has a total\n"
              "   capacity of 23.65 GiB of which 11.06 MiB is free. Including non-PyTorch memory, this\n"
              "process has 23.60 GiB memory in use. Of the allocated memory 22.90 GiB is allocated by\n"
              "PyTorch, and 194.87 MiB is reserved by PyTorch but unallocated.\n"
              "If reserved but unallocated memory is large try setting "
              "PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid\n"
              "fragmentation.  See documentation for Memory Management  "
              "(https://pytorch.org/docs/stable/notes/cuda.html#environment-variables)\n"
              "Epoch 3: loss 0.42\n";
        const auto findings = parseText(text);
        QCOMPARE(findings.oomMessages.size(), size_t(1));
        const OomMessage& message = findings.oomMessages[0];
        QCOMPARE(message.templateId, OomTemplate::T3);
        QCOMPARE(value(message.freeBytes), qint64(11597251));
        QCOMPARE(value(message.reservedUnallocatedBytes), qint64(204336005));
        QCOMPARE(message.processes.size(), size_t(1));
        QVERIFY(!message.truncated);
        QVERIFY(message.text.find("Epoch") == std::string::npos);
        QVERIFY(message.text.find("\n") == std::string::npos);
    }

    void cppTailIsStripped()
    {
        const std::string text
            = "RuntimeError: CUDA out of memory. Tried to allocate 20.00 MiB (GPU 0; 1.96 GiB total capacity; 1.24 GiB "
              "already allocated; 2.88 MiB free; 1.25 GiB reserved in total by PyTorch)\n"
              "Exception raised from malloc at ../c10/cuda/CUDACachingAllocator.cpp:513 (most recent call first):\n"
              "frame #0: c10::Error::Error(c10::SourceLocation, std::string) + 0x42 (0x7f0 in libc10.so)\n"
              "frame #1: <unknown function> + 0x1c9b1 (0x7f1 in libc10_cuda.so)\n";
        const auto findings = parseText(text);
        QCOMPARE(findings.oomMessages.size(), size_t(1));
        QVERIFY(findings.oomMessages[0].text.find("Exception raised") == std::string::npos);
        QVERIFY(findings.tracebacks.empty());
        QVERIFY(!findings.oomMessages[0].truncated);
    }

    void prefixedLines()
    {
        const std::string text
            = "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 50.00 MiB. GPU 0 has a total "
              "capacity of 9.64 GiB of which 22.12 MiB is free. Of the allocated memory 2.31 GiB is allocated by "
              "PyTorch, and 34.15 MiB is reserved by PyTorch but unallocated.\n"
              "(VllmWorker rank=1 pid=254) torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. "
              "GPU 1 has a total capacity of 9.64 GiB of which 10.00 MiB is free. Of the allocated memory 3.00 GiB is "
              "allocated by PyTorch, and 1.00 GiB is reserved by PyTorch but unallocated.\n";
        const auto findings = parseText(text);
        QCOMPARE(findings.oomMessages.size(), size_t(2));
        QCOMPARE(findings.oomMessages[0].device.value_or(-1), 0);
        QCOMPARE(findings.oomMessages[1].device.value_or(-1), 1);
        QCOMPARE(findings.oomMessages[1].sourceLine, size_t(2));
        QCOMPARE(findings.oomMessages[0].exception, std::string("torch.OutOfMemoryError"));
        QVERIFY(findings.oomMessages[0].text.rfind("torch.OutOfMemoryError", 0) == 0);
    }

    void repeatedMessageIsKeptOnce()
    {
        const std::string message = "HIP out of memory. Tried to allocate 124.00 MiB. GPU 0 has a total capacity of "
                                    "19.94 GiB of which 554.47 MiB is free. Of the allocated memory 15.87 GiB is "
                                    "allocated by PyTorch, and 165.29 MiB is reserved by PyTorch but unallocated.";
        const auto findings = parseText(
            "torch.OutOfMemoryError: " + message + "\n\nERROR | 2024-08-21 | trainer:121 - " + message + "\n");
        QCOMPARE(findings.oomMessages.size(), size_t(1));
        QCOMPARE(findings.oomMessages[0].exception, std::string("torch.OutOfMemoryError"));
        const auto& notes = findings.oomMessages[0].notes;
        QVERIFY(std::any_of(notes.begin(), notes.end(),
            [](const std::string& note) { return note.find("appears 2 times") != std::string::npos; }));
    }

    void allocationHintIsNotASetting()
    {
        const auto findings
            = parseText("CUDA out of memory. Tried to allocate 22.00 MiB. GPU 0 has a total capacity of 23.65 GiB of "
                        "which 11.06 MiB is free. Of the allocated memory 22.90 GiB is allocated by PyTorch, and "
                        "194.87 MiB is reserved by PyTorch but unallocated. If reserved but unallocated memory is "
                        "large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid fragmentation.");
        QCOMPARE(findings.oomMessages.size(), size_t(1));
        QVERIFY(findings.allocConfs.empty());
    }
};

QTEST_GUILESS_MAIN(TestOomMessage)
#include "tst_oommessage.moc"
