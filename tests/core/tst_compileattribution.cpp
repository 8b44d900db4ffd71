// torch.compile attribution: a compiled region's allocations are named after the model line that
// produced the FX node (past Inductor's generated code), and carry their compile_context.
#include "common/analysisfixtures.h"
#include "common/testutil.h"
#include "core/analysis/compileattribution.h"
#include "core/analysis/generatedcodeframes.h"
#include "core/analysis/userframe.h"
#include "core/caseanalysis.h"
#include "core/jsonexport.h"
#include "parsers/inputloader.h"
#include "parsers/snapshotreader.h"

#include <QTest>

#include <algorithm>

using namespace oomlens;

namespace {

// One allocation of a compiled region (generated code first, then the model lines PyTorch 2.11
// puts after it, then Inductor's runtime), one eager allocation beside it.
const char* compiled = R"(
alloc c 8MiB fwd ctx="Torch-Compiled Region: 0/0" stack=/tmp/torchinductor_u/jc/cjcrqdmhagpkj2r7lluc5u5af3nvtnjlsz7kdj76tfskfulfr2uo.py:call:1202;model.py:forward:52;/venv/site-packages/torch/_inductor/utils.py:run:3401;train.py:main:9
alloc e 4MiB fwd stack=model.py:head:80;train.py:main:9
)";

// A snapshot whose frames carry the fields augment_with_fx_traces adds (PyTorch main): the node
// and the original source trace, whose last File line is the model's.
const char* fxScript = R"(
import pickle, sys
trace = 'File "/src/train.py", line 9, in main\n    out = model(x)\nFile "/src/model.py", line 52, in forward\n    a = self.net1(x)\n'
frame = {"filename": "<eval_with_key>.3", "line": 7, "name": "forward", "fx_node_op": "call_function",
         "fx_node_name": "addmm", "fx_node_target": "aten.addmm.default", "fx_original_trace": trace}
entry = {"action": "alloc", "addr": 4096, "size": 512, "stream": 0, "time_us": 1,
         "compile_context": "Torch-Compiled Region: 1/0", "frames": [frame]}
eager = {"action": "alloc", "addr": 8192, "size": 512, "stream": 0, "time_us": 2,
         "compile_context": "N/A", "frames": [{"filename": "/src/model.py", "line": 80, "name": "head"}]}
snap = {"segments": [], "device_traces": [[entry, eager]]}
sys.stdout.buffer.write(pickle.dumps(snap, protocol=4))
)";

std::string userSite(const Snapshot& snapshot, StackId stack)
{
    const auto frame = userFrame(*snapshot.frames, *snapshot.strings, stack);
    return frame ? frameSiteText(snapshot, *frame) : std::string();
}

} // namespace

class TestCompileAttribution : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void generatedCodeIsNotTheUserFrame()
    {
        QVERIFY(isCompilerGeneratedFile(
            "/tmp/torchinductor_root/jc/cjcrqdmhagpkj2r7lluc5u5af3nvtnjlsz7kdj76tfskfulfr2uo.py"));
        QVERIFY(isCompilerGeneratedFile("/cache/jc/cjcrqdmhagpkj2r7lluc5u5af3nvtnjlsz7kdj76tfskfulfr2uo.py"));
        QVERIFY(!isCompilerGeneratedFile("/home/me/model.py"));
        QVERIFY(!isCompilerGeneratedFile("/home/me/cache.py"));
    }

    void compiledAllocationNamedAfterTheModelLine()
    {
        const SnapshotAnalysis a = test::analyzeTrace(compiled);
        const DeviceAnalysis& device = *a.primary();
        QCOMPARE(device.allocations.size(), size_t(2));
        const Allocation& c = device.allocations[0];
        QCOMPARE(userSite(*a.snapshot, c.stack), std::string("model.py:52 forward"));
        const CompileAttribution attribution = compileAttribution(*a.snapshot, device, c);
        QVERIFY(attribution.compiled());
        QCOMPARE(attribution.context, std::string_view("Torch-Compiled Region: 0/0"));
        QVERIFY(attribution.generatedFrame);
        QVERIFY(!compileAttribution(*a.snapshot, device, device.allocations[1]).compiled());

        const auto regions = compiledRegions(*a.snapshot, device);
        QCOMPARE(regions.size(), size_t(1));
        QCOMPARE(regions[0].allocations, size_t(1));
        QCOMPARE(regions[0].requestedBytes, uint64_t(8) << 20);
        QCOMPARE(regions[0].topSites.at(0).first, std::string("model.py:52 forward"));
    }

    // The frames are decided once per snapshot (GeneratedCodeFrames): the same answers as
    // deciding each allocation's stack from its file names, and none at all without generated code.
    void generatedFramesDecidedOnceAgreeWithEachStack()
    {
        const SnapshotAnalysis a = test::analyzeTrace(compiled);
        const Snapshot& snapshot = *a.snapshot;
        const DeviceAnalysis& device = *a.primary();
        const GeneratedCodeFrames generated(*snapshot.frames, *snapshot.strings);
        QVERIFY(generated.any());
        size_t generatedFrames = 0;
        for (uint32_t id = 0; id < snapshot.frames->frameCount(); ++id) {
            const bool expected
                = isCompilerGeneratedFile(snapshot.strings->get(snapshot.frames->frame(FrameId(id)).filename));
            QCOMPARE(generated.isGenerated(FrameId(id)), expected);
            generatedFrames += expected;
        }
        QCOMPARE(generatedFrames, size_t(1));
        for (const Allocation& allocation : device.allocations) {
            const CompileAttribution once = compileAttribution(snapshot, device, allocation, generated);
            const CompileAttribution each = compileAttribution(snapshot, device, allocation);
            QCOMPARE(once.context, each.context);
            QCOMPARE(once.generatedFrame.has_value(), each.generatedFrame.has_value());
            if (once.generatedFrame)
                QCOMPARE(once.generatedFrame->value, each.generatedFrame->value);
        }

        const SnapshotAnalysis eager = test::analyzeTrace("alloc e 4MiB fwd stack=model.py:head:80;train.py:main:9\n");
        const GeneratedCodeFrames none(*eager.snapshot->frames, *eager.snapshot->strings);
        QVERIFY(!none.any());
        QVERIFY(!none.innermost(eager.primary()->allocations.at(0).stack));
        QVERIFY(compiledRegions(*eager.snapshot, *eager.primary()).empty());
    }

    void fxOriginalTraceBecomesTheModelLine()
    {
        const QByteArray bytes = test::runPython(QString::fromUtf8(fxScript));
        QVERIFY(!bytes.isEmpty());
        const auto result = readSnapshot(std::string_view(bytes.constData(), static_cast<size_t>(bytes.size())));
        QVERIFY2(result.snapshot, result.error.c_str());
        const Snapshot& snapshot = *result.snapshot;
        const auto& events = snapshot.traces.at(0).events;
        QCOMPARE(events.size(), size_t(2));
        QCOMPARE(userSite(snapshot, events[0].stack), std::string("/src/model.py:52 forward [fx addmm]"));
        QCOMPARE(snapshot.strings->get(events[0].compileContext), std::string_view("Torch-Compiled Region: 1/0"));
        QVERIFY(!events[1].compileContext.isValid()); // "N/A": outside compiled regions
    }

    // The real H100 run (PyTorch 2.11, compile_context=True, augment_with_fx_traces=True): no
    // fx_* keys are left in the frames, the model lines follow Inductor's generated `call`.
    void realCompiledRun()
    {
        Case input;
        addFile(input, QString(test::testDataDir() + QStringLiteral("/real/extra/compiled.pickle.gz")).toStdString());
        const CaseAnalysis analysis = analyzeCase(input);
        const SnapshotAnalysis& snapshot = analysis.snapshots.at(0);
        const DeviceAnalysis& device = *snapshot.primary();
        size_t withContext = 0;
        for (const TraceEvent& e : snapshot.snapshot->trace(device.device)->events)
            withContext += e.compileContext.isValid();
        QCOMPARE(withContext, size_t(343)); // the 2902 "N/A" entries are dropped

        const auto regions = compiledRegions(*snapshot.snapshot, device);
        for (const CompiledRegion& r : regions)
            qInfo("region '%s': %zu allocations, %llu bytes, top %s", r.context.c_str(), r.allocations,
                static_cast<unsigned long long>(r.requestedBytes),
                r.topSites.empty() ? "" : r.topSites[0].first.c_str());
        // The forward ran in the recorded region; the compiled backward's allocations come from
        // generated code too, but autograd runs them outside it ("N/A"): a region without a name.
        QCOMPARE(regions.size(), size_t(2));
        const auto named = std::find_if(regions.begin(), regions.end(),
            [](const CompiledRegion& r) { return r.context == "Torch-Compiled Region: 0/0"; });
        QVERIFY(named != regions.end());
        QCOMPARE(named->allocations, size_t(234));
        for (const CompiledRegion& region : regions) {
            for (const auto& [site, bytes] : region.topSites) {
                QVERIFY2(site.find("torchinductor_") == std::string::npos, site.c_str());
                QVERIFY2(site.find("make_cases.py") != std::string::npos, site.c_str());
            }
        }
        const auto document = caseToJson(input, analysis);
        bool found = false;
        for (const auto& json : document.at("compiled_regions").at(0)) {
            if (json.at("compile_context").is_null())
                continue;
            found = true;
            QCOMPARE(json.at("compile_context").get<std::string>(), std::string("Torch-Compiled Region: 0/0"));
            QCOMPARE(json.at("allocations").get<size_t>(), size_t(234));
            QVERIFY(json.at("sites").at(0).at("site").get<std::string>().find("make_cases.py") != std::string::npos);
        }
        QVERIFY(found);
    }
};

QTEST_GUILESS_MAIN(TestCompileAttribution)
#include "tst_compileattribution.moc"
