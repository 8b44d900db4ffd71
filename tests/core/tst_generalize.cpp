// Diagnoses that follow the frameworks' and the allocator's own behaviour rather than one scenario
// family's: each trace reproduces a run another family's authors wrote, in TraceBuilder's compact
// form, with the stacks PyTorch records for FSDP2, DeepSpeed ZeRO-3, a colocated vLLM engine, a
// captured evaluation and a card shared with another process.
#include "common/analysisfixtures.h"
#include "common/testutil.h"
#include "common/tracediagnosis.h"
#include "core/caseanalysis.h"
#include "core/diagnosis/catalogue.h"
#include "parsers/inputloader.h"

#include <QTest>

#include <algorithm>
#include <string>

using namespace oomlens;

namespace {

constexpr uint64_t MiB = uint64_t(1) << 20;

const Allocation& allocationOfSize(const DeviceAnalysis& device, uint64_t requested)
{
    for (const Allocation& a : device.allocations) {
        if (a.requestedSize == requested)
            return a;
    }
    qFatal("no allocation of that size");
    return device.allocations.front();
}

bool anyEvidence(const std::vector<Diagnosis>& diagnoses, const std::string& needle)
{
    return std::any_of(
        diagnoses.begin(), diagnoses.end(), [&](const Diagnosis& d) { return test::hasEvidence(d, needle); });
}

// FSDP2's post-backward as the autograd engine's thread records it under stacks='python': the
// engine calls RegisterPostBackwardFunction.backward, and no frame of the training loop is on that
// thread (torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py, _fsdp_collectives.py).
const std::string fsdp2ReduceOnEngine
    = "stack=torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py:foreach_reduce:1189;"
      "torch/utils/_contextlib.py:decorate_context:120;"
      "torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py:post_backward:500;"
      "torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py:backward:880;"
      "torch/autograd/function.py:apply:307";
const std::string fsdp2UnshardForward
    = "stack=torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py:foreach_all_gather:240;"
      "torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py:unshard:290;"
      "torch/distributed/fsdp/_fully_shard/_fsdp_state.py:_pre_forward:230;"
      "torch/nn/modules/module.py:_call_impl:1750;model.py:forward:50;train.py:train_step:40;train.py:main:90";
const std::string fsdp2ShardedParam
    = "stack=torch/distributed/fsdp/_fully_shard/_fsdp_param.py:_init_sharded_param:380;"
      "torch/distributed/fsdp/_fully_shard/_fully_shard.py:fully_shard:210;"
      "train.py:setup:60;train.py:main:70";

// DeepSpeed ZeRO-3 gathering a submodule's parameters from its forward pre-hook: both
// pre_sub_module_forward_function and fetch_sub_module run under @torch.no_grad()
// (deepspeed/runtime/zero/parameter_offload.py, partitioned_param_coordinator.py), inside the
// training forward's module call.
const std::string zero3Fetch
    = "stack=deepspeed/runtime/zero/partition_parameters.py:_allgather_params_coalesced:1400;"
      "deepspeed/runtime/zero/partitioned_param_coordinator.py:fetch_sub_module:350;"
      "torch/utils/_contextlib.py:decorate_context:116;"
      "deepspeed/runtime/zero/parameter_offload.py:pre_sub_module_forward_function:537;"
      "torch/utils/_contextlib.py:decorate_context:116;"
      "deepspeed/runtime/zero/parameter_offload.py:_pre_forward_module_hook:354;"
      "torch/nn/modules/module.py:_call_impl:1750;model.py:forward:50;torch/nn/modules/module.py:_call_impl:1750;"
      "deepspeed/runtime/engine.py:forward:2000;train.py:train_step:40;train.py:main:90";
const std::string zero3Release = "stack=deepspeed/runtime/zero/partitioned_param_coordinator.py:release_sub_module:420;"
                                 "deepspeed/runtime/zero/parameter_offload.py:post_sub_module_forward_function:560;"
                                 "torch/nn/modules/module.py:_call_impl:1750;model.py:forward:50;"
                                 "train.py:train_step:40;train.py:main:90";

// TRL's GRPOTrainer with vLLM colocated in the trainer's process (vllm_mode="colocate").
const std::string vllmKv = "stack=\"/x/vllm/worker/cache_engine.py:_allocate_kv_cache:90;"
                           "/x/vllm/worker/cache_engine.py:__init__:60;/x/vllm/worker/worker.py:_init_cache_engine:300;"
                           "/x/trl/trainer/grpo_trainer.py:__init__:700\"";
const std::string vllmWeights
    = "stack=\"/x/vllm/model_executor/layers/linear.py:create_weights:120;"
      "/x/vllm/model_executor/layers/linear.py:__init__:80;/x/vllm/worker/model_runner.py:load_model:1100;"
      "/x/trl/trainer/grpo_trainer.py:__init__:690\"";

std::string lines(std::initializer_list<std::string> all)
{
    std::string text;
    for (const auto& line : all)
        text += line + "\n";
    return text;
}

// Eight FSDP2 layers; step 1's backward reduce-scatters each layer's gradient into a 256 MiB
// sharded gradient (views of foreach_reduce's output, kept until zero_grad), and the first
// optimizer.step() fails creating Adam's moments.
std::string fsdp2FirstStep()
{
    std::string text;
    for (int l = 0; l < 8; ++l)
        text += "alloc p" + std::to_string(l) + " 256MiB " + fsdp2ShardedParam + "\n";
    for (int l = 0; l < 8; ++l) {
        text += "alloc ag" + std::to_string(l) + " 1GiB " + fsdp2UnshardForward + "\n";
        text += "alloc a" + std::to_string(l) + " 512MiB fwd\n";
        text += "free ag" + std::to_string(l) + " fwd\n";
    }
    text += "alloc lv 1MiB loss\n";
    for (int l = 7; l >= 0; --l) {
        const std::string n = std::to_string(l);
        text += "alloc ug" + n + " 1GiB bwdcpp\n";
        text += "alloc rsi" + n + " 1GiB " + fsdp2ReduceOnEngine + "\n";
        text += "free ug" + n + " bwdcpp\n";
        text += "alloc g" + n + " 256MiB " + fsdp2ReduceOnEngine + "\n";
        text += "free rsi" + n + " bwdcpp\n";
        text += "free a" + n + " bwdcpp\n";
    }
    for (int l = 0; l < 4; ++l)
        text += "alloc m" + std::to_string(l) + " 256MiB optinit\n";
    return text + "oom 256MiB free=100MiB optinit\n";
}

// ZeRO-3 with an over-large stage3_prefetch_bucket_size: step 1 gathers and releases each layer; in
// step 2's forward eleven layers' gathered parameters are live at once when the next fails.
std::string zero3Prefetch()
{
    std::string text = "alloc w 1GiB load\n";
    for (int step = 0; step < 2; ++step) {
        const std::string s = std::to_string(step);
        for (int l = 0; l < 12; ++l) {
            const std::string n = s + "_" + std::to_string(l);
            text += "alloc gp" + n + " 768MiB " + zero3Fetch + "\n";
            text += "alloc a" + n + " 64MiB fwd\n";
            if (step == 0)
                text += "free gp" + n + " " + zero3Release + "\n";
            if (step == 1 && l == 10)
                return text + "oom 768MiB free=100MiB " + zero3Fetch + "\n";
        }
        text += "alloc loss" + s + " 1MiB loss\n";
        for (int l = 11; l >= 0; --l) {
            const std::string n = s + "_" + std::to_string(l);
            text += "alloc bg" + n + " 768MiB bwdcpp\n";
            text += "alloc gr" + n + " 16MiB grad\n";
            text += "free bg" + n + " bwdcpp\nfree a" + n + " bwdcpp\n";
        }
        text += "alloc st" + s + " 32MiB optinit\n";
    }
    return text;
}

// DeepSpeed ZeRO-3 building its engine: the fp32 master partitions, then initialize_optimizer_states
// stepping FusedAdam once with zero gradients so that Adam's moments exist before the first batch
// (deepspeed/runtime/zero/stage3.py). Then two training steps whose update allocates nothing (the
// moments exist); the second batch is three times the first and fails in its forward. (Family F's
// ZeRO-3 runs check the diagnoses this enables end to end.)
std::string zero3EngineThenTwoSteps()
{
    const std::string engine = "deepspeed/runtime/zero/stage3.py:__init__:346;deepspeed/runtime/engine.py:"
                               "_configure_zero_optimizer:1744;deepspeed/runtime/engine.py:__init__:328;"
                               "deepspeed/__init__.py:initialize:193;train.py:main:70";
    std::string text = "alloc p 1GiB load\n";
    text += "alloc master 2GiB stack=deepspeed/runtime/zero/stage3.py:_create_fp32_partitions:933;" + engine + "\n";
    for (const char* moment : { "exp_avg", "exp_avg_sq" })
        text += std::string("alloc ") + moment
            + " 2GiB stack=deepspeed/ops/adam/fused_adam.py:step:157;"
              "deepspeed/runtime/zero/stage3.py:initialize_optimizer_states:1046;"
            + engine + "\n";
    for (int step = 1; step <= 2; ++step) {
        const std::string s = std::to_string(step);
        for (int l = 0; l < 4 * (step == 1 ? 1 : 3); ++l)
            text += "alloc a" + s + "_" + std::to_string(l) + " 256MiB fwd\n";
        if (step == 2)
            return text + "oom 256MiB free=100MiB fwd\n";
        text += "alloc lv 1MiB loss\n";
        for (int l = 3; l >= 0; --l) {
            const std::string n = s + "_" + std::to_string(l);
            text += "alloc g" + n + " 256MiB bwdcpp\nfree g" + n + " bwdcpp\nfree a" + n + " bwdcpp\n";
        }
        text += "free lv bwd\n";
    }
    return text;
}

// Frees that waited for another stream (free_requested, then free_completed once the stream's
// event completed) while a segment was reserved beside them; then the step goes on until a request
// fails. `splitAfter`: what follows the window only splits the cache (live + the request fit what
// the process holds); otherwise the live tensors alone leave no room for the request.
std::string pendingWindowThenOom(bool splitAfter)
{
    std::string text = lines(
        { "alloc w 1GiB load", "alloc a 1GiB fwd", "free_requested a", "alloc b 1GiB fwd", "free_completed a" });
    text += splitAfter ? "alloc s 16MiB fwd\n" : "alloc c 1GiB fwd\n";
    return text + "oom 1GiB free=100MiB fwd\n";
}

// torch.compile(mode="reduce-overhead") warming up and recording a graph per new sequence length,
// all into the cudagraph trees' one pool ((0, 1): graph_pool_handle() before PyTorch 2.5): each
// length's blocks stay cached in the pool, and the next, longer length fits none of them.
std::string treesRecordEachLength()
{
    const std::string trees
        = " pool=0,1 stream=7 stack=/tmp/torchinductor_u/q3/cq3.py:call:1437;"
          "torch/_inductor/cudagraph_trees.py:run_eager:2016;"
          "torch/_inductor/cudagraph_trees.py:run:1980;score.py:score_batches:101;score.py:main:131";
    std::string text = "alloc w 1GiB load\n";
    for (int length = 1; length <= 2; ++length) {
        const std::string n = std::to_string(length);
        text += "alloc x" + n + (length == 1 ? " 300MiB" : " 500MiB") + trees + "\n";
        text += "free x" + n + trees + "\n";
    }
    return text + "oom 600MiB free=100MiB" + trees + "\n";
}

// Two steps; the second's batch is three times the first's and comes from other lines of code (a
// new sequence bucket), so no call site matches to compare sizes.
std::string twoStepsSecondLarger()
{
    std::string text = "alloc w 1GiB load\n";
    for (int l = 0; l < 4; ++l)
        text += "alloc a" + std::to_string(l) + " 256MiB fwd\n";
    text += "alloc lv 1MiB loss\n";
    for (int l = 3; l >= 0; --l)
        text += "alloc g" + std::to_string(l) + " 64MiB grad\nfree a" + std::to_string(l) + " bwdcpp\n";
    text += "free lv bwd\nalloc m 512MiB optinit\n";
    const std::string bucket = "stack=model.py:forward:80;torch/nn/modules/"
                               "module.py:_call_impl:1750;train.py:train_step:40;train.py:main:90";
    for (int l = 0; l < 3; ++l)
        text += "alloc b" + std::to_string(l) + " 768MiB " + bucket + "\n";
    return text + "oom 768MiB free=100MiB " + bucket + "\n";
}

} // namespace

class TestGeneralize : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    // FSDP2's foreach_reduce allocates the reduce-scatter output on the reduce-scatter stream and makes
    // every parameter's new sharded gradient a view of it (torch.as_strided over reduce_output): the
    // buffer is the gradient and lives until zero_grad. Its hooks run on the autograd engine's thread.
    void fsdp2ReduceScatterOutputIsTheGradient()
    {
        const auto analysis = test::analyzeTrace(fsdp2FirstStep());
        const DeviceAnalysis& device = *analysis.primary();
        const Allocation* sharded = nullptr;
        const Allocation* input = nullptr;
        for (const Allocation& a : device.allocations) {
            if (a.requestedSize == 256 * MiB && a.phase == Phase::Backward && a.freeEvent < 0)
                sharded = &a;
            if (a.requestedSize == 1024 * MiB && a.phase == Phase::Backward && a.category == Category::Communication)
                input = &a;
        }
        QVERIFY2(sharded, "the reduce-scatter output was not born in backward");
        QCOMPARE(sharded->category, Category::Gradients);
        // The reduce-scatter input, freed once the collective is done, stays a collective's buffer.
        QVERIFY(input);
        const auto diagnoses = diagnoseSnapshot(analysis, {});
        QVERIFY(!diagnoses.empty());
        QCOMPARE(diagnoses.front().id, DiagnosisId::OptimizerStep2);
        QVERIFY(!test::findDiagnosis(diagnoses, DiagnosisId::CommunicationBuffers));
    }

    // The all-gathered parameters FSDP2 keeps with reshard_after_forward=False are not storage of
    // their own: they stay communication.
    void fsdp2KeptAllGathersStayCommunication()
    {
        const auto analysis = test::analyzeTrace(lines({ "alloc p 256MiB " + fsdp2ShardedParam,
            "alloc ag 1GiB " + fsdp2UnshardForward, "alloc a 512MiB fwd", "oom 2GiB free=100MiB fwd" }));
        QCOMPARE(allocationOfSize(*analysis.primary(), 1024 * MiB).category, Category::Communication);
    }

    // ZeRO-3 gathers parameters inside its own no_grad hooks during a training forward: the forward
    // stays a forward, the gathered layers are not outputs kept per batch, and the fix speaks
    // DeepSpeed's settings.
    void zero3GathersAreNotEvaluation()
    {
        const auto analysis = test::analyzeTrace(zero3Prefetch());
        const DeviceAnalysis& device = *analysis.primary();
        QCOMPARE(device.ooms.back().phase, Phase::Forward);
        const auto diagnoses = diagnoseSnapshot(analysis, {});
        QVERIFY(!diagnoses.empty());
        QVERIFY(!test::findDiagnosis(diagnoses, DiagnosisId::EvalAccumulation));
        const Diagnosis& top = diagnoses.front();
        QCOMPARE(top.id, DiagnosisId::CommunicationBuffers);
        QCOMPARE(top.fixes.front().id(), std::string("fewer_all_gathers_in_flight"));
        QVERIFY(top.fixes.front().snippet.find("stage3_prefetch_bucket_size") != std::string::npos);
        QVERIFY(top.fixes.front().snippet.find("stage3_max_live_parameters") != std::string::npos);
        for (const Fix& fix : top.fixes)
            QVERIFY2(fix.snippet.find("fully_shard") == std::string::npos, fix.snippet.c_str());
        QVERIFY(test::hasEvidence(top, "DeepSpeed ZeRO"));
    }

    // A decorator of evaluation around the model's forward still says evaluation.
    void noGradAroundTheForwardIsEvaluation()
    {
        const std::string evaluate = "stack=model.py:forward:12;torch/nn/modules/module.py:_call_impl:1750;"
                                     "train.py:run_epoch_end:60;torch/utils/_contextlib.py:decorate_context:116;"
                                     "train.py:main:95";
        const auto analysis
            = test::analyzeTrace(lines({ "alloc w 1GiB load", "alloc x 64MiB " + evaluate, "oom 1GiB free=1MiB fwd" }));
        QCOMPARE(allocationOfSize(*analysis.primary(), 64 * MiB).phase, Phase::Eval);
    }

    // TRL GRPO with vLLM colocated and no sleep mode fails in step 1's backward: putting the engine to
    // sleep alone makes the step fit, so that leads; nothing claims steps before the first one.
    void colocatedEngineLeadsTheFirstBackward()
    {
        std::string text = lines(
            { "alloc w 2GiB load", "alloc ew 2GiB pool=0,1 " + vllmWeights, "alloc kv 16GiB pool=0,2 " + vllmKv });
        for (int l = 0; l < 8; ++l)
            text += "alloc a" + std::to_string(l) + " 512MiB fwd\n";
        text += "alloc lv 1MiB loss\n";
        for (int l = 7; l >= 4; --l)
            text += "alloc g" + std::to_string(l) + " 256MiB grad\nfree a" + std::to_string(l) + " bwdcpp\n";
        text += "alloc t 1GiB bwdcpp\noom 1GiB free=100MiB bwdcpp\n";
        const auto diagnoses = test::diagnoseTrace(text);
        QVERIFY(!diagnoses.empty());
        QCOMPARE(diagnoses.front().id, DiagnosisId::ColocatedEngine);
        QCOMPARE(diagnoses.front().fixes.front().id(), std::string("free_engine_cache_before_update"));
        QVERIFY(test::hasEvidence(diagnoses.front(), "the phase fits to its end"));
        const Diagnosis* backward = test::findDiagnosis(diagnoses, DiagnosisId::FirstBackward);
        QVERIFY(backward);
        QVERIFY(test::hasEvidence(*backward, "ranked below colocated_engine"));
        QVERIFY(!anyEvidence(diagnoses, "the steps before it"));
    }

    // An evaluation forward captured into a graph's private pool that fails inside the capture: the
    // pool routing shows the capture, and nothing kept from batches that ended piles up.
    void captureDuringEvaluationIsGraphCapture()
    {
        const std::string evaluate = "stack=model.py:forward:12;torch/nn/modules/module.py:_call_impl:1750;"
                                     "train.py:evaluate:60;torch/utils/_contextlib.py:decorate_context:116;"
                                     "train.py:main:95";
        std::string text = "alloc w 2GiB load\n";
        // Eager warm-up batches on a side stream, as PyTorch's CUDA graph notes run them, each freed.
        for (int i = 0; i < 3; ++i) {
            const std::string n = std::to_string(i);
            text += "alloc x" + n + " 256MiB stream=7 " + evaluate + "\nfree x" + n + " stream=7 " + evaluate + "\n";
        }
        // The capture on torch.cuda.graph's capture stream: every request on it goes to pool (1, 0).
        for (int i = 0; i < 6; ++i)
            text += "alloc c" + std::to_string(i) + " 512MiB stream=9 pool=1,0 " + evaluate + "\n";
        text += "oom 512MiB free=100MiB stream=9 " + evaluate + "\n";
        const auto diagnoses = test::diagnoseTrace(text);
        QVERIFY(!diagnoses.empty());
        QCOMPARE(diagnoses.front().id, DiagnosisId::GraphCapture);
        if (const Diagnosis* eval = test::findDiagnosis(diagnoses, DiagnosisId::EvalAccumulation)) {
            QVERIFY(eval->confidence < diagnoses.front().confidence);
            QVERIFY(test::hasEvidence(*eval, "CUDA graph's"));
        }
    }

    // tests/data/job's rank 6: step 1 completed, step 2's batch is 384 tokens against 256 and its
    // backward fails. One completed step measures what the same model needed for a whole step: the
    // failing one needs far more, so the batch grew; the backward is where it showed.
    void secondBatchLargerThanTheFirst()
    {
        Case input;
        addFile(input, QString(test::testDataDir() + QStringLiteral("/job/rank6.pickle")).toStdString());
        const CaseAnalysis analysis = analyzeCase(input);
        QVERIFY(!analysis.diagnoses.empty());
        QCOMPARE(analysis.diagnoses.front().id, DiagnosisId::LongestBatch);
        // Its backward held more activations at the failure than step 1's backward at its peak: not
        // the same working set one step on.
        const Diagnosis* backward = test::findDiagnosis(analysis.diagnoses, DiagnosisId::FirstBackward);
        QVERIFY(backward);
        QVERIFY(!test::hasEvidence(*backward, "the same backward working set"));
        QVERIFY(backward->confidence < analysis.diagnoses.front().confidence);
    }

    // With one completed step seen from its start, a failing step needing far more activations than
    // that step grew by is a larger batch, even where no call site matches to compare sizes.
    void oneCompletedStepMeasuresTheBatch()
    {
        const auto diagnoses = test::diagnoseTrace(twoStepsSecondLarger());
        QVERIFY(!diagnoses.empty());
        QCOMPARE(diagnoses.front().id, DiagnosisId::LongestBatch);
        QVERIFY(test::hasEvidence(diagnoses.front(), "this batch is larger than the one before it"));
    }

    // The driver granted this process more than it could hold at the failure: something outside it
    // took the difference, whatever the card's size (no message, no nvidia-smi).
    void cardTakenSinceIsOtherProcess()
    {
        const auto diagnoses
            = test::diagnoseTrace(lines({ "alloc w 1GiB load", "segment_alloc s1 6GiB", "alloc x 6GiB fwd in=s1",
                "free x bwd", "segment_free s1", "alloc y 512MiB fwd", "oom 2GiB free=100MiB fwd" }));
        QVERIFY(!diagnoses.empty());
        QCOMPARE(diagnoses.front().id, DiagnosisId::OtherProcess);
        QVERIFY(diagnoses.front().confidence >= 0.5);
        QVERIFY(test::hasEvidence(diagnoses.front(), "taken by something outside it"));
        // A process that never held more than now says nothing of the kind.
        const auto alone = test::diagnoseTrace(lines(
            { "alloc w 1GiB load", "alloc x 6GiB fwd", "free x bwd", "alloc y 512MiB fwd", "oom 6GiB free=1MiB fwd" }));
        const Diagnosis* other = test::findDiagnosis(alone, DiagnosisId::OtherProcess);
        QVERIFY(!other || !test::hasEvidence(*other, "taken by something outside it"));
    }

    // DeepSpeed's engine steps the optimizer once while it is built (initialize_optimizer_states):
    // set-up, not a training step. The moments it makes are optimizer state, the steps after it are
    // told apart by their forward following a backward, and the state is not the lazy state of a
    // first optimizer.step().
    void zero3InitialOptimizerStepIsSetUp()
    {
        const auto analysis = test::analyzeTrace(zero3EngineThenTwoSteps());
        const DeviceAnalysis& device = *analysis.primary();
        const Allocation& moment = allocationOfSize(device, 2048 * MiB);
        QCOMPARE(moment.phase, Phase::Load);
        for (const Allocation& a : device.allocations) {
            if (a.requestedSize == 2048 * MiB)
                QCOMPARE(a.category, Category::OptimizerState);
        }
        QCOMPARE(device.ooms.back().step, 2);
        const auto diagnoses = diagnoseSnapshot(analysis, {});
        QVERIFY(!diagnoses.empty());
        QVERIFY(diagnoses.front().id != DiagnosisId::OptimizerStep2);
        const Diagnosis* lazy = test::findDiagnosis(diagnoses, DiagnosisId::OptimizerStep2);
        QVERIFY(!lazy || !test::hasEvidence(*lazy, "first appeared in step"));
    }

    // The allocator waits for every pending free before it gives up (release_cached_blocks), so at
    // the failure pending frees can only have left the cache split: when the live tensors and the
    // request exceed what the process holds, they are not the cause; when they fit, they may be.
    void pendingFreesDrainBeforeTheFailure()
    {
        const auto overflow = test::diagnoseTrace(pendingWindowThenOom(false));
        QVERIFY(!overflow.empty());
        QVERIFY(!test::findDiagnosis(overflow, DiagnosisId::PendingFrees));
        const auto split = test::diagnoseTrace(pendingWindowThenOom(true));
        QVERIFY(test::findDiagnosis(split, DiagnosisId::PendingFrees));
    }

    // Recording into a pool whose free blocks together would hold the request but none alone: the
    // pool is the capture's own, which expandable segments never serve and nothing releases during
    // a capture, so the captures' shapes are the cause and the split cache how it showed.
    void captureIntoASplitPoolIsGraphCapture()
    {
        const auto diagnoses = test::diagnoseTrace(treesRecordEachLength());
        QVERIFY(!diagnoses.empty());
        const Diagnosis& top = diagnoses.front();
        QCOMPARE(top.id, DiagnosisId::GraphCapture);
        QVERIFY(test::hasEvidence(top, "the capturing pool, split among the blocks"));
        QCOMPARE(top.fixes.front().id(), std::string("fewer_graph_shapes"));
        const Diagnosis* fragmentation = test::findDiagnosis(diagnoses, DiagnosisId::Fragmentation);
        QVERIFY(!fragmentation || fragmentation->confidence < top.confidence);
        // Nor does the split cache offer expandable segments: the allocator never uses them for a
        // private pool.
        if (fragmentation) {
            for (const Fix& fix : fragmentation->fixes)
                QVERIFY(fix.kind != FixKind::ExpandableSegments);
        }
    }
};

QTEST_GUILESS_MAIN(TestGeneralize)
#include "tst_generalize.moc"
