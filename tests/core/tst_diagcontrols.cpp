// Classic single-process causes inside recipes that hide them (issue 22's controls): a leak seen
// through a ring buffer shorter than a step, evaluation outputs kept by Hugging Face Trainer's
// evaluation loop, a backward that is not the run's first although it is the trace's. Each trace is
// the smallest one that shows the physical reason; the comments give the arithmetic.
#include "common/analysisfixtures.h"
#include "common/tracediagnosis.h"
#include "core/analysis/snapshotanalysis.h"
#include "core/diagnosis/diagnosistext.h"
#include "core/diagnosis/snapshotdiagnosis.h"
#include "core/units.h"

#include <QTest>

#include <algorithm>

using namespace oomlens;

namespace {

// A line of model code under the module call.
std::string modelSite(int line)
{
    return "stack=model.py:forward:" + std::to_string(line)
        + ";torch/nn/modules/module.py:_call_impl:1750;train.py:train_step:40;train.py:train:150";
}

// The failing step as a ring buffer of a few events shows it: weights 2 GiB, gradients 1 GiB and
// Adam's moments 4 GiB (made by optimizer.step()'s _init_group), all older than the trace; then
// `olderThanTrace` (what else was live when the trace began), the forward's three 300 MiB
// activations and the loss, and backward's first 1 GiB request fails with 100 MiB free on the card.
std::string failingStepOnly(const std::string& olderThanTrace)
{
    std::string trace = "before p 2GiB load\nbefore g 1GiB grad\nbefore m 4GiB optinit\n" + olderThanTrace;
    for (int layer = 1; layer <= 3; ++layer)
        trace += "alloc a" + std::to_string(layer) + " 300MiB " + modelSite(10 * layer) + "\n";
    return trace + "alloc l 1MiB loss\noom 1GiB free=100MiB bwd\n";
}

// The failing step of a run whose earlier steps ran before the trace: weights (8 x 256 MiB) and
// Adam's moments (16 x 256 MiB, one per parameter tensor and moment) older than it, `cache`
// (segments the earlier steps left), the end of the previous step's update, then the batch, three
// 200 MiB layer activations, the logits (3 GiB) and their fp32 copy (6 GiB) from two lines of the
// model's head, and backward's 6 GiB gradient of that copy fails.
std::string longDocument(const std::string& cache)
{
    std::string trace;
    for (int tensor = 0; tensor < 8; ++tensor)
        trace += "before p" + std::to_string(tensor) + " 256MiB load\n";
    for (int tensor = 0; tensor < 16; ++tensor)
        trace += "before m" + std::to_string(tensor) + " 256MiB optinit\n";
    trace += cache + "alloc u 1MiB opt\nfree u opt\nalloc in 1MiB data\n";
    for (int layer = 1; layer <= 3; ++layer)
        trace += "alloc a" + std::to_string(layer) + " 200MiB " + modelSite(10 * layer) + "\n";
    return trace + "alloc logits 3GiB " + modelSite(90) + "\nalloc upcast 6GiB " + modelSite(91)
        + "\noom 6GiB free=500MiB bwd\n";
}

} // namespace

class TestDiagControls : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    // The loop keeps 100 MiB of logits per step in a list (train.py:160, the loop's own code), 20
    // steps so far: 2 GiB, older than a trace that holds only the failing step's forward. The trace
    // cannot show the line adding, but the live set shows what only a kept reference leaves: 20
    // tensors of one size from one loop line, none made or freed in view. Live 2 + 1 + 4 + 1.95 +
    // 0.9 = 9.85 GiB, usable about 9.95: the 1 GiB request lacks about 0.9 GiB, less than the 1.95
    // GiB kept. Adam's moments exist, made by optimizer.step(): a step completed before the trace,
    // so this is not the run's first backward however the trace numbers its steps.
    void leakBeyondATraceShorterThanAStep()
    {
        std::string kept;
        for (int step = 0; step < 20; ++step)
            kept += "before k" + std::to_string(step) + " 100MiB stack=train.py:train:160\n";
        const std::string trace = failingStepOnly(kept);
        const SnapshotAnalysis analysis = test::analyzeTrace(trace);
        QCOMPARE(analysis.primary()->ooms.back().phase, Phase::Backward);
        QCOMPARE(analysis.primary()->ooms.back().step, 1);
        const auto diagnoses = test::diagnoseTrace(trace);
        QVERIFY(!diagnoses.empty());
        QVERIFY2(diagnoses.front().id == DiagnosisId::Leak, test::diagnosisNames(diagnoses).c_str());
        const Diagnosis& leak = diagnoses.front();
        QCOMPARE(leak.confidence, 0.7);
        QVERIFY2(test::hasEvidence(leak, "20 tensors of 100.00 MiB from train (train.py:160) are live at the failure"),
            leak.evidence.front().text.c_str());
        QVERIFY(test::hasEvidence(leak, "cannot show the line adding"));
        QCOMPARE(leak.outlook->growthPerUnitBytes, 100 * MiB);

        const Diagnosis* first = test::findDiagnosis(diagnoses, DiagnosisId::FirstBackward);
        QVERIFY(first);
        QVERIFY(first->confidence < 0.5);
        QVERIFY(
            test::hasEvidence(*first, "4.00 GiB of optimizer state that optimizer.step() creates on its first call"));
    }

    // The same 20 tensors made by an installed framework's code (DeepSpeed's engine moving the
    // weights, its frame the innermost Python one) are no reference the loop keeps.
    void frameworkTensorsBeyondTheTraceAreNotALeak()
    {
        std::string kept;
        for (int step = 0; step < 20; ++step)
            kept += "before k" + std::to_string(step)
                + " 100MiB stack=/opt/conda/lib/python3.10/site-packages/deepspeed/runtime/engine.py:"
                  "_configure_distributed_model:1180;train.py:main:40\n";
        const auto diagnoses = test::diagnoseTrace(failingStepOnly(kept));
        QVERIFY2(!test::findDiagnosis(diagnoses, DiagnosisId::Leak), test::diagnosisNames(diagnoses).c_str());
    }

    // The same trace where what was live besides the state is the failing step's own layer
    // activations (model code, older than the trace because the ring buffer starts mid-forward):
    // no kept reference. Without Adam's moments the backward is the first.
    void layerActivationsBeyondTheTraceAreNotALeak()
    {
        std::string older;
        for (int layer = 0; layer < 20; ++layer)
            older += "before h" + std::to_string(layer) + " 100MiB " + modelSite(5) + "\n";
        const auto diagnoses = test::diagnoseTrace(failingStepOnly(older));
        QVERIFY2(!test::findDiagnosis(diagnoses, DiagnosisId::Leak), test::diagnosisNames(diagnoses).c_str());

        std::string noState = "before p 2GiB load\n" + older;
        for (int layer = 1; layer <= 3; ++layer)
            noState += "alloc a" + std::to_string(layer) + " 300MiB " + modelSite(10 * layer) + "\n";
        noState += "alloc l 1MiB loss\noom 1GiB free=100MiB bwd\n";
        const auto firstRun = test::diagnoseTrace(noState);
        QVERIFY(!firstRun.empty());
        QVERIFY2(firstRun.front().id == DiagnosisId::FirstBackward, test::diagnosisNames(firstRun).c_str());
        QVERIFY(firstRun.front().confidence >= 0.8);
    }

    // A long document after many shorter batches, the ring buffer holding only the end of the step
    // before (its optimizer) and the failing step. Weights 2 GiB and Adam's moments 4 GiB (made by an
    // earlier step's optimizer.step()) are older than the trace; the cache the earlier steps left
    // holds two 1 GiB segments besides them: reserved at the step's start is about 8 GiB, 2 GiB above
    // what was live, so no earlier step grew by more than 2 GiB, and no earlier tensor was larger
    // than 1 GiB. The failing step's logits (3 GiB), their fp32 copy (6 GiB) and its gradient
    // (6 GiB, the failing request) outgrow every cached segment from three call sites, and it
    // needs 0.6 + 3 + 6 + 6 = 15.6 GiB: about 7.8x the room. A longer batch, not the first backward.
    void longerBatchBeyondATraceShorterThanAStep()
    {
        const std::string trace = longDocument("segment c1 0x7e0000000000 1GiB large\n"
                                               "segment c2 0x7e8000000000 1GiB large\n");
        const auto diagnoses = test::diagnoseTrace(trace);
        QVERIFY(!diagnoses.empty());
        QVERIFY2(diagnoses.front().id == DiagnosisId::LongestBatch, test::diagnosisNames(diagnoses).c_str());
        const Diagnosis& longest = diagnoses.front();
        QCOMPARE(longest.confidence, 0.7);
        QVERIFY2(
            test::hasEvidence(longest, "the high-water mark the earlier steps left"), longest.evidence[0].text.c_str());
        QVERIFY(test::hasEvidence(longest,
            "3 call sites of this step asked for tensors up to 6.00 GiB, 6.0x the largest "
            "segment cached then (1024.00 MiB)"));
        const Diagnosis* first = test::findDiagnosis(diagnoses, DiagnosisId::FirstBackward);
        QVERIFY(first && first->confidence < 0.5);
    }

    // The same step where the earlier steps had left a 7 GiB segment in the cache: they made tensors
    // as large as these, so the cache says nothing of a longer batch.
    void stepThatFitsTheCachedSegmentsIsNotALongerBatch()
    {
        const auto diagnoses = test::diagnoseTrace(longDocument("segment c1 0x7e0000000000 7GiB large\n"));
        QVERIFY2(!test::findDiagnosis(diagnoses, DiagnosisId::LongestBatch), test::diagnosisNames(diagnoses).c_str());
    }

    // Hugging Face Trainer evaluates after training with no eval_accumulation_steps: every batch's
    // 600 MiB of logits stays on the GPU (trainer_pt_utils.py add, called by evaluation_loop). Ten
    // batches' worth is older than the trace, which holds two more batches and the failing one; on
    // the way the allocator releases a cached segment of the training step, recorded with the
    // backward frames it was first mapped in. Stacks hold only Trainer's frames. Kept per
    // evaluation batch inside evaluation is eval accumulation, not a leak.
    void trainerEvaluationKeepsLogits()
    {
        const std::string predict = "stack=transformers/trainer.py:prediction_step:4470;"
                                    "transformers/trainer.py:evaluation_loop:4254";
        const std::string gather = "stack=transformers/trainer_pt_utils.py:add:347;"
                                   "transformers/trainer.py:evaluation_loop:4283";
        std::string trace = "before p 1GiB load\nbefore g 1GiB grad\nbefore m 2GiB optinit\n"
                            "segment s0 0x7f0000000000 64MiB large\n";
        for (int batch = 0; batch < 10; ++batch)
            trace += "before k" + std::to_string(batch) + " 600MiB " + gather + "\n";
        for (int batch = 10; batch < 12; ++batch) {
            const std::string n = std::to_string(batch);
            trace += "alloc h" + n + " 70MiB " + predict + "\nfree h" + n + " none\nalloc o" + n + " 600MiB " + predict
                + "\nalloc k" + n + " 600MiB " + gather + "\nfree o" + n + " none\n";
            if (batch == 10)
                trace += "segment_free s0 bwd\n";
        }
        trace += "alloc h12 70MiB " + predict + "\nfree h12 none\noom 600MiB free=100MiB " + predict + "\n";
        const SnapshotAnalysis analysis = test::analyzeTrace(trace);
        QCOMPARE(analysis.primary()->ooms.back().phase, Phase::Eval);
        const auto diagnoses = test::diagnoseTrace(trace);
        QVERIFY(!diagnoses.empty());
        QVERIFY2(diagnoses.front().id == DiagnosisId::EvalAccumulation, test::diagnosisNames(diagnoses).c_str());
        const Diagnosis& eval = diagnoses.front();
        QVERIFY(eval.confidence >= 0.8);
        // The 10 kept before the trace count with the 2 in view: 12 x 600 MiB = 7.03 GiB.
        QVERIFY2(
            test::hasEvidence(eval, "12 allocations made during evaluation are still live at the failure: 7.03 GiB"),
            eval.evidence[1].text.c_str());
        QVERIFY(test::hasEvidence(eval, "one allocation site kept 12 tensors, one per batch"));
        QVERIFY2(!test::findDiagnosis(diagnoses, DiagnosisId::Leak), test::diagnosisNames(diagnoses).c_str());
    }
};

QTEST_GUILESS_MAIN(TestDiagControls)
#include "tst_diagcontrols.moc"
