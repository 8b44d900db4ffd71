// What distributed training and CUDA graphs add (issue 22): activation checkpointing's recompute,
// the communication category, pending frees, other streams' cache, and the diagnoses
// pending_frees, communication_buffers and graph_capture, on compact traces whose stacks are the
// frames PyTorch, FSDP/FSDP2, DDP, Megatron and torch.cuda.graphs record.
#include "common/analysisfixtures.h"
#include "common/testutil.h"
#include "common/tracediagnosis.h"
#include "core/analysis/pendingfrees.h"
#include "core/analysis/recomputespans.h"
#include "core/caseanalysis.h"
#include "core/diagnosis/catalogue.h"
#include "core/diagnosis/ranking.h"
#include "core/diagnosis/snapshotdiagnosis.h"
#include "core/diagnosis/textdiagnosis.h"
#include "core/job/jobassembly.h"
#include "core/jsonexport.h"
#include "core/presentation/pendingfreesjson.h"
#include "parsers/snapshotreader.h"
#include "parsers/text/textparser.h"

#include <QTest>

#include <algorithm>
#include <string>

using namespace oomlens;

namespace {

constexpr uint64_t MiB = uint64_t(1) << 20;

// The model's forward as the engine thread re-runs it for non-reentrant checkpointing (no Python
// frames above the unpack hook), and for the reentrant variant under CheckpointFunction.backward.
const std::string recomputeNonReentrant
    = "stack=model.py:forward:12;torch/nn/modules/module.py:_call_impl:1750;"
      "torch/utils/checkpoint.py:recompute_fn:1480;torch/utils/checkpoint.py:unpack_hook:1125";
const std::string recomputeReentrant
    = "stack=model.py:forward:12;torch/nn/modules/module.py:_call_impl:1750;torch/utils/checkpoint.py:backward:311;"
      "torch/autograd/function.py:apply:307";
// The reentrant variant's own backward call under the same frame: backward's work, not recompute.
const std::string reentrantBackward
    = "stack=torch/autograd/__init__.py:backward:266;torch/utils/checkpoint.py:backward:320;"
      "torch/autograd/function.py:apply:307";
// The checkpointed block's input, saved in forward.
const std::string checkpointedForward
    = "stack=model.py:forward:30;torch/utils/checkpoint.py:checkpoint:495;model.py:forward:50;"
      "torch/nn/modules/module.py:_call_impl:1750;train.py:train_step:40;train.py:main:90";

const std::string fsdp2AllGather
    = "stack=torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py:foreach_all_gather:240;"
      "torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py:unshard:290;"
      "torch/distributed/fsdp/_fully_shard/_fsdp_state.py:_pre_forward:230;"
      "torch/nn/modules/module.py:_call_impl:1750;model.py:forward:50;train.py:train_step:40;train.py:main:90";
const std::string fsdp1Unshard
    = "stack=torch/distributed/fsdp/_flat_param.py:_alloc_padded_unsharded_flat_param:1400;"
      "torch/distributed/fsdp/_flat_param.py:unshard:1350;torch/distributed/fsdp/_runtime_utils.py:_unshard:300;"
      "torch/distributed/fsdp/_runtime_utils.py:_pre_forward_unshard:520;"
      "torch/nn/modules/module.py:_call_impl:1750;model.py:forward:50;train.py:train_step:40;train.py:main:90";
const std::string fsdp2Reduce = "stack=torch/distributed/fsdp/_fully_shard/_fsdp_collectives.py:foreach_reduce:420;"
                                "torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py:post_backward:470;"
                                "torch/autograd/graph.py:_engine_run_backward:744;"
                                "torch/autograd/__init__.py:backward:266;torch/_tensor.py:backward:521;"
                                "train.py:train_step:43;train.py:main:90";
const std::string ddpBuckets
    = "stack=??:c10d::Reducer::initialize_buckets(std::vector<std::vector<unsigned long>>):0;"
      "torch/nn/parallel/distributed.py:_ddp_init_helper:1210;torch/nn/parallel/distributed.py:__init__:820;"
      "train.py:main:70";
// ZeRO-1/2's backward allocates the IPG buffers itself, then runs the loss's backward under the
// same frame: the first is the bucket, the second (autograd inside) is not.
const std::string zeroIpgBuffer
    = "stack=??:at::native::empty_cuda:0;deepspeed/runtime/zero/stage_1_and_2.py:backward:2037;"
      "deepspeed/runtime/engine.py:backward:2100;train.py:train_step:43;train.py:main:90";
const std::string zeroAutogradInside
    = "stack=??:torch::autograd::AccumulateGrad::apply:0;torch/autograd/graph.py:_engine_run_backward:744;"
      "torch/autograd/__init__.py:backward:266;torch/_tensor.py:backward:521;"
      "deepspeed/runtime/fp16/loss_scaler.py:backward:63;deepspeed/runtime/zero/stage_1_and_2.py:backward:2062;"
      "deepspeed/runtime/engine.py:backward:2100;train.py:train_step:43;train.py:main:90";
// FSDP2 without gradient sync: the unsharded gradient upcast to reduce_dtype and kept.
const std::string fsdp2DeferredGradient
    = "stack=torch/distributed/fsdp/_fully_shard/_fsdp_param.py:to_accumulated_grad_if_needed:725;"
      "torch/distributed/fsdp/_fully_shard/_fsdp_param_group.py:post_backward:470;"
      "torch/distributed/fsdp/_fully_shard/_fsdp_state.py:_post_backward:280;"
      "torch/autograd/graph.py:_engine_run_backward:744;torch/autograd/__init__.py:backward:266;"
      "torch/_tensor.py:backward:521;train.py:train_step:43;train.py:main:90";
// FSDP2's fully_shard replacing each parameter by its shard, with and without the FSDPParam frame.
const std::string fsdp2ShardedParam
    = "stack=torch/distributed/fsdp/_fully_shard/_fsdp_param.py:_init_sharded_param:380;"
      "torch/distributed/fsdp/_fully_shard/_fully_shard.py:fully_shard:210;"
      "train.py:setup:60;train.py:main:70";
const std::string fsdp2FullyShardInline
    = "stack=??:at::native::empty_cuda:0;torch/distributed/fsdp/_fully_shard/_fully_shard.py:fully_shard:210;"
      "train.py:setup:60;train.py:main:70";
const std::string fsdp2FullyShardCallsModel
    = "stack=model.py:reset_parameters:30;torch/distributed/fsdp/_fully_shard/_fully_shard.py:fully_shard:215;"
      "train.py:setup:60;train.py:main:70";
const std::string megatronGradBuffer = "stack=megatron/core/distributed/param_and_grad_buffer.py:__init__:560;"
                                       "megatron/core/distributed/distributed_data_parallel.py:__init__:200;"
                                       "train.py:main:70";
// Megatron-Core's _ParamAndGradBuffer constructor: param_data (distributed optimizer) a few lines
// above grad_data.
const std::string megatronParamData = "stack=megatron/core/distributed/param_and_grad_buffer.py:__init__:592;"
                                      "megatron/core/distributed/distributed_data_parallel.py:__init__:246;"
                                      "train.py:main:70";
const std::string megatronGradData = "stack=megatron/core/distributed/param_and_grad_buffer.py:__init__:608;"
                                     "megatron/core/distributed/distributed_data_parallel.py:__init__:246;"
                                     "train.py:main:70";
// DeepSpeed's ZeRO-1/2 constructor: the flat bf16 group moved to the GPU, then the fp32 master
// partition cloned from it further down; what its helpers allocate under it is theirs.
const std::string zeroFlatParameters
    = "stack=??:at::native::empty_cuda:0;deepspeed/runtime/zero/stage_1_and_2.py:__init__:352;"
      "deepspeed/runtime/engine.py:_configure_zero_optimizer:1604;train.py:main:70";
const std::string zeroMasterPartition
    = "stack=??:at::native::empty_cuda:0;deepspeed/runtime/zero/stage_1_and_2.py:__init__:380;"
      "deepspeed/runtime/engine.py:_configure_zero_optimizer:1604;train.py:main:70";
const std::string zeroInitHelper
    = "stack=deepspeed/runtime/zero/stage_1_and_2.py:initialize_gradient_partitioning_data_structures:700;"
      "deepspeed/runtime/zero/stage_1_and_2.py:__init__:455;"
      "deepspeed/runtime/engine.py:_configure_zero_optimizer:1604;train.py:main:70";
const std::string zero3MasterPartition = "stack=deepspeed/runtime/zero/stage3.py:_create_fp32_partitions:950;"
                                         "deepspeed/runtime/zero/stage3.py:__init__:330;train.py:main:70";
const std::string graphCaptureStack = "stack=model.py:forward:12;torch/nn/modules/module.py:_call_impl:1750;"
                                      "torch/cuda/graphs.py:__enter__:186;serve.py:capture:40;serve.py:main:90";

const Allocation& allocationOfSize(const DeviceAnalysis& device, uint64_t requested)
{
    for (const Allocation& a : device.allocations) {
        if (a.requestedSize == requested)
            return a;
    }
    qFatal("no allocation of that size");
    return device.allocations.front();
}

std::string reasonOf(const DeviceAnalysis& device, const Allocation& a)
{
    return device.reasons[a.reason];
}

bool hasFix(const std::vector<Diagnosis>& diagnoses, const std::string& id)
{
    return std::any_of(diagnoses.begin(), diagnoses.end(), [&](const Diagnosis& d) {
        return std::any_of(d.fixes.begin(), d.fixes.end(), [&](const Fix& f) { return f.id() == id; });
    });
}

std::string trace(std::initializer_list<std::string> lines)
{
    std::string text;
    for (const auto& line : lines)
        text += line + "\n";
    return text;
}

} // namespace

class TestDistributed : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void recomputedTensorsAreActivations()
    {
        const auto analysis = test::analyzeTrace(trace({ "alloc w 64MiB load",
            "alloc in 4MiB fwd " + checkpointedForward, "alloc r1 32MiB " + recomputeNonReentrant,
            "alloc r2 24MiB " + recomputeReentrant, "alloc gi 8MiB " + reentrantBackward, "alloc g 64MiB grad",
            "free r1 bwd", "free r2 bwd", "free gi bwd", "free in bwd", "alloc kept 16MiB " + recomputeNonReentrant }));
        const DeviceAnalysis& device = *analysis.primary();
        for (uint64_t size : { 32 * MiB, 24 * MiB, 16 * MiB }) {
            const Allocation& r = allocationOfSize(device, size);
            QCOMPARE(r.category, Category::Activations);
            QVERIFY2(reasonOf(device, r).find("recomputed") != std::string::npos, reasonOf(device, r).c_str());
        }
        // Backward's own work under the reentrant frame stays backward's, the gradient a gradient.
        QCOMPARE(allocationOfSize(device, 8 * MiB).category, Category::Temporaries);
        QCOMPARE(allocationOfSize(device, 64 * MiB + 0).category, Category::Parameters);
        // The timeline marks the two runs of recomputation (r1, r2; then kept), not the backward between.
        const auto spans = recomputeSpans(*analysis.snapshot, device);
        QCOMPARE(spans.size(), size_t(2));
        QVERIFY(spans[0].lastEvent > spans[0].firstEvent);
        QCOMPARE(spans[0].name, std::string(recomputeSpanName));
    }

    void checkpointingOnIsNeverRecommended()
    {
        const std::string text = trace({ "alloc w 512MiB load", "alloc in 64MiB fwd " + checkpointedForward,
            "alloc a 256MiB fwd", "alloc r1 512MiB " + recomputeNonReentrant, "oom 1GiB free=20MiB bwd" });
        const auto diagnoses = diagnoseSnapshot(test::analyzeTrace(text), {});
        QVERIFY(!diagnoses.empty());
        QVERIFY(!hasFix(diagnoses, "checkpointing"));
        QVERIFY(hasFix(diagnoses, "offload_checkpointed_inputs"));
        // Without checkpointing frames the same failure gets the classic rung.
        const std::string plain = trace({ "alloc w 512MiB load", "alloc in 64MiB fwd", "alloc a 256MiB fwd",
            "alloc r1 512MiB fwd", "oom 1GiB free=20MiB bwd" });
        const auto classic = diagnoseSnapshot(test::analyzeTrace(plain), {});
        QVERIFY(hasFix(classic, "checkpointing"));
        QVERIFY(!hasFix(classic, "offload_checkpointed_inputs"));
    }

    void checkpointingInTheTracebackIsOn()
    {
        // Hugging Face's gradient checkpointing failing inside the recompute: the traceback shows it.
        const std::string log = R"(Traceback (most recent call last):
  File "/opt/venv/lib/python3.11/site-packages/torch/autograd/graph.py", line 825, in _engine_run_backward
    return Variable._execution_engine.run_backward(
  File "/opt/venv/lib/python3.11/site-packages/torch/utils/checkpoint.py", line 1129, in unpack_hook
    frame.recompute_fn(*args)
  File "/opt/venv/lib/python3.11/site-packages/torch/utils/checkpoint.py", line 1512, in recompute_fn
    fn(*args, **kwargs)
  File "/opt/venv/lib/python3.11/site-packages/transformers/models/llama/modeling_llama.py", line 330, in forward
    attn_output = self.o_proj(attn_output)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.25 GiB of which 1.20 GiB is free. Including non-PyTorch memory, this process has 78.04 GiB memory in use. Of the allocated memory 70.10 GiB is allocated by PyTorch, and 6.50 GiB is reserved by PyTorch but unallocated.
)";
        const TextFindings findings = parseText(log);
        QVERIFY(!findings.oomMessages.empty());
        const auto diagnoses = diagnoseOomMessage(findings.oomMessages.front(), findings);
        QVERIFY(!diagnoses.empty());
        QVERIFY(!hasFix(diagnoses, "checkpointing"));
        QVERIFY(hasFix(diagnoses, "offload_checkpointed_inputs"));
        // The same failure without checkpointing's frames gets the classic rung.
        std::string plain = log;
        for (size_t at = plain.find("torch/utils/checkpoint.py"); at != std::string::npos;
             at = plain.find("torch/utils/checkpoint.py"))
            plain.replace(at, 25, "mylib/recomputation.py");
        const TextFindings plainFindings = parseText(plain);
        QVERIFY(hasFix(diagnoseOomMessage(plainFindings.oomMessages.front(), plainFindings), "checkpointing"));
    }

    void checkpointingFromRecipeLines_data()
    {
        QTest::addColumn<QString>("line");
        QTest::addColumn<bool>("on");
        QTest::newRow("hf args") << "TrainingArguments(output_dir='out', bf16=True, gradient_checkpointing=True)"
                                 << true;
        QTest::newRow("hf dump") << "gradient_checkpointing=True," << true;
        QTest::newRow("yaml") << "gradient_checkpointing: true" << true;
        QTest::newRow("json") << R"({"per_device_train_batch_size": 4, "gradient_checkpointing": true})" << true;
        QTest::newRow("flag") << "accelerate launch train.py --bf16 --gradient_checkpointing --max_steps 10" << true;
        QTest::newRow("enable call") << "model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={...})"
                                     << true;
        QTest::newRow("torchtune") << "enable_activation_checkpointing: True" << true;
        QTest::newRow("megatron") << "  recompute_granularity ........................... full" << true;
        QTest::newRow("megatron flag") << "torchrun pretrain_gpt.py --recompute-granularity selective" << true;
        QTest::newRow("hf warning") << "`use_cache=True` is incompatible with gradient checkpointing. Setting "
                                       "`use_cache=False`."
                                    << true;
        QTest::newRow("off") << "gradient_checkpointing=False," << false;
        QTest::newRow("off yaml") << "activation_checkpointing: false" << false;
        QTest::newRow("kwargs only") << "gradient_checkpointing_kwargs={'use_reentrant': False}" << false;
        QTest::newRow("megatron none") << "  recompute_granularity ........................... None" << false;
    }

    void checkpointingFromRecipeLines()
    {
        QFETCH(QString, line);
        QFETCH(bool, on);
        // The log's recipe line, then a failure whose traceback shows no checkpointing frame.
        const std::string log = line.toStdString() + "\n" + plainBackwardFailure;
        const TextFindings findings = parseText(log);
        QVERIFY(!findings.oomMessages.empty());
        const OomMessage& message = findings.oomMessages.front();
        QCOMPARE(message.recipe.activationCheckpointing.value_or(false), on);
        const auto diagnoses = diagnoseOomMessage(message, findings);
        QVERIFY(!diagnoses.empty());
        QCOMPARE(hasFix(diagnoses, "checkpointing"), !on);
        QCOMPARE(hasFix(diagnoses, "offload_checkpointed_inputs"), on);
    }

    void laterRecipeLineOverrides()
    {
        const std::string log
            = "gradient_checkpointing: true\n# resumed with\ngradient_checkpointing=False\n" + plainBackwardFailure;
        const TextFindings findings = parseText(log);
        QCOMPARE(findings.oomMessages.front().recipe.activationCheckpointing, std::optional<bool>(false));
        QVERIFY(hasFix(diagnoseOomMessage(findings.oomMessages.front(), findings), "checkpointing"));
    }

    void snapshotCheckpointingCarriesToTheText()
    {
        // The snapshot's stacks show checkpointing; the pasted message alone does not.
        Case input;
        input.snapshots.push_back(
            test::traceSnapshot(trace({ "alloc w 1GiB load", "alloc in1 256MiB " + checkpointedForward,
                "alloc r1 512MiB " + recomputeNonReentrant, "alloc g 1GiB grad", "oom 2GiB free=100MiB bwd" })));
        input.text = parseText(plainBackwardFailure);
        const CaseAnalysis analysis = analyzeCase(input);
        QVERIFY(!analysis.diagnoses.empty());
        QVERIFY(!hasFix(analysis.diagnoses, "checkpointing"));
        // The message alone still gets the classic rung: nothing in it says checkpointing is on.
        QVERIFY(hasFix(diagnoseText(input.text), "checkpointing"));
    }

    void collectivesBandAsCommunication()
    {
        const auto analysis = test::analyzeTrace(
            trace({ "alloc w 64MiB load", "alloc ag 40MiB " + fsdp2AllGather, "alloc ag1 36MiB " + fsdp1Unshard,
                "free ag fwd", "alloc rs 30MiB " + fsdp2Reduce, "alloc sg 10MiB " + fsdp2Reduce, "free rs bwd",
                "alloc m 20MiB optinit", "free sg zero", "alloc gb 50MiB " + megatronGradBuffer }));
        const DeviceAnalysis& device = *analysis.primary();
        QCOMPARE(allocationOfSize(device, 40 * MiB).category, Category::Communication);
        QCOMPARE(allocationOfSize(device, 36 * MiB).category, Category::Communication);
        QCOMPARE(allocationOfSize(device, 30 * MiB).category, Category::Communication);
        // The reduction's output kept until the optimizer is the sharded gradient itself.
        QCOMPARE(allocationOfSize(device, 10 * MiB).category, Category::Gradients);
        // Megatron's contiguous grad buffer is the storage, whatever collective runs on it.
        QVERIFY(allocationOfSize(device, 50 * MiB).category != Category::Communication);
    }

    void fsdp2ShardedParametersAreParameters()
    {
        const auto analysis = test::analyzeTrace(
            trace({ "alloc p1 48MiB " + fsdp2ShardedParam, "alloc p2 24MiB " + fsdp2FullyShardInline,
                "alloc m 12MiB " + fsdp2FullyShardCallsModel, "alloc a 8MiB fwd", "oom 64MiB free=10MiB fwd" }));
        const DeviceAnalysis& device = *analysis.primary();
        QCOMPARE(allocationOfSize(device, 48 * MiB).category, Category::Parameters);
        QCOMPARE(allocationOfSize(device, 24 * MiB).category, Category::Parameters);
        QVERIFY(reasonOf(device, allocationOfSize(device, 48 * MiB)).find("fully_shard") != std::string::npos);
        // What fully_shard calls is decided by its own frames, not as a shard.
        QVERIFY(reasonOf(device, allocationOfSize(device, 12 * MiB)).find("fully_shard") == std::string::npos);
    }

    // The buffers the frameworks allocate as the state's own storage band as what they store: the
    // line of the constructor that made each tells which of its buffers it is.
    void frameworkStorageBandsAsWhatItStores()
    {
        const auto megatron = test::analyzeTrace(trace({ "alloc p 40MiB " + megatronParamData,
            "alloc g 80MiB " + megatronGradData, "alloc a 8MiB fwd", "oom 64MiB free=10MiB fwd" }));
        QCOMPARE(allocationOfSize(*megatron.primary(), 40 * MiB).category, Category::Parameters);
        QCOMPARE(allocationOfSize(*megatron.primary(), 80 * MiB).category, Category::Gradients);
        QVERIFY(reasonOf(*megatron.primary(), allocationOfSize(*megatron.primary(), 80 * MiB)).find("main_grad")
            != std::string::npos);
        // Without the distributed optimizer there is one buffer only, grad_data.
        const auto gradsOnly = test::analyzeTrace(
            trace({ "alloc w 40MiB load", "alloc g 80MiB " + megatronGradData, "alloc a 8MiB fwd" }));
        QCOMPARE(allocationOfSize(*gradsOnly.primary(), 80 * MiB).category, Category::Gradients);

        const auto zero = test::analyzeTrace(
            trace({ "alloc flat 64MiB " + zeroFlatParameters, "alloc master 16MiB " + zeroMasterPartition,
                "alloc part 6MiB " + zeroInitHelper, "alloc m3 12MiB " + zero3MasterPartition, "alloc a 8MiB fwd" }));
        const DeviceAnalysis& device = *zero.primary();
        QCOMPARE(allocationOfSize(device, 64 * MiB).category, Category::Parameters);
        QCOMPARE(allocationOfSize(device, 16 * MiB).category, Category::OptimizerState);
        QVERIFY(reasonOf(device, allocationOfSize(device, 16 * MiB)).find("master") != std::string::npos);
        QCOMPARE(allocationOfSize(device, 12 * MiB).category, Category::OptimizerState);
        // A helper the constructor calls is not the constructor's own buffer.
        QVERIFY(reasonOf(device, allocationOfSize(device, 6 * MiB)).find("ZeRO") == std::string::npos);
    }

    void ddpBucketsAreGradientsWhenTheyAreTheStorage()
    {
        // gradient_as_bucket_view=False: AccumulateGrad allocates gradients apart, the bucket is a copy.
        const auto copied = test::analyzeTrace(
            trace({ "alloc w 64MiB load", "alloc b 64MiB " + ddpBuckets, "alloc a 8MiB fwd", "alloc g 64MiB grad" }));
        QCOMPARE(allocationOfSize(*copied.primary(), 64 * MiB + 0).category, Category::Parameters);
        bool bucketCommunication = false;
        for (const Allocation& a : copied.primary()->allocations)
            bucketCommunication |= a.category == Category::Communication;
        QVERIFY(bucketCommunication);
        // gradient_as_bucket_view=True: no gradient is allocated apart; the bucket is the storage.
        const auto views
            = test::analyzeTrace(trace({ "alloc w 64MiB load", "alloc b 64MiB " + ddpBuckets, "alloc a 8MiB fwd" }));
        for (const Allocation& a : views.primary()->allocations)
            QVERIFY(a.category != Category::Communication);
    }

    void zeroIpgBuffersAreCommunication()
    {
        const auto analysis = test::analyzeTrace(trace({ "alloc w 64MiB load", "alloc a 8MiB fwd",
            "alloc ipg 32MiB " + zeroIpgBuffer, "alloc g 16MiB " + zeroAutogradInside }));
        const DeviceAnalysis& device = *analysis.primary();
        QCOMPARE(allocationOfSize(device, 32 * MiB).category, Category::Communication);
        QVERIFY(reasonOf(device, allocationOfSize(device, 32 * MiB)).find("IPG") != std::string::npos);
        // The gradient autograd makes under the same backward frame is no bucket.
        QCOMPARE(allocationOfSize(device, 16 * MiB).category, Category::Gradients);
    }

    void zeroIpgBufferAboveTheDefaultIsTheCause()
    {
        // reduce_bucket_size 2e9 bf16 elements (4 GB): the first buffer fits, the second with
        // overlap_comm fails. At DeepSpeed's default (at most 2 GB each) the two would fit.
        const std::string text = trace({ "alloc w 1GiB load", "alloc a 1GiB fwd", "alloc ipg0 4GiB " + zeroIpgBuffer,
            "oom 4GiB free=1GiB " + zeroIpgBuffer });
        const auto diagnoses = diagnoseSnapshot(test::analyzeTrace(text), {});
        QVERIFY(!diagnoses.empty());
        QCOMPARE(diagnoses.front().id, DiagnosisId::CommunicationBuffers);
        QCOMPARE(diagnoses.front().fixes.front().id(), std::string("bucket_sizes"));
        if (const Diagnosis* backward = test::findDiagnosis(diagnoses, DiagnosisId::FirstBackward))
            QVERIFY(backward->confidence < diagnoses.front().confidence);
        // Buffers at the default size are no cause, however tight the card.
        const std::string small = trace({ "alloc w 1GiB load", "alloc a 1GiB fwd", "alloc ipg0 900MiB " + zeroIpgBuffer,
            "oom 900MiB free=100MiB " + zeroIpgBuffer });
        QVERIFY(
            !test::findDiagnosis(diagnoseSnapshot(test::analyzeTrace(small), {}), DiagnosisId::CommunicationBuffers));
    }

    void deferredGradientsAreCommunication()
    {
        std::string text = "alloc w 2GiB load\nalloc a 200MiB fwd\n";
        for (int layer = 0; layer < 8; ++layer)
            text += "alloc dg" + std::to_string(layer) + " 256MiB " + fsdp2DeferredGradient + "\n";
        text += "oom 400MiB free=50MiB bwd\n";
        const auto analysis = test::analyzeTrace(text);
        QCOMPARE(allocationOfSize(*analysis.primary(), 256 * MiB).category, Category::Communication);
        const auto diagnoses = diagnoseSnapshot(analysis, {});
        QCOMPARE(diagnoses.front().id, DiagnosisId::CommunicationBuffers);
        QCOMPARE(diagnoses.front().fixes.front().id(), std::string("sync_gradients_each_micro_batch"));
        QVERIFY(diagnoses.front().fixes.front().projectedSavingBytes);
        QCOMPARE(uint64_t(*diagnoses.front().fixes.front().projectedSavingBytes), 8 * 256 * MiB);
    }

    void ddpBucketCopiesLeadWithGradientAsBucketView()
    {
        const std::string text = trace({ "alloc w 1GiB load", "alloc b 1GiB " + ddpBuckets, "alloc a 512MiB fwd",
            "alloc g 1GiB grad", "oom 768MiB free=100MiB bwd" });
        const auto diagnoses = diagnoseSnapshot(test::analyzeTrace(text), {});
        const Diagnosis* d = test::findDiagnosis(diagnoses, DiagnosisId::CommunicationBuffers);
        QVERIFY(d);
        QCOMPARE(diagnoses.front().id, DiagnosisId::CommunicationBuffers);
        QCOMPARE(d->fixes.front().id(), std::string("gradient_as_bucket_view"));
        QVERIFY(d->fixes.front().fitsAfter == std::optional<bool>(true));
    }

    void explainedSymptomStaysBelowItsCause()
    {
        // The text may confirm fragmentation after the snapshot's rules found its cause.
        Diagnosis cause = makeDiagnosis(DiagnosisId::CommunicationBuffers, 0.9, {});
        Diagnosis symptom = makeDiagnosis(DiagnosisId::Fragmentation, 0.95, {});
        symptom.evidence.push_back(
            { "ranked below communication_buffers" + std::string(explainsItMark) + "why", std::nullopt });
        std::vector<Diagnosis> diagnoses { symptom, cause };
        rankDiagnoses(diagnoses);
        QCOMPARE(diagnoses.front().id, DiagnosisId::CommunicationBuffers);
        QVERIFY(diagnoses[1].confidence < diagnoses.front().confidence);
        // Without the cause present the symptom keeps its confidence.
        std::vector<Diagnosis> alone { symptom };
        rankDiagnoses(alone);
        QCOMPARE(alone.front().confidence, 0.95);
    }

    void pendingFreesAreMeasured()
    {
        const auto analysis = test::analyzeTrace(pendingTrace());
        const DeviceAnalysis& device = *analysis.primary();
        const PendingFrees p = pendingFrees(*analysis.snapshot, device);
        QCOMPARE(p.windows.size(), size_t(2));
        QCOMPARE(p.maxPendingBytes, 1024 * MiB);
        QCOMPARE(p.segmentsWhilePending, size_t(2));
        QCOMPARE(p.coverableWhilePendingBytes, 1536 * MiB);
        QCOMPARE(p.releasedAtOomBytes, 1024 * MiB);
        QCOMPARE(p.atOomBytes, uint64_t(0));
        QVERIFY(!p.releasers.empty());
        // A free completed at once is no window.
        const auto plain = test::analyzeTrace(trace({ "alloc a 8MiB fwd", "free a fwd", "alloc b 8MiB fwd" }));
        QVERIFY(!pendingFrees(*plain.snapshot, *plain.primary()).any());
    }

    void pendingFreesLeadTheSplitCache()
    {
        const auto diagnoses = diagnoseSnapshot(test::analyzeTrace(pendingTrace()), {});
        QVERIFY(!diagnoses.empty());
        QCOMPARE(diagnosisIdName(diagnoses.front().id), std::string_view("pending_frees"));
        const Diagnosis& d = diagnoses.front();
        QCOMPARE(d.fixes.front().id(), std::string("avoid_record_streams"));
        for (const Fix& f : d.fixes)
            QVERIFY(f.kind != FixKind::MicroBatch);
        // The program's own side stream: only waiting for it helps.
        const auto own = diagnoseSnapshot(test::analyzeTrace(pendingTrace("fwd")), {});
        QCOMPARE(own.front().id, DiagnosisId::PendingFrees);
        QCOMPARE(own.front().fixes.front().id(), std::string("synchronize_before_reuse"));
        // Fragmentation is there, but as the symptom.
        const Diagnosis* fragmentation = test::findDiagnosis(diagnoses, DiagnosisId::Fragmentation);
        QVERIFY(fragmentation);
        QVERIFY(fragmentation->confidence < d.confidence);
    }

    void pendingBlocksAreNotKeptOutputs()
    {
        // A served model's collectives: each layer's output freed by the program, its reuse waiting on
        // the NCCL stream (free_requested, no free_completed). The allocator holds those blocks, not
        // the program: no evaluation outputs were kept.
        auto run = [](bool pending) {
            std::string text = "alloc w 1GiB load\n";
            for (int layer = 0; layer < 8; ++layer) {
                const std::string name = "y" + std::to_string(layer);
                text += "alloc " + name + " 256MiB eval\n";
                if (pending)
                    text += "free_requested " + name + " eval\n";
            }
            return text + "oom 512MiB free=100MiB eval\n";
        };
        const auto held = diagnoseSnapshot(test::analyzeTrace(run(true)), {});
        const Diagnosis* pendingEval = test::findDiagnosis(held, DiagnosisId::EvalAccumulation);
        QVERIFY(!pendingEval || pendingEval->confidence < 0.85);
        QCOMPARE(held.front().id, DiagnosisId::PendingFrees);
        // The same tensors still referenced by the program are kept outputs.
        const auto kept = diagnoseSnapshot(test::analyzeTrace(run(false)), {});
        QCOMPARE(kept.front().id, DiagnosisId::EvalAccumulation);
    }

    void otherStreamsCacheCannotServe()
    {
        // Two segments split by live blocks: 600 MiB free in pieces of 300 MiB.
        auto split = [](const std::string& stream) {
            return trace({ "alloc w 1GiB load", "segment_alloc g1 600MiB " + stream,
                "segment_alloc g2 600MiB " + stream, "alloc a 300MiB fwd in=g1 " + stream,
                "alloc b 300MiB fwd in=g2 " + stream, "oom 400MiB free=100MiB fwd" });
        };
        // On the request's own stream: split cache, fragmentation.
        const auto own = diagnoseSnapshot(test::analyzeTrace(split("stream=0")), {});
        QVERIFY(test::findDiagnosis(own, DiagnosisId::Fragmentation));
        // The same cache on stream 7 could never serve a request on stream 0: no fragmentation of it.
        const auto other = diagnoseSnapshot(test::analyzeTrace(split("stream=7")), {});
        QVERIFY2(!test::findDiagnosis(other, DiagnosisId::Fragmentation),
            "free memory on another stream is no fragmentation of this one");
    }

    void communicationBuffersKeptPerLayer()
    {
        std::string text = "alloc w 2GiB load\n";
        // FSDP with reshard_after_forward=False: every layer's all-gathered parameters kept.
        for (int layer = 0; layer < 8; ++layer)
            text += "alloc ag" + std::to_string(layer) + " 256MiB " + fsdp1Unshard + "\n";
        text += "alloc x 100MiB fwd\noom 400MiB free=50MiB fwd\n";
        const auto diagnoses = diagnoseSnapshot(test::analyzeTrace(text), {});
        const Diagnosis* d = test::findDiagnosis(diagnoses, DiagnosisId::CommunicationBuffers);
        QVERIFY(d);
        QCOMPARE(diagnoses.front().id, DiagnosisId::CommunicationBuffers);
        QCOMPARE(d->fixes.front().id(), std::string("reshard_after_forward"));
        QVERIFY(d->fixes.front().projectedSavingBytes);
        QCOMPARE(uint64_t(*d->fixes.front().projectedSavingBytes), 6 * 256 * MiB);
        // Two in flight are what a pipelined all-gather needs: no diagnosis.
        std::string two = "alloc w 2GiB load\n";
        for (int layer = 0; layer < 2; ++layer)
            two += "alloc ag" + std::to_string(layer) + " 256MiB " + fsdp1Unshard + "\n";
        two += "alloc x 100MiB fwd\noom 400MiB free=50MiB fwd\n";
        QVERIFY(!test::findDiagnosis(diagnoseSnapshot(test::analyzeTrace(two), {}), DiagnosisId::CommunicationBuffers));
    }

    void graphCaptureFailure()
    {
        const std::string text = trace({ "alloc w 256MiB load", "alloc g1 300MiB pool=1,0 " + graphCaptureStack,
            "alloc g2 200MiB pool=1,0 " + graphCaptureStack, "free g1 fwd",
            "alloc g3 400MiB pool=2,0 " + graphCaptureStack, "oom 512MiB free=100MiB " + graphCaptureStack });
        const auto diagnoses = diagnoseSnapshot(test::analyzeTrace(text), {});
        QVERIFY(!diagnoses.empty());
        QCOMPARE(diagnoses.front().id, DiagnosisId::GraphCapture);
        QCOMPARE(diagnoses.front().fixes.front().id(), std::string("share_graph_pool"));
    }

    // torch.cuda.graph's body runs in the caller's frame: nothing in the stacks shows the capture.
    // The allocator does: a stream whose requests go into a graph's pool is capturing.
    static std::string wholeStepCapture(bool eagerAfterCapture)
    {
        std::string text = "alloc w 2GiB load\n";
        // Warm-up iterations on a side stream, as PyTorch's notes have them before a capture: their
        // activations stay cached in that stream's segments.
        for (int i = 0; i < 4; ++i)
            text += "alloc a" + std::to_string(i) + " 1GiB fwd stream=7\n";
        text += "alloc gr 512MiB bwd stream=7\n";
        for (int i = 0; i < 4; ++i)
            text += "free a" + std::to_string(i) + " bwd stream=7\n";
        // The capture on its own stream, into pool (1, 0), with frames of plain forward code.
        text += "alloc c1 600MiB fwd stream=9 pool=1,0\nalloc c2 600MiB fwd stream=9 pool=1,0\n";
        if (eagerAfterCapture)
            text += "alloc e1 100MiB fwd stream=9\n";
        return text + "oom 512MiB free=100MiB fwd stream=9\n";
    }

    void captureSeenThroughItsPool()
    {
        const auto analysis = test::analyzeTrace(wholeStepCapture(false));
        const auto diagnoses = diagnoseSnapshot(analysis, {});
        QVERIFY(!diagnoses.empty());
        QCOMPARE(diagnoses.front().id, DiagnosisId::GraphCapture);
        const Diagnosis& d = diagnoses.front();
        QVERIFY(test::hasEvidence(d, "CUDA graph pool (1, 0)"));
        // The warm-up's 4 GiB cached on stream 7: the capture could neither use nor release it.
        QVERIFY(test::hasEvidence(d, "4.00 GiB sat cached free outside CUDA graph pool (1, 0)"));
        // Sharing pools between graphs does nothing for that: emptying the cache before capturing does.
        QCOMPARE(d.fixes.front().id(), std::string("release_before_capture"));
        if (const Diagnosis* fragmentation = test::findDiagnosis(diagnoses, DiagnosisId::Fragmentation)) {
            QVERIFY(fragmentation->confidence < d.confidence);
            QVERIFY(test::hasEvidence(*fragmentation, "ranked below graph_capture"));
        }
        // Eager work on that stream after the capture went to the default pool: no capture then.
        const auto eager = diagnoseSnapshot(test::analyzeTrace(wholeStepCapture(true)), {});
        const Diagnosis* capture = test::findDiagnosis(eager, DiagnosisId::GraphCapture);
        QVERIFY(!capture || !test::hasEvidence(*capture, "came from inside a CUDA graph capture"));
    }

    void recaptureBesideLiveGraphs()
    {
        // A generation service (forward only, nothing trains) re-captures its graphs into a new pool
        // while the old graphs, their pool and their static outputs are still alive.
        const std::string serve = "stack=model.py:forward:12;torch/nn/modules/module.py:_call_impl:1750;"
                                  "serve.py:capture_all:97;serve.py:reload:140";
        const std::string text
            = trace({ "alloc w 4GiB load", "alloc kv 1GiB load", "alloc o1 1GiB stream=9 pool=1,0 " + serve,
                "alloc s1 512MiB stream=9 pool=1,0 " + serve, "free s1 stream=9 " + serve,
                "alloc o2 700MiB stream=9 pool=2,0 " + serve, "oom 600MiB free=100MiB stream=9 " + serve });
        const auto diagnoses = diagnoseSnapshot(test::analyzeTrace(text), {});
        QVERIFY(!diagnoses.empty());
        QCOMPARE(diagnoses.front().id, DiagnosisId::GraphCapture);
        QVERIFY(test::hasEvidence(diagnoses.front(), "graphs captured before are still alive"));
        QVERIFY(diagnoses.front().summary.find("pools of graphs captured before") != std::string::npos);
        QCOMPARE(diagnoses.front().fixes.front().id(), std::string("release_before_capture"));
        // Nothing shows training: no gradients or optimizer state are projected from the weights.
        QVERIFY(!test::findDiagnosis(diagnoses, DiagnosisId::Capacity));
    }

    void jsonHasPendingFrees()
    {
        Case input;
        input.snapshots.push_back(test::traceSnapshot(pendingTrace()));
        const CaseAnalysis analysis = analyzeCase(input);
        const auto json = pendingFreesToJson(analysis);
        QCOMPARE(json.size(), size_t(1));
        QCOMPARE(json[0]["waited_frees"].get<size_t>(), size_t(2));
        QCOMPARE(json[0]["released_before_oom_bytes"].get<uint64_t>(), 1024 * MiB);
        QCOMPARE(json[0]["segments_reserved_while_pending"].get<size_t>(), size_t(2));
    }

    void rankHoldingMoreOutsidePyTorch()
    {
        std::vector<RankSummary> ranks;
        for (int r = 0; r < 4; ++r) {
            RankSummary rank;
            rank.file = "rank" + std::to_string(r) + ".pickle";
            rank.rank = r;
            rank.peakAllocatedBytes = 40 * 1024 * MiB;
            rank.restOfCardBytes = (r == 3 ? 3500 : 600) * MiB;
            ranks.push_back(rank);
        }
        const JobSummary job = assembleJob(ranks);
        const auto note = std::find_if(job.notes.begin(), job.notes.end(),
            [](const std::string& n) { return n.find("outside PyTorch's allocator") != std::string::npos; });
        QVERIFY(note != job.notes.end());
        QVERIFY(note->rfind("rank 3", 0) == 0);
        QVERIFY(note->find("NCCL") != std::string::npos);
        // Even ranks: no note.
        for (RankSummary& rank : ranks)
            rank.restOfCardBytes = 600 * MiB;
        const JobSummary even = assembleJob(ranks);
        for (const std::string& n : even.notes)
            QVERIFY(n.find("outside PyTorch's allocator") == std::string::npos);
    }

    void realVerlSnapshotPendingBlocks()
    {
        OOMLENS_REQUIRE_SHARED();
        const QString path = test::corpusDir() + QStringLiteral("/snapshots-rl/volcengine__verl__mem.pickle");
        const QByteArray bytes = test::readFile(path);
        const auto read = readSnapshot(std::string_view(bytes.constData(), size_t(bytes.size())));
        QVERIFY(read.snapshot);
        const auto analysis = analyzeSnapshot(read.snapshot);
        const PendingFrees p = pendingFrees(*read.snapshot, *analysis.primary());
        QCOMPARE(p.dumpPendingBlocks, size_t(9)); // the manifest's active_pending_free count
        QVERIFY(p.dumpPendingBytes > 0);
        QVERIFY(p.windows.empty()); // segments only: no trace to read windows from
    }

private:
    // Collective outputs freed while NCCL's stream still uses them (record_stream): the allocator
    // reserves new segments meanwhile, gets the blocks back only when it synchronizes before failing.
    static inline const std::string plainBackwardFailure = R"(Traceback (most recent call last):
  File "/opt/venv/lib/python3.11/site-packages/torch/autograd/graph.py", line 825, in _engine_run_backward
    return Variable._execution_engine.run_backward(
  File "/opt/venv/lib/python3.11/site-packages/transformers/models/llama/modeling_llama.py", line 330, in forward
    attn_output = self.o_proj(attn_output)
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.25 GiB of which 1.20 GiB is free. Including non-PyTorch memory, this process has 78.04 GiB memory in use. Of the allocated memory 70.10 GiB is allocated by PyTorch, and 6.50 GiB is reserved by PyTorch but unallocated.
)";
    static std::string pendingTrace(const std::string& collective = ncclCollective)
    {
        return trace({ "alloc w 1GiB load", "segment_alloc s1 1GiB", "alloc x1 512MiB " + collective + " in=s1",
            "alloc k1 512MiB fwd in=s1", "free_requested x1 fwd", "segment_alloc s2 1GiB",
            "alloc x2 512MiB " + collective + " in=s2", "alloc k2 512MiB fwd in=s2", "free_requested x2 fwd",
            "segment_alloc s3 1GiB", "alloc x3 512MiB " + collective + " in=s3", "alloc k3 512MiB fwd in=s3",
            "free_completed x1", "free_completed x2", "oom 768MiB free=200MiB fwd" });
    }
    static inline const std::string ncclCollective
        = "stack=torch/distributed/distributed_c10d.py:all_gather_into_tensor:3000;model.py:forward:12;"
          "torch/nn/modules/module.py:_call_impl:1750;train.py:train_step:40;train.py:main:90";
};

QTEST_GUILESS_MAIN(TestDistributed)
#include "tst_distributed.moc"
