#include "common/analysisfixtures.h"
#include "common/tracediagnosis.h"
#include "core/analysis/snapshotanalysis.h"
#include "core/diagnosis/diagnosistext.h"
#include "core/diagnosis/snapshotdiagnosis.h"
#include "core/units.h"

#include <QTest>

#include <algorithm>

using namespace oomlens;

// One small trace per reasoning gap of issue 10: each names the cause where the rules used to name
// a symptom or claim more than the inputs show. Sizes are picked so the arithmetic can be done by
// hand; the comments give it.
namespace {

// torch/optim/adam.py's multi-tensor update, as a foreach AdamW records it.
constexpr const char* foreachStack = "stack=torch/optim/adam.py:_multi_tensor_adam:720;torch/optim/adam.py:adam:300;"
                                     "torch/optim/adam.py:step:230;torch/optim/optimizer.py:wrapper:493;"
                                     "train.py:train_step:44;train.py:main:90";

// A line of model code under the module call, as stacks="python" records a forward allocation.
std::string modelSite(int line)
{
    return "stack=model.py:forward:" + std::to_string(line)
        + ";torch/nn/modules/module.py:_call_impl:1750;train.py:train_step:40;train.py:main:90";
}

// One training step: three activations of `activation` from model.py lines 10, 20, 30, a 1 MiB
// loss, then `afterForward`, backward freeing the activations (with their allocation's frames:
// `context alloc`), and an in-place update (SGD) that allocates nothing.
std::string trainingStep(const std::string& n, const std::string& activation, const std::string& afterForward = {})
{
    std::string step;
    for (int layer = 1; layer <= 3; ++layer)
        step += "alloc a" + n + "_" + std::to_string(layer) + " " + activation + " " + modelSite(10 * layer) + "\n";
    step += "alloc l" + n + " 1MiB loss\n" + afterForward + "alloc t" + n + " 32MiB bwd\nfree t" + n + " bwd\n";
    for (int layer = 3; layer >= 1; --layer)
        step += "free a" + n + "_" + std::to_string(layer) + " bwd\n";
    step += "free l" + n + " bwd\n";
    return step;
}

} // namespace

class TestDiagCauses : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    // Weights 2 + gradients 2 + Adam moments 4 = 8 GiB of state; the foreach update then holds two
    // 1.5 GiB intermediates and asks for a third. Usable = 11.5 reserved + 0.1 free = 11.6 GiB:
    // the state fits with 3.6 GiB to spare, the step's temporaries do not.
    void foreachTemporariesAreNotOptimizerState()
    {
        const std::string trace = std::string("before p 2GiB load\n"
                                              "alloc a 512MiB fwd\n"
                                              "free a bwd\n"
                                              "alloc g 2GiB grad\n"
                                              "alloc m1 2GiB optinit\n"
                                              "alloc m2 2GiB optinit\n"
                                              "alloc t1 1.5GiB ")
            + foreachStack + "\nalloc t2 1.5GiB " + foreachStack + "\noom 1.5GiB free=100MiB " + foreachStack + "\n";
        const SnapshotAnalysis analysis = test::analyzeTrace(trace);
        const DeviceAnalysis* device = analysis.primary();
        QVERIFY(device && !device->ooms.empty());
        const auto& live = device->ooms.back().liveByCategory;
        QCOMPARE(live[size_t(Category::OptimizerState)], 4 * GiB);
        QCOMPARE(live[size_t(Category::Temporaries)], 3 * GiB);

        const auto diagnoses = test::diagnoseTrace(trace);
        QVERIFY(!diagnoses.empty());
        QCOMPARE(diagnoses.front().id, DiagnosisId::OptimizerStep2);
        QVERIFY2(!test::findDiagnosis(diagnoses, DiagnosisId::Capacity), test::diagnosisNames(diagnoses).c_str());
        const Diagnosis& d = diagnoses.front();
        QVERIFY(d.confidence >= 0.8);
        QVERIFY(test::hasEvidence(d, "3.00 GiB of the step's own intermediates"));
        QVERIFY(test::hasEvidence(d, "the state training keeps fits"));
        QCOMPARE(d.fixes.front().id(), std::string("optimizer_foreach"));
        QCOMPARE(d.fixes.front().projectedSavingBytes, std::optional<int64_t>(3 * GiB));
    }

    // A 6 GiB model made by Module.half() fails in its first backward: activations 4 + gradients
    // so far 1 + weights 6 = 11 GiB live, usable 11 + 0.3 = 11.3 GiB. Training would keep
    // 6 weights + 6 gradients + 24 fp32 moments + 12 fp32 master weights = 48 GiB.
    void firstBackwardOfAModelThatCannotTrain()
    {
        const std::string trace = "before p 6GiB stack=torch/nn/modules/module.py:_apply:900;"
                                  "torch/nn/modules/module.py:half:1100;train.py:main:80\n"
                                  "alloc a1 2GiB fwd\n"
                                  "alloc a2 2GiB fwd\n"
                                  "alloc g1 1GiB grad\n"
                                  "oom 1GiB free=300MiB bwd\n";
        const auto diagnoses = test::diagnoseTrace(trace);
        QVERIFY(!diagnoses.empty());
        QCOMPARE(diagnoses.front().id, DiagnosisId::Capacity);
        const Diagnosis& capacity = diagnoses.front();
        QVERIFY(capacity.confidence >= 0.8);
        QVERIFY2(test::hasEvidence(capacity, "= 48.00 GiB"), capacity.evidence.front().text.c_str());
        QVERIFY(test::hasEvidence(capacity, "half()"));
        const Diagnosis* backward = test::findDiagnosis(diagnoses, DiagnosisId::FirstBackward);
        QVERIFY(backward);
        QVERIFY(test::hasEvidence(*backward, "ranked below a cause its fixes can remove"));
        QVERIFY(capacity.fixes.front().kind != FixKind::Checkpointing
            && capacity.fixes.front().kind != FixKind::MicroBatch);
    }

    // Without a precision marker the projection is the fp32 one, and says so: 4 x 6 = 24 GiB,
    // still more than 11.3 GiB.
    void firstBackwardProjectionStatesItsAssumption()
    {
        const std::string trace = "before p 6GiB load\n"
                                  "alloc a1 2GiB fwd\n"
                                  "alloc a2 2GiB fwd\n"
                                  "alloc g1 1GiB grad\n"
                                  "oom 1GiB free=300MiB bwd\n";
        const auto diagnoses = test::diagnoseTrace(trace);
        QCOMPARE(diagnoses.front().id, DiagnosisId::Capacity);
        QVERIFY(test::hasEvidence(diagnoses.front(), "= 24.00 GiB"));
        QVERIFY(test::hasEvidence(diagnoses.front(), "projected as fp32"));
    }

    // Live at the start of steps 2..7: 4.0, 4.2, 4.4, 4.4, 4.6, 4.8 GiB (step 4 keeps nothing).
    // Not strictly rising, still a leak of 200 MiB per step from train.py:train_step:42.
    void leakWithAStepOutOfLine()
    {
        std::string trace = "before p 1GiB load\n"
                            "alloc x0 256MiB fwd\nfree x0 bwd\nalloc g 1GiB grad\n"
                            "alloc m 2GiB optinit\nalloc o0 512KiB opt\nfree o0 opt\n";
        for (int step = 2; step <= 6; ++step) {
            const std::string n = std::to_string(step);
            trace += "alloc x" + n + " 256MiB fwd\n";
            if (step != 4)
                trace += "alloc keep" + n + " 200MiB loss\n";
            trace += "free x" + n + " bwd\nalloc o" + n + " 512KiB opt\nfree o" + n + " opt\n";
        }
        trace += "alloc x7 256MiB fwd\noom 64MiB free=10MiB fwd\n";
        const auto diagnoses = test::diagnoseTrace(trace);
        QVERIFY(!diagnoses.empty());
        QCOMPARE(diagnoses.front().id, DiagnosisId::Leak);
        const Diagnosis& leak = diagnoses.front();
        QVERIFY(test::hasEvidence(leak, "about 200.00 MiB per step"));
        QVERIFY(test::hasEvidence(leak, "4 of 5"));
        QVERIFY(test::hasEvidence(leak, "train_step (train.py:42) (4 allocations, 800.00 MiB)"));
        QVERIFY(!test::findDiagnosis(diagnoses, DiagnosisId::Capacity));
    }

    // The same loop where nothing is kept: each step's 200 MiB buffer is freed, but with
    // record_stream on a collective's stream that falls further behind, so the allocator takes none
    // of them back (free_requested, no free_completed). The allocated level at the step starts
    // rises 200 MiB a step as before; what the program holds does not. Pending frees, not a leak.
    void pendingFreesAreNotALeak()
    {
        std::string trace = "before p 1GiB load\n"
                            "alloc x0 256MiB fwd\nfree x0 bwd\nalloc g 1GiB grad\n"
                            "alloc m 2GiB optinit\nalloc o0 512KiB opt\nfree o0 opt\n";
        for (int step = 2; step <= 6; ++step) {
            const std::string n = std::to_string(step);
            trace += "alloc x" + n + " 256MiB fwd\nalloc ar" + n + " 200MiB loss\nfree_requested ar" + n + "\n";
            trace += "free x" + n + " bwd\nalloc o" + n + " 512KiB opt\nfree o" + n + " opt\n";
        }
        trace += "alloc x7 256MiB fwd\noom 64MiB free=10MiB fwd\n";
        const auto diagnoses = test::diagnoseTrace(trace);
        QVERIFY(!diagnoses.empty());
        QVERIFY2(!test::findDiagnosis(diagnoses, DiagnosisId::Leak), test::diagnosisNames(diagnoses).c_str());
    }

    // Evaluation keeps 1 GiB of outputs per batch (5 so far); the last 1 GiB request finds 1.37 GiB
    // free in two 700 MiB blocks. Expandable segments would recover 1.37 GiB: one more batch.
    void evaluationPileUpOutranksItsFragmentation()
    {
        std::string trace = "before p 1GiB load\n"
                            "alloc a1 700MiB fwd\nalloc a2 700MiB fwd\nfree a1 bwd\nfree a2 bwd\n"
                            "alloc g 1GiB grad\nalloc m 2GiB optinit\n";
        for (int batch = 1; batch <= 5; ++batch)
            trace += "alloc out" + std::to_string(batch) + " 1GiB eval\n";
        trace += "oom 1GiB free=50MiB eval\n";
        const auto diagnoses = test::diagnoseTrace(trace);
        QVERIFY(!diagnoses.empty());
        QCOMPARE(diagnoses.front().id, DiagnosisId::EvalAccumulation);
        QVERIFY(test::hasEvidence(diagnoses.front(), "about 1024.00 MiB more per evaluation batch"));
        const Diagnosis* fragmentation = test::findDiagnosis(diagnoses, DiagnosisId::Fragmentation);
        QVERIFY(fragmentation);
        QVERIFY(fragmentation->confidence >= 0.8); // the symptom is real, it is not the cause
        QVERIFY2(test::hasEvidence(*fragmentation, "about 1 more evaluation batch"),
            test::diagnosisNames(diagnoses).c_str());
        // Its ladder does not promise what the ranking ruled out: expandable segments let this
        // request through, not the evaluation, and go after the fixes that can.
        for (const Diagnosis& d : diagnoses) {
            for (const Fix& fix : d.fixes) {
                if (fix.kind == FixKind::ExpandableSegments) {
                    QCOMPARE(fix.fitsAfter, std::optional<bool>(false));
                    QVERIFY(fix.detail.find("not the run: eval_accumulation adds 1024.00 MiB per evaluation batch")
                        != std::string::npos);
                }
            }
        }
        QVERIFY(fragmentation->fixes.front().kind != FixKind::ExpandableSegments);
    }

    // The first forward pass holds 4 GiB of activations and asks for 1.75 GiB; 3 GiB sit free in
    // two split 1.5 GiB blocks, so the request alone would have fit them. The step still has to
    // create 1 GiB of gradients and 2 GiB of Adam moments for its 1 GiB of weights: 1.75 + 3 =
    // 4.75 GiB, more than the 3 GiB + 50 MiB recovering the split blocks makes usable. The state
    // (4 GiB) fits the 8.05 GiB this process could hold, so it is not capacity either: splitting
    // is the symptom, and no measured cause is left.
    void fragmentationThatCannotFinishTheStepIsNotTheCause()
    {
        const std::string trace = "before p 1GiB load\n"
                                  "alloc b 4GiB fwd\nalloc a1 1.5GiB fwd\nalloc a2 1.5GiB fwd\n"
                                  "free a1 fwd\nfree a2 fwd\n"
                                  "oom 1.75GiB free=50MiB fwd\n";
        const auto diagnoses = test::diagnoseTrace(trace);
        QVERIFY(!diagnoses.empty());
        QVERIFY2(diagnoses.front().id != DiagnosisId::Fragmentation, test::diagnosisNames(diagnoses).c_str());
        QVERIFY(diagnoses.front().confidence < 0.8);
        const Diagnosis* fragmentation = test::findDiagnosis(diagnoses, DiagnosisId::Fragmentation);
        QVERIFY(fragmentation);
        QVERIFY(fragmentation->confidence < 0.5);
        QVERIFY2(test::hasEvidence(*fragmentation, "still has to allocate 4.75 GiB"),
            test::diagnosisNames(diagnoses).c_str());
        QVERIFY(test::hasEvidence(*fragmentation, "gradients and optimizer state still to be created"));
    }

    // Four micro-batches of gradient accumulation: each backward adds 256 MiB of gradients, so
    // the live bytes at the start of each forward pass rise 1.25, 1.5, 1.75 GiB. That is the
    // gradients being created, not a leak: besides them, every forward starts at the same level.
    void gradientsBeingCreatedAreNotALeak()
    {
        std::string trace = "before p 1GiB load\n";
        for (int micro = 0; micro < 4; ++micro) {
            const std::string n = std::to_string(micro);
            trace += "alloc a" + n + " 512MiB fwd\nfree a" + n + " bwd\nalloc g" + n + " 256MiB grad\n";
        }
        trace += "alloc a4 512MiB fwd\noom 256MiB free=10MiB bwd\n";
        const auto diagnoses = test::diagnoseTrace(trace);
        QVERIFY(!diagnoses.empty());
        QVERIFY2(!test::findDiagnosis(diagnoses, DiagnosisId::Leak), test::diagnosisNames(diagnoses).c_str());
    }

    // Loading 800 MiB of weights fails with 800 MiB reserved and 20 MiB free: no training GPU
    // leaves a process so little. Without the card's size that points at another process.
    void tinyProcessWithoutCardSizeIsNotCapacity()
    {
        const std::string trace = "alloc w1 400MiB load\nalloc w2 400MiB load\noom 200MiB free=20MiB load\n";
        const auto diagnoses = test::diagnoseTrace(trace);
        QVERIFY(!diagnoses.empty());
        QCOMPARE(diagnoses.front().id, DiagnosisId::OtherProcess);
        QVERIFY(test::hasEvidence(diagnoses.front(), "nvidia-smi"));
        QVERIFY(test::hasEvidence(diagnoses.front(), "no card size"));
        if (const Diagnosis* capacity = test::findDiagnosis(diagnoses, DiagnosisId::Capacity))
            QVERIFY(capacity->confidence < 0.5);

        // Given the card (24 GiB), the 23 GiB held elsewhere is measured, and capacity is not the cause.
        SnapshotDiagnosisContext context;
        context.cardTotalBytes = 24 * GiB;
        context.cardTotalSource = "nvidia-smi";
        const auto known = test::diagnoseTrace(trace, context);
        QCOMPARE(known.front().id, DiagnosisId::OtherProcess);
        QVERIFY(test::hasEvidence(known.front(), "of the 24.00 GiB card (nvidia-smi)"));
        if (const Diagnosis* capacity = test::findDiagnosis(known, DiagnosisId::Capacity))
            QVERIFY(capacity->confidence < known.front().confidence);

        // A 1 GiB card is what it is: 1 GiB of weights (800 MiB loaded + the 200 MiB being
        // loaded) exceed the 820 MiB this process could hold.
        context.cardTotalBytes = GiB;
        const auto small = test::diagnoseTrace(trace, context);
        QCOMPARE(small.front().id, DiagnosisId::Capacity);
    }

    // stacks='python': the autograd engine's thread records no frames, so the backward's
    // gradients and the failing request carry none, and nothing names Tensor.backward. Right
    // after the first forward that is the first backward: weights 1 + activations 6 + gradient
    // 0.5 = 7.5 GiB live, usable 7.6 GiB; training would keep 4 x 1 = 4 GiB of state, which fits.
    void framelessOomAfterForwardIsTheFirstBackward()
    {
        const std::string trace = "before p 1GiB load\n"
                                  "alloc a1 3GiB fwd\n"
                                  "alloc a2 3GiB fwd\n"
                                  "alloc l 4KiB loss\n"
                                  "alloc g1 512MiB none\n"
                                  "oom 2GiB free=100MiB none\n";
        const SnapshotAnalysis analysis = test::analyzeTrace(trace);
        QCOMPARE(analysis.primary()->ooms.back().phase, Phase::Backward);
        const auto diagnoses = test::diagnoseTrace(trace);
        QVERIFY(!diagnoses.empty());
        QVERIFY2(diagnoses.front().id == DiagnosisId::FirstBackward, test::diagnosisNames(diagnoses).c_str());
    }
    // A ring buffer kept the end of step 2, step 3 and the failing step 4: step 2's forward
    // allocations are gone, their frees in backward remain (free events carry the allocation's
    // frames, so they read as "forward"). Those frees start no step. Earlier steps allocated 3 x 100 MiB from model.py
    // lines 10, 20, 30; the failing step allocates 400 MiB at each of them: the same code, 4x the
    // bytes, is a longer batch. Live at the failure 1 GiB weights + 2 GiB state + 3 x 400 MiB,
    // usable 4.25 GiB: the state fits, and no earlier step held more than 333 MiB besides it
    // (3 x 100 MiB, the loss and a 32 MiB backward buffer).
    void longestBatchSeenThroughARingBuffer()
    {
        std::string trace = "context alloc\nbefore p 1GiB load\nbefore m 2GiB optinit\n";
        for (int step = 1; step <= 3; ++step)
            trace += trainingStep(std::to_string(step), "100MiB");
        for (int layer = 1; layer <= 3; ++layer)
            trace += "alloc b" + std::to_string(layer) + " 400MiB " + modelSite(10 * layer) + "\n";
        trace += "oom 400MiB free=20MiB " + modelSite(10) + "\nringbuffer 30\n";
        const SnapshotAnalysis analysis = test::analyzeTrace(trace);
        const DeviceAnalysis* device = analysis.primary();
        QVERIFY(device && !device->ooms.empty());
        const Snapshot& snapshot = *analysis.snapshot;
        QCOMPARE(snapshot.trace(0)->events.front().action, TraceAction::FreeRequested); // starts mid-backward
        // Steps 3 and 4 start in view; the frees of step 2's forward tensors, read as "forward", start none.
        QCOMPARE(device->stepCount, 2);

        const auto diagnoses = test::diagnoseTrace(trace);
        QVERIFY(!diagnoses.empty());
        QVERIFY2(diagnoses.front().id == DiagnosisId::LongestBatch, test::diagnosisNames(diagnoses).c_str());
        const Diagnosis& d = diagnoses.front();
        QVERIFY(d.confidence >= 0.8);
        QVERIFY2(test::hasEvidence(d, "over 3 call sites seen in both, the failing step's tensors are 4.0x"),
            d.evidence.front().text.c_str());
        QVERIFY(test::hasEvidence(d, "against at most 333.00 MiB the trace shows any earlier step holding"));
        QCOMPARE(d.fixes.front().id(), std::string("length_bucketing"));
    }

    // The same ring-buffered run with a steady batch: the failing step allocates what the others
    // did, so its sites are unchanged and nothing reads as a longer batch.
    void steadyBatchIsNotTheLongestBatch()
    {
        std::string trace = "context alloc\nbefore p 1GiB load\nbefore m 2GiB optinit\n";
        for (int step = 1; step <= 3; ++step)
            trace += trainingStep(std::to_string(step), "100MiB");
        for (int layer = 1; layer <= 3; ++layer)
            trace += "alloc b" + std::to_string(layer) + " 100MiB " + modelSite(10 * layer) + "\n";
        trace += "oom 100MiB free=20MiB " + modelSite(10) + "\nringbuffer 30\n";
        const auto diagnoses = test::diagnoseTrace(trace);
        QVERIFY2(!test::findDiagnosis(diagnoses, DiagnosisId::LongestBatch), test::diagnosisNames(diagnoses).c_str());
    }

    // A loop keeps 200 MiB of logits per step (train.py:train_step:42) for a metric at the end of
    // the epoch. The ring buffer holds the end of step 2 and the failing step 3: one step start,
    // nothing to compare. But those logits made before the failing step (8 from before the trace,
    // those of steps 1 and 2) are still live: they outlived their steps. Step 3 makes one more in
    // view, and none is ever freed: 200 MiB more per step.
    void leakReadFromTheTensorsItKeeps()
    {
        std::string trace = "context alloc\nbefore p 1GiB load\nbefore m 2GiB optinit\n";
        for (int kept = 0; kept < 8; ++kept)
            trace += "before k" + std::to_string(kept) + " 200MiB loss\n";
        trace += trainingStep("1", "300MiB", "alloc keep1 200MiB loss\n");
        trace += trainingStep("2", "300MiB", "alloc keep2 200MiB loss\n");
        for (int layer = 1; layer <= 3; ++layer)
            trace += "alloc b" + std::to_string(layer) + " 300MiB " + modelSite(10 * layer) + "\n";
        trace += "alloc keep3 200MiB loss\noom 300MiB free=20MiB bwd\nringbuffer 20\n";
        const SnapshotAnalysis analysis = test::analyzeTrace(trace);
        QCOMPARE(analysis.primary()->stepCount, 1);
        const auto diagnoses = test::diagnoseTrace(trace);
        QVERIFY(!diagnoses.empty());
        QVERIFY2(diagnoses.front().id == DiagnosisId::Leak, test::diagnosisNames(diagnoses).c_str());
        const Diagnosis& leak = diagnoses.front();
        QVERIFY(leak.confidence >= 0.8);
        QVERIFY2(test::hasEvidence(leak, "tensors of 200.00 MiB from train_step (train.py:42) are live at the failure"),
            leak.evidence.front().text.c_str());
        QVERIFY(test::hasEvidence(leak, "9 of them were made before step 1 began and outlived their step"));
        QVERIFY(test::hasEvidence(leak, "adding 1 per step (200.00 MiB) and freeing none"));
        QCOMPARE(leak.outlook->growthPerUnitBytes, 200 * MiB);
    }

    // The same blocks as a bounded cache: every step stores one 200 MiB entry and evicts the
    // oldest. Persisting memory, not growing: no leak.
    void cacheThatEvictsIsNotALeak()
    {
        std::string trace = "context alloc\nbefore p 1GiB load\nbefore m 2GiB optinit\n";
        for (int kept = 0; kept < 8; ++kept)
            trace += "before k" + std::to_string(kept) + " 200MiB loss\n";
        trace += trainingStep("1", "300MiB", "alloc keep1 200MiB loss\nfree k0 loss\n");
        trace += trainingStep("2", "300MiB", "alloc keep2 200MiB loss\nfree k1 loss\n");
        for (int layer = 1; layer <= 3; ++layer)
            trace += "alloc b" + std::to_string(layer) + " 300MiB " + modelSite(10 * layer) + "\n";
        trace += "alloc keep3 200MiB loss\nfree k2 loss\noom 300MiB free=20MiB bwd\nringbuffer 24\n";
        const auto diagnoses = test::diagnoseTrace(trace);
        QVERIFY2(!test::findDiagnosis(diagnoses, DiagnosisId::Leak), test::diagnosisNames(diagnoses).c_str());
    }
    // Loading weights with 300 MiB of them in place: the process could hold 350 MiB (340 reserved
    // + 10 free), less than any training GPU leaves it. 24 MiB sit free in split blocks (12 + 8 +
    // 4, the largest 12 MiB) and a 14 MiB tensor does not fit: the split is real, but recovering
    // it makes 34 MiB usable once, while memory held outside the process is at least 1 GiB - 350
    // MiB = 674 MiB, and it is why the cache could not reserve a new segment.
    void splitCacheUnderAnotherProcessIsNotTheCause()
    {
        const std::string trace = "alloc w 300MiB load\n"
                                  "alloc t1 8MiB load\nalloc t2 8MiB load\nalloc t3 8MiB load\n"
                                  "free t1 load\n"
                                  "oom 14MiB free=10MiB load\n";
        const SnapshotAnalysis analysis = test::analyzeTrace(trace);
        const OomAnalysis& oom = analysis.primary()->ooms.back();
        QCOMPARE(oom.largestFreeBlock, 12 * MiB);
        QCOMPARE(oom.freeInPoolBytes, 24 * MiB);
        const auto diagnoses = test::diagnoseTrace(trace);
        QVERIFY(!diagnoses.empty());
        QVERIFY2(diagnoses.front().id == DiagnosisId::OtherProcess, test::diagnosisNames(diagnoses).c_str());
        const Diagnosis* fragmentation = test::findDiagnosis(diagnoses, DiagnosisId::Fragmentation);
        QVERIFY(fragmentation);
        QVERIFY(fragmentation->confidence < diagnoses.front().confidence);
        QVERIFY2(test::hasEvidence(*fragmentation, "is less than the 674.00 MiB held outside this process"),
            test::diagnosisNames(diagnoses).c_str());

        // With the card's size given (24 GiB), the memory held outside is measured.
        SnapshotDiagnosisContext context;
        context.cardTotalBytes = 24 * GiB;
        context.cardTotalSource = "nvidia-smi";
        const auto known = test::diagnoseTrace(trace, context);
        QVERIFY2(known.front().id == DiagnosisId::OtherProcess, test::diagnosisNames(known).c_str());
        QVERIFY(
            test::hasEvidence(*test::findDiagnosis(known, DiagnosisId::Fragmentation), "ranked below other_process"));
    }

    // Evaluation gathers every batch's 1 GiB of logits into one tensor: torch.cat makes a buffer
    // one batch larger while the old one is still live, then frees the old one (1, 2, 3, 4 GiB).
    // The 5 GiB buffer fails: one request of 5 GiB, 31% of the 16 GiB this process could hold,
    // that is the pile growing 1 GiB per batch, not one oversized tensor.
    void evaluationGatheringIntoOneTensorIsAccumulation()
    {
        const std::string concat = "stack=trainer_pt_utils.py:nested_concat:120;trainer.py:evaluation_loop:4200;"
                                   "trainer.py:evaluate:4000;train.py:main:95";
        std::string trace = "before p 1GiB load\nbefore m 2GiB optinit\n";
        for (int batch = 1; batch <= 4; ++batch) {
            const std::string n = std::to_string(batch);
            trace += "alloc logits" + n + " 1GiB eval\nalloc all" + n + " " + n + "GiB " + concat + "\nfree logits" + n
                + " eval\n";
            if (batch > 1)
                trace += "free all" + std::to_string(batch - 1) + " eval\n";
        }
        trace += "alloc logits5 1GiB eval\noom 5GiB free=2GiB " + concat + "\n";
        const SnapshotAnalysis analysis = test::analyzeTrace(trace);
        QCOMPARE(analysis.primary()->ooms.back().phase, Phase::Eval);
        const auto diagnoses = test::diagnoseTrace(trace);
        QVERIFY(!diagnoses.empty());
        QVERIFY2(diagnoses.front().id == DiagnosisId::EvalAccumulation, test::diagnosisNames(diagnoses).c_str());
        const Diagnosis& d = diagnoses.front();
        QVERIFY(d.confidence >= 0.8);
        QVERIFY2(
            test::hasEvidence(d, "newest of 5 ever larger buffers from the same code"), d.evidence.back().text.c_str());
        QCOMPARE(d.outlook->growthPerUnitBytes, GiB);
        if (const Diagnosis* large = test::findDiagnosis(diagnoses, DiagnosisId::LargeAllocation))
            QVERIFY(test::hasEvidence(*large, "ranked below eval_accumulation"));
    }
    // A fused AdamW creates its two moments in the first optimizer.step() and fails on the
    // second: weights 2 + gradients 2 + moments 2 x 2 = 8 GiB, against 7.1 GiB this process could
    // hold (7 GiB reserved: the state so far and 1 GiB of cached activations, + 0.1 free). The
    // trace starts in backward; an activation older than it, freed during the step, carries its
    // forward frames. It starts no step, so the state is not "built by an earlier step" and the
    // projection, not the 2 GiB made so far, is judged.
    void fusedAdamStateBeyondTheCardIsCapacity()
    {
        const std::string trace = "context alloc\nbefore p 2GiB load\n"
                                  "before a1 512MiB fwd\nbefore a2 512MiB fwd\n"
                                  "alloc g 2GiB grad\nfree a1 bwd\n"
                                  "alloc m1 1GiB optinit\nfree a2 opt\nalloc m2 1GiB optinit\n"
                                  "oom 2GiB free=100MiB optinit\n";
        const SnapshotAnalysis analysis = test::analyzeTrace(trace);
        QCOMPARE(analysis.primary()->stepCount, 0); // no step starts in view; the free starts none
        const auto diagnoses = test::diagnoseTrace(trace);
        QVERIFY(!diagnoses.empty());
        QVERIFY2(diagnoses.front().id == DiagnosisId::Capacity, test::diagnosisNames(diagnoses).c_str());
        QVERIFY(test::hasEvidence(diagnoses.front(), "= 8.00 GiB"));
        QVERIFY(!test::findDiagnosis(diagnoses, DiagnosisId::OptimizerStep2)
            || test::findDiagnosis(diagnoses, DiagnosisId::OptimizerStep2)->confidence < diagnoses.front().confidence);
    }
};

QTEST_GUILESS_MAIN(TestDiagCauses)
#include "tst_diagcauses.moc"
