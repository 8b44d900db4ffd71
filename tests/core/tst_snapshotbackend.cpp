#include "common/snapshotbytes.h"
#include "common/testutil.h"
#include "core/caseanalysis.h"
#include "core/jsonexport.h"
#include "core/report/htmlreport.h"
#include "core/snapshotbackend.h"
#include "core/textreport.h"
#include "parsers/inputloader.h"

#include <QTest>

#include <nlohmann/json.hpp>

using namespace oomlens;

// Snapshots other PyTorch backends write in CUDA's format are named as such: told from their frames
// (tests/data/snapshots/npu_segments.pickle: torch_npu's package; xpu_traces.pickle: XPU's C++
// caching allocator) or from the OOM message beside them, and every output says the backend and
// gives that backend's recording calls, never torch.cuda's.
namespace {

QByteArray fixture(const char* name)
{
    return test::readFile(test::testDataDir() + QStringLiteral("/snapshots/") + QLatin1String(name));
}

std::shared_ptr<Snapshot> snapshotWithFrame(std::string_view filename, std::string_view name)
{
    auto strings = std::make_shared<StringTable>();
    auto frames = std::make_shared<FrameTable>();
    frames->intern(Frame { strings->intern(filename), strings->intern(name), 1 });
    auto snapshot = std::make_shared<Snapshot>();
    snapshot->strings = strings;
    snapshot->frames = frames;
    return snapshot;
}

struct Analyzed
{
    Case input;
    CaseAnalysis analysis;
};

Analyzed analyze(const char* fixtureName, const std::string& message = {})
{
    Analyzed result;
    const QByteArray bytes = fixture(fixtureName);
    addInput(result.input, fixtureName, test::view(bytes));
    if (!message.empty())
        addInput(result.input, "(pasted)", message);
    result.analysis = analyzeCase(result.input);
    return result;
}

const std::string xpuMessage
    = "torch.OutOfMemoryError: XPU out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of "
      "15.11 GiB of which 1.02 GiB is free. Of the allocated memory 12.50 GiB is allocated by PyTorch, and 1.20 GiB "
      "is reserved by PyTorch but unallocated. Please use `empty_cache` to release all unoccupied cached memory.\n";

} // namespace

class TestSnapshotBackend : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void framesTellTheBackend()
    {
        const auto npu = test::readSnapshotBytes(fixture("npu_segments.pickle"));
        const auto xpu = test::readSnapshotBytes(fixture("xpu_traces.pickle"));
        const auto cuda = test::readSnapshotBytes(fixture("newest_p4.pickle"));
        QVERIFY(npu && xpu && cuda);
        QCOMPARE(snapshotBackendFromFrames(*npu), SnapshotBackend::Npu);
        QCOMPARE(snapshotBackendFromFrames(*xpu), SnapshotBackend::Xpu);
        QCOMPARE(snapshotBackendFromFrames(*cuda), SnapshotBackend::Cuda);

        QCOMPARE(snapshotBackendFromFrames(*snapshotWithFrame(
                     "/opt/venv/lib/python3.11/site-packages/torch_neuronx/xla_impl/ops.py", "forward")),
            SnapshotBackend::Neuron);
        QCOMPARE(snapshotBackendFromFrames(*snapshotWithFrame("/site-packages/torch/xpu/memory.py", "empty_cache")),
            SnapshotBackend::Xpu);
        QCOMPARE(snapshotBackendFromFrames(
                     *snapshotWithFrame("??", "c10_npu::NPUCachingAllocator::malloc(int, unsigned long, void*)")),
            SnapshotBackend::Npu);
        // A directory that only contains the name is someone's own code.
        QCOMPARE(snapshotBackendFromFrames(*snapshotWithFrame("/home/me/my_torch_npu_tools/run.py", "main")),
            SnapshotBackend::Cuda);
        QCOMPARE(snapshotBackendFromFrames(*snapshotWithFrame("/home/me/mytorch/xpu_like.py", "main")),
            SnapshotBackend::Cuda);
    }

    void namesAndModules()
    {
        QCOMPARE(snapshotBackendName(SnapshotBackend::Npu), std::string_view("npu"));
        QCOMPARE(snapshotBackendLabel(SnapshotBackend::Xpu), std::string_view("Intel XPU"));
        QCOMPARE(snapshotMemoryModule(SnapshotBackend::Npu), std::string_view("torch_npu.npu.memory"));
        QCOMPARE(snapshotMemoryModule(SnapshotBackend::Cuda), std::string_view("torch.cuda.memory"));
    }

    // Frames that name no backend, beside a message that does: the message's device wrote it.
    void messageTellsTheBackend()
    {
        const Analyzed plain = analyze("annotated_tensors.pickle");
        QCOMPARE(snapshotBackendOf(plain.input, 0), SnapshotBackend::Cuda);
        const Analyzed xpu = analyze("annotated_tensors.pickle", xpuMessage);
        QCOMPARE(snapshotBackendOf(xpu.input, 0), SnapshotBackend::Xpu);
        const auto json = caseToJson(xpu.input, xpu.analysis);
        QCOMPARE(json.at("snapshots").at(0).at("backend").get<std::string>(), std::string("xpu"));
        QCOMPARE(caseToJson(plain.input, plain.analysis).at("snapshots").at(0).at("backend").get<std::string>(),
            std::string("cuda"));
    }

    // Every output of an NPU snapshot without history: the backend named, torch_npu's calls advised,
    // no torch.cuda anywhere.
    void outputsNameTheBackend()
    {
        const Analyzed npu = analyze("npu_segments.pickle");
        QVERIFY(!npu.input.inputs.at(0).error);
        const std::string text = caseToText(npu.input, npu.analysis);
        QVERIFY2(text.find("Snapshot npu_segments.pickle, Ascend NPU device 0") != std::string::npos, text.c_str());
        QVERIFY2(text.find("torch_npu.npu.memory._record_memory_history(max_entries=100000)") != std::string::npos,
            text.c_str());
        QVERIFY2(text.find("torch.cuda") == std::string::npos, text.c_str());

        const std::string html = report::buildHtmlReport(npu.input, npu.analysis);
        QVERIFY(html.find("Ascend NPU device 0") != std::string::npos);
        QVERIFY(html.find("torch_npu.npu.memory._record_memory_history") != std::string::npos);
        QVERIFY(html.find("torch.cuda.memory") == std::string::npos);

        const auto json = caseToJson(npu.input, npu.analysis);
        QCOMPARE(json.at("snapshots").at(0).at("backend").get<std::string>(), std::string("npu"));

        // The CUDA wording stays for a CUDA snapshot.
        const Analyzed cuda = analyze("era_segment_list.pickle");
        const std::string cudaText = caseToText(cuda.input, cuda.analysis);
        QVERIFY2(cudaText.find("torch.cuda.memory._record_memory_history") != std::string::npos, cudaText.c_str());
        QVERIFY(cudaText.find("Ascend") == std::string::npos);
    }
};

QTEST_MAIN(TestSnapshotBackend)
#include "tst_snapshotbackend.moc"
