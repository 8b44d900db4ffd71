// Training and an inference engine on the same GPUs (issue 24): the engines' and RL frameworks'
// frames, the kv_cache band, pools named by what they hold, the RL iteration's phases and the
// colocated_engine diagnosis; the real RL snapshots read in place.
#include "common/analysisfixtures.h"
#include "common/testutil.h"
#include "core/analysis/enginemarkers.h"
#include "core/analysis/poolowners.h"
#include "core/analysis/privatepools.h"
#include "core/analysis/stackfeatures.h"
#include "core/caseanalysis.h"
#include "core/diagnosis/snapshotdiagnosis.h"
#include "core/jsonexport.h"
#include "core/presentation/privatepoolsjson.h"
#include "core/report/htmlreport.h"
#include "parsers/inputloader.h"

#include <QFile>
#include <QTest>

#include <algorithm>

using namespace oomlens;

namespace {

constexpr uint64_t GiB = uint64_t(1) << 30;

// Frames innermost first, as TraceBuilder's stack= takes them.
constexpr const char* vllmKv
    = "stack=\"/usr/lib/python3/dist-packages/vllm/worker/cache_engine.py:_allocate_kv_cache:90;"
      "/usr/lib/python3/dist-packages/vllm/worker/cache_engine.py:__init__:60;"
      "/usr/lib/python3/dist-packages/vllm/worker/worker.py:_init_cache_engine:300;"
      "/opt/verl/verl/workers/fsdp_workers.py:init_model:400\"";
const char* vllmWeights
    = "stack=\"/usr/lib/python3/dist-packages/vllm/model_executor/layers/linear.py:create_weights:120;"
      "/usr/lib/python3/dist-packages/vllm/model_executor/layers/linear.py:__init__:80;"
      "/usr/lib/python3/dist-packages/vllm/worker/model_runner.py:load_model:1100;"
      "/opt/verl/verl/workers/fsdp_workers.py:init_model:390\"";
constexpr const char* rollout
    = "stack=\"/usr/lib/python3/dist-packages/vllm/model_executor/layers/linear.py:forward:300;"
      "/usr/lib/python3/dist-packages/vllm/worker/model_runner.py:execute_model:1600;"
      "/usr/lib/python3/dist-packages/vllm/entrypoints/llm.py:generate:400;"
      "/opt/verl/verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py:generate_sequences:200;"
      "/opt/verl/verl/workers/fsdp_workers.py:generate_sequences:600\"";
constexpr const char* wake = "stack=\"/usr/lib/python3/dist-packages/vllm/entrypoints/llm.py:wake_up:1300;"
                             "/opt/verl/verl/workers/sharding_manager/fsdp_vllm.py:__enter__:90\"";
constexpr const char* weightSync = "stack=\"/opt/verl/verl/workers/sharding_manager/fsdp_vllm.py:__enter__:100;"
                                   "/opt/verl/verl/workers/fsdp_workers.py:generate_sequences:590\"";

// A colocated iteration: the policy (4 GiB weights, 8 GiB Adam state) trains, a vLLM engine starts
// beside it (2 GiB weights, 10 GiB KV cache in MemPools (0, 1) and (0, 2)), rollout fails.
std::string colocatedRun()
{
    return std::string("alloc w 4GiB load\n") + "alloc x 1GiB fwd\nfree x bwd\nalloc g 4GiB grad\n"
        + "alloc s 8GiB optinit\nfree g zero\n" + "alloc ew 2GiB pool=0,1 " + vllmWeights + "\n"
        + "alloc kv 10GiB pool=0,2 " + vllmKv + "\n" + "alloc r1 256MiB " + rollout + "\nfree r1 none\n"
        + "alloc r2 512MiB " + rollout + "\n" + "oom 2GiB free=100MiB " + rollout + "\n";
}

const PoolAtDump* findPool(const PrivatePools& all, PoolId id)
{
    for (const PoolAtDump& p : all.pools) {
        if (p.id == id)
            return &p;
    }
    return nullptr;
}

uint64_t liveBand(const DeviceAnalysis& device, Category category)
{
    uint64_t total = 0;
    for (const Allocation& a : device.allocations) {
        if (a.freeEvent < 0 && a.category == category)
            total += a.blockSize;
    }
    return total;
}

QString rlSnapshot(const char* name)
{
    return test::corpusDir() + QStringLiteral("/snapshots-rl/") + QLatin1String(name);
}

} // namespace

class TestColocated : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void framesNameTheEngine()
    {
        const EngineFrame kv = engineFrame("_allocate_kv_cache", "/x/site-packages/vllm/worker/cache_engine.py");
        QCOMPARE(kv.engine, Engine::Vllm);
        QVERIFY(kv.features & FeatureEngine);
        QVERIFY(kv.features & FeatureKvCache);
        // verl's vllm_rollout folder is verl's code, not vLLM's.
        const EngineFrame verl
            = engineFrame("__init__", "/opt/verl/verl/workers/rollout/vllm_rollout/vllm_rollout_spmd.py");
        QCOMPARE(verl.engine, Engine::None);
        QCOMPARE(verl.features, 0u);
        // vLLM's warm-up forward inside _initialize_kv_caches is not the cache.
        QVERIFY(!(engineFrame("_initialize_kv_caches", "/x/vllm/engine/llm_engine.py").features & FeatureKvCache));
        QVERIFY(engineFrame("_create_buffers", "/x/sglang/srt/mem_cache/memory_pool.py").features & FeatureKvCache);
        QCOMPARE(engineFrame("__init__", "/x/transformers/cache_utils.py").engine, Engine::HuggingFace);
        QVERIFY(engineFrame("wake_up", "/x/vllm/entrypoints/llm.py").features & FeatureWake);
        QVERIFY(engineFrame("resume", "/x/torch_memory_saver/__init__.py").features & FeatureWake);
        QVERIFY(engineFrame("pause", "/x/torch_memory_saver/__init__.py").features & FeatureSleep);
        QVERIFY(engineFrame("update_weights_from_tensor", "/x/sglang/srt/entrypoints/engine.py").features
            & FeatureWeightSync);
        const EngineFrame reload = engineFrame("load_megatron_optimizer", "/opt/verl/verl/utils/megatron_utils.py");
        QVERIFY(reload.features & FeatureReload);
        QVERIFY(reload.features & FeatureMovesOptimizerState);
        QVERIFY(
            engineFrame("offload_fsdp_model_to_cpu", "/opt/verl/verl/utils/fsdp_utils.py").features & FeatureOffload);
        QVERIFY(
            engineFrame("compute_ref_log_prob", "/opt/verl/verl/workers/fsdp_workers.py").features & FeatureReference);
        // OpenRLHF: make_experience scores the samples (reference, reward, values, old log-probs) under
        // no_grad; make_experience_list also generates, and generate_samples / Actor.generate are the rollout.
        QVERIFY(engineFrame("make_experience", "/x/openrlhf/trainer/ppo_utils/experience_maker.py").features
            & FeatureReference);
        QCOMPARE(engineFrame("make_experience_list", "/x/openrlhf/trainer/ppo_utils/experience_maker.py").features, 0u);
        QVERIFY(engineFrame("generate", "/x/openrlhf/models/actor.py").features & FeatureRollout);
        QVERIFY(engineFrame("make_experience_batch", "/x/openrlhf/trainer/ppo_utils/experience_maker.py").features
            & FeatureReference);
        QCOMPARE(engineFrame("make_experience_batch", "/x/openrlhf/trainer/ppo_utils/replay_buffer.py").features, 0u);
        QCOMPARE(engineFrame("make_experience", "/x/coati/experience_maker/naive.py").features, 0u);
        // Training's own names stay training's.
        QCOMPARE(engineFrame("forward", "/x/torch/nn/modules/linear.py").features, 0u);
        QCOMPARE(engineFrame("load_state_dict", "/x/torch/nn/modules/module.py").features, 0u);
    }

    void phaseNamesAreContract()
    {
        QCOMPARE(phaseName(Phase::Rollout), std::string_view("rollout"));
        QCOMPARE(phaseName(Phase::WeightSync), std::string_view("weight_sync"));
        QCOMPARE(phaseName(Phase::Reload), std::string_view("reload"));
        for (int p = 0; p < phaseCount; ++p)
            QCOMPARE(phaseFromName(phaseName(Phase(p))), Phase(p));
        QVERIFY(!isIterationPhase(Phase::Optimizer));
        QVERIFY(isIterationPhase(Phase::Wake));
    }

    void iterationPhasesFromStacks()
    {
        const std::string text = std::string("alloc w 1GiB load\n") + "alloc a 64MiB " + wake + "\n" + "alloc b 64MiB "
            + weightSync + "\n" + "alloc c 64MiB " + rollout + "\nfree c none\nfree b none\n" + "alloc d 64MiB fwd\n";
        const SnapshotAnalysis analysis = test::analyzeTrace(text);
        const DeviceAnalysis& device = *analysis.primary();
        std::vector<Phase> byName;
        for (const Allocation& a : device.allocations)
            byName.push_back(a.phase);
        QCOMPARE(byName.size(), size_t(5));
        QCOMPARE(byName[1], Phase::Wake);
        QCOMPARE(byName[2], Phase::WeightSync);
        QCOMPARE(byName[3], Phase::Rollout);
        QCOMPARE(byName[4], Phase::Forward);
        // Rollout scratch freed within the rollout, a weight-sync buffer kept beyond it.
        QCOMPARE(device.allocations[3].category, Category::Temporaries);
        QCOMPARE(device.allocations[2].category, Category::Communication);
    }

    void kvCacheBandAndEngineWeights()
    {
        const SnapshotAnalysis analysis = test::analyzeTrace(colocatedRun());
        const DeviceAnalysis& device = *analysis.primary();
        QCOMPARE(liveBand(device, Category::KvCache), 10 * GiB);
        bool engineCopy = false;
        for (const Allocation& a : device.allocations) {
            if (a.blockSize == 2 * GiB && a.category == Category::Parameters)
                engineCopy = device.reasons[a.reason].find("rollout engine's copy") != std::string::npos;
        }
        QVERIFY(engineCopy);
        QCOMPARE(device.ooms.back().phase, Phase::Rollout);
        QCOMPARE(device.ooms.back().liveByCategory[size_t(Category::KvCache)], 10 * GiB);
    }

    // A serving engine's own bands: the decode graphs it captures while starting hold activations
    // (not a second copy of the weights), and a failing step's live logits are that step's scratch.
    void servingEngineBands()
    {
        const std::string sglangWeights = "stack=\"/x/sglang/srt/model_loader/loader.py:load_model:381;"
                                          "/x/sglang/srt/model_executor/model_runner.py:initialize:222;/x/sglang/srt/"
                                          "managers/tp_worker.py:__init__:80\"";
        const std::string sglangCapture
            = "stack=\"/x/sglang/srt/model_executor/cuda_graph_runner.py:capture_one_batch_size:521;"
              "/x/sglang/srt/model_executor/cuda_graph_runner.py:capture:398;"
              "/x/sglang/srt/model_executor/cuda_graph_runner.py:__init__:300;"
              "/x/sglang/srt/model_executor/model_runner.py:initialize:240;/x/sglang/srt/managers/"
              "tp_worker.py:__init__:80\"";
        const std::string logits = "stack=\"/x/vllm/model_executor/layers/logits_processor.py:forward:75;"
                                   "/x/vllm/worker/model_runner.py:execute_model:1775;"
                                   "/x/vllm/engine/llm_engine.py:step:1390\"";
        const std::string text = "alloc w 2GiB " + sglangWeights + "\nalloc g 1GiB " + sglangCapture
            + "\nalloc gt 64MiB " + sglangCapture + "\nfree gt " + sglangCapture + "\nalloc l 3GiB " + logits
            + "\noom 4GiB free=1GiB " + logits + "\n";
        const SnapshotAnalysis analysis = test::analyzeTrace(text);
        const DeviceAnalysis& device = *analysis.primary();
        QCOMPARE(liveBand(device, Category::Parameters), 2 * GiB);
        QCOMPARE(liveBand(device, Category::Activations), 1 * GiB);
        QCOMPARE(liveBand(device, Category::Temporaries), 3 * GiB);
        for (const Allocation& a : device.allocations) {
            if (a.requestedSize == 1 * GiB)
                QVERIFY(device.reasons[a.reason].find("CUDA graph") != std::string::npos);
        }
    }

    // A model loaded by a function named for it keeps its weights as parameters, with no torch frame
    // inside (gpt-fast's _load_model, verl's init_model).
    void loaderNamesMakeParameters()
    {
        const char* text
            = "alloc w 2GiB stack=\"/srv/gpt-fast/generate.py:_load_model:244;/srv/gpt-fast/generate.py:main:402\"\n"
              "alloc v 1GiB stack=\"/x/verl/workers/fsdp_workers.py:init_model:400\"\n"
              "alloc a 64MiB fwd\n";
        const SnapshotAnalysis analysis = test::analyzeTrace(text);
        QCOMPARE(liveBand(*analysis.primary(), Category::Parameters), 3 * GiB);
    }

    void poolsNamedByWhatTheyHold()
    {
        const SnapshotAnalysis analysis = test::analyzeTrace(colocatedRun());
        const PrivatePools pools = privatePools(*analysis.snapshot, *analysis.primary());
        const PoolAtDump* weights = findPool(pools, { 0, 1 });
        const PoolAtDump* kv = findPool(pools, { 0, 2 });
        QVERIFY(weights && kv);
        QCOMPARE(kv->heldBy.role, PoolRole::EngineKvCache);
        QCOMPARE(kv->heldBy.engine, Engine::Vllm);
        QVERIFY(kv->heldBy.text.find("sleep-mode allocator pool (tag \"kv_cache\")") != std::string::npos);
        QCOMPARE(weights->heldBy.role, PoolRole::EngineWeights);
        QCOMPARE(poolLabel(pools, { 0, 2 }), std::string("MemPool (0, 2) \u00b7 vLLM KV cache"));
        QCOMPARE(poolLabel(pools, { 0, 0 }), std::string("default pool \u00b7 trainer state"));
    }

    void colocatedEngineRanksFirstInRollout()
    {
        Case input;
        input.snapshots.push_back(test::traceSnapshot(colocatedRun()));
        // Qwen2.5-7B's config.json: 28 layers, 4 KV heads of 128: 56 KiB of bf16 cache per token.
        planner::ModelSpec qwen;
        qwen.name = "Qwen2.5-7B";
        qwen.layers = 28;
        qwen.hidden = 3584;
        qwen.heads = 28;
        qwen.kvHeads = 4;
        input.models.push_back(qwen);
        const CaseAnalysis analysis = analyzeCase(input);
        QVERIFY(!analysis.diagnoses.empty());
        const Diagnosis& top = analysis.diagnoses.front();
        QCOMPARE(top.id, DiagnosisId::ColocatedEngine);
        QVERIFY(top.fixes.size() >= 3);
        QCOMPARE(top.fixes.front().id(), std::string("offload_trainer_during_rollout"));
        // Weights 4 GiB + Adam 8 GiB move to the host for the rollout.
        QCOMPARE(top.fixes.front().projectedSavingBytes.value_or(0), int64_t(12 * GiB));
        bool poolLine = false;
        for (const Evidence& ev : top.evidence)
            poolLine = poolLine || ev.text.find("MemPool (0, 2) holds vLLM's KV cache") != std::string::npos;
        QVERIFY(poolLine);
        // The planner's arithmetic: 10 GiB / 57344 B per token.
        bool perToken = false;
        for (const Evidence& ev : top.evidence)
            perToken = perToken || ev.text.find("hold about 187245 tokens") != std::string::npos;
        QVERIFY(perToken);
        const auto json = caseToJson(input, analysis);
        QCOMPARE(json.at("diagnoses").at(0).at("id").get<std::string>(), std::string("colocated_engine"));
        const auto& pools = json.at("private_pools").at(0).at("pools");
        bool kvPool = false;
        for (const auto& pool : pools)
            kvPool = kvPool || pool.at("held_by").at("role").get<std::string>() == "engine_kv_cache";
        QVERIFY(kvPool);
        const std::string html = report::buildHtmlReport(input, analysis);
        QVERIFY(
            html.find("vLLM&#39;s KV cache") != std::string::npos || html.find("vLLM's KV cache") != std::string::npos);
    }

    void updateFailureFreesTheEngineCache()
    {
        // The engine stayed awake through the update: the fix is to free its cache first.
        const std::string text = std::string("alloc w 4GiB load\n") + "alloc ew 2GiB pool=0,1 " + vllmWeights + "\n"
            + "alloc kv 10GiB pool=0,2 " + vllmKv + "\n" + "alloc x 1GiB fwd\nalloc y 1GiB fwd\n"
            + "oom 3GiB free=100MiB bwd\n";
        Case input;
        input.snapshots.push_back(test::traceSnapshot(text));
        const CaseAnalysis analysis = analyzeCase(input);
        const Diagnosis* colocated = nullptr;
        for (const Diagnosis& d : analysis.diagnoses)
            colocated = d.id == DiagnosisId::ColocatedEngine ? &d : colocated;
        QVERIFY(colocated);
        // The engine idles through the update: sleeping it (all 12 GiB) leads, a smaller share follows.
        QCOMPARE(colocated->fixes.front().id(), std::string("free_engine_cache_before_update"));
        bool sleepFix = false;
        for (const Fix& fix : colocated->fixes) {
            if (fix.kind == FixKind::FreeEngineCacheBeforeUpdate)
                sleepFix = fix.projectedSavingBytes.value_or(0) == int64_t(12 * GiB);
        }
        QVERIFY(sleepFix);
    }

    // The update of a later iteration, the trace started after the previous one's backward (only its
    // optimizer.step() creating Adam's state is seen), the engine awake beside it. Halving the engine's
    // share (5 GiB) would not carry the update's 6 GiB request and 1 GiB of gradients; sleeping the
    // engine (12 GiB) would. Neither is this the run's first backward: the optimizer stepped before.
    void laterUpdateBesideAwakeEngine()
    {
        const char* trlUpdate = "stack=\"/x/trl/trainer/grpo_trainer.py:train_step:140\"";
        const std::string trlRollout = std::string("stack=\"/x/vllm/model_executor/models/qwen2.py:forward:338;")
            + "/x/vllm/worker/model_runner.py:execute_model:1742;/x/vllm/entrypoints/llm.py:generate:465;"
            + "/x/trl/trainer/grpo_trainer.py:_generate_and_score_completions:900\"";
        const std::string text = std::string("before w 1GiB load\n") + "before ew 2GiB " + vllmWeights + "\n"
            + "before kv 10GiB " + vllmKv + "\n" + "alloc s 2GiB optinit\n" + "alloc r 256MiB " + trlRollout
            + "\nfree r none\n" + "alloc b 64MiB " + trlUpdate + "\nalloc x 4GiB fwd\nalloc y 4GiB fwd\n"
            + "oom 6GiB free=100MiB bwd\n";
        Case input;
        input.snapshots.push_back(test::traceSnapshot(text));
        const CaseAnalysis analysis = analyzeCase(input);
        QVERIFY(!analysis.diagnoses.empty());
        const Diagnosis& top = analysis.diagnoses.front();
        QCOMPARE(top.id, DiagnosisId::ColocatedEngine);
        QCOMPARE(top.fixes.front().kind, FixKind::FreeEngineCacheBeforeUpdate);
        QCOMPARE(top.fixes.front().projectedSavingBytes.value_or(0), int64_t(12 * GiB));
        QVERIFY(top.outlook);
        QVERIFY(top.outlook->leadingFixFitsRun != std::optional<bool>(false));
        for (const Diagnosis& d : analysis.diagnoses) {
            if (d.id == DiagnosisId::FirstBackward)
                QVERIFY2(d.confidence < 0.5, "the optimizer stepped before this backward: not the first");
        }
    }

    // OpenRLHF with --colocate_all_models: make_experience's reference pass fails on its logits while
    // the vLLM engine stays awake. A forward-only pass creates no gradients or optimizer state, so
    // its need is the request, which sleeping the engine covers.
    void referencePassBesideAwakeEngine()
    {
        const std::string reference = std::string("stack=\"/x/openrlhf/models/actor.py:forward:231;")
            + "/x/torch/nn/modules/module.py:_call_impl:1750;/x/openrlhf/trainer/ray/launcher.py:forward:140;"
            + "/x/openrlhf/trainer/ppo_utils/experience_maker.py:make_experience:420;"
            + "/x/openrlhf/trainer/ppo_trainer.py:fit:240\"";
        const std::string samples = std::string("stack=\"/x/vllm/model_executor/models/llama.py:forward:338;")
            + "/x/vllm/entrypoints/llm.py:generate:465;"
            + "/x/openrlhf/trainer/ppo_utils/experience_maker.py:generate_samples:160;"
            + "/x/openrlhf/trainer/ppo_utils/experience_maker.py:make_experience_list:300\"";
        const std::string text = std::string("alloc w 4GiB load\n") + "alloc ew 2GiB " + vllmWeights + "\n"
            + "alloc kv 10GiB " + vllmKv + "\n" + "alloc r 256MiB " + samples + "\nfree r none\n" + "alloc l 3GiB "
            + reference + "\n" + "oom 6GiB free=100MiB " + reference + "\n";
        Case input;
        input.snapshots.push_back(test::traceSnapshot(text));
        const CaseAnalysis analysis = analyzeCase(input);
        const DeviceAnalysis& device = *analysis.snapshots[0].primary();
        QCOMPARE(device.allocations[3].phase, Phase::Rollout);
        QCOMPARE(device.ooms.back().phase, Phase::Reference);
        QVERIFY(!analysis.diagnoses.empty());
        const Diagnosis& top = analysis.diagnoses.front();
        QCOMPARE(top.id, DiagnosisId::ColocatedEngine);
        QCOMPARE(top.fixes.front().kind, FixKind::FreeEngineCacheBeforeUpdate);
        QVERIFY(top.outlook);
        QVERIFY(top.outlook->leadingFixFitsRun != std::optional<bool>(false));
        for (const Evidence& line : top.evidence)
            QVERIFY2(line.text.find("still to be created") == std::string::npos, line.text.c_str());
    }

    // TRL-style: the policy generates with Hugging Face's cache inside the RL trainer's rollout.
    void huggingFaceRollout()
    {
        const char* cache = "stack=\"/x/transformers/cache_utils.py:__init__:1100;"
                            "/x/transformers/generation/utils.py:_get_cache:1800;"
                            "/x/transformers/generation/utils.py:generate:2200;"
                            "/x/trl/trainer/grpo_trainer.py:_generate_and_score_completions:900\"";
        const char* forward = "stack=\"/x/transformers/models/llama/modeling_llama.py:forward:500;"
                              "/x/torch/nn/modules/module.py:_call_impl:1500;"
                              "/x/transformers/generation/utils.py:generate:2250;"
                              "/x/trl/trainer/grpo_trainer.py:_generate_and_score_completions:900\"";
        const std::string text = std::string("alloc w 4GiB load\nalloc s 8GiB optinit\n") + "alloc kv 6GiB " + cache
            + "\n" + "alloc h 1GiB " + forward + "\n" + "oom 2GiB free=100MiB " + forward + "\n";
        Case input;
        input.snapshots.push_back(test::traceSnapshot(text));
        const CaseAnalysis analysis = analyzeCase(input);
        const DeviceAnalysis& device = *analysis.snapshots[0].primary();
        QCOMPARE(liveBand(device, Category::KvCache), 6 * GiB);
        QCOMPARE(device.ooms.back().phase, Phase::Rollout);
        const Diagnosis* colocated = nullptr;
        for (const Diagnosis& d : analysis.diagnoses)
            colocated = d.id == DiagnosisId::ColocatedEngine ? &d : colocated;
        QVERIFY(colocated);
        std::vector<std::string> ids;
        for (const Fix& fix : colocated->fixes)
            ids.push_back(fix.id());
        // No engine share to lower: the cache grows with the batch of sequences.
        QVERIFY(std::find(ids.begin(), ids.end(), "engine_memory_fraction") == ids.end());
        QVERIFY(std::find(ids.begin(), ids.end(), "engine_max_num_seqs") != ids.end());
        QCOMPARE(ids.front(), std::string("offload_trainer_during_rollout"));
    }

    void trainingOnlyRunIsUntouched()
    {
        const SnapshotAnalysis analysis
            = test::analyzeTrace("alloc w 4GiB load\nalloc x 2GiB fwd\nalloc y 2GiB fwd\noom 4GiB free=100MiB fwd\n");
        QCOMPARE(liveBand(*analysis.primary(), Category::KvCache), uint64_t(0));
        const auto diagnoses = diagnoseSnapshot(analysis, {});
        for (const Diagnosis& d : diagnoses)
            QVERIFY(d.id != DiagnosisId::ColocatedEngine);
    }

    // verl's Megatron actor with a vLLM rollout: weights in MemPool (0, 1), 20 GiB of KV cache in (0, 2).
    void realVerlPools()
    {
        OOMLENS_REQUIRE_SHARED();
        const QString path = rlSnapshot("volcengine__verl__mem.pickle");
        if (!QFile::exists(path))
            QSKIP("snapshots-rl/volcengine__verl__mem.pickle is not in this corpus");
        Case input;
        addFile(input, path.toStdString());
        const CaseAnalysis analysis = analyzeCase(input);
        QCOMPARE(analysis.snapshots.size(), size_t(1));
        const DeviceAnalysis& device = *analysis.snapshots[0].primary();
        const uint64_t kv = liveBand(device, Category::KvCache);
        QVERIFY2(kv > 20 * GiB && kv < 21 * GiB, std::to_string(kv).c_str());
        const auto pools = casePrivatePools(input, analysis, 0);
        QVERIFY(pools);
        const PoolAtDump* weights = findPool(*pools, { 0, 1 });
        const PoolAtDump* cache = findPool(*pools, { 0, 2 });
        QVERIFY(weights && cache);
        QCOMPARE(cache->heldBy.role, PoolRole::EngineKvCache);
        QCOMPARE(cache->heldBy.engine, Engine::Vllm);
        QCOMPARE(weights->heldBy.role, PoolRole::EngineWeights);
        QCOMPARE(weights->heldBy.engine, Engine::Vllm);
        // The trainer's Megatron buffers stay the trainer's.
        const PoolAtDump* main = findPool(*pools, { 0, 0 });
        QVERIFY(main);
        QCOMPARE(main->heldBy.role, PoolRole::TrainerState);
        QCOMPARE(main->heldBy.engine, Engine::None);
        QVERIFY(main->heldBy.text.find("Megatron") != std::string::npos);
        const auto json = caseToJson(input, analysis);
        QVERIFY(json.at("snapshots").at(0).dump().find("kv_cache") != std::string::npos);
        const std::string html = report::buildHtmlReport(input, analysis);
        QVERIFY(html.find("sleep-mode allocator pool") != std::string::npos);
        qInfo("verl: kv_cache %.2f GiB; (0, 1) %s; (0, 2) %s", double(kv) / double(GiB), weights->heldBy.text.c_str(),
            cache->heldBy.text.c_str());
    }

    // slime's Megatron actor initialised inside its colocation pool (0, 1): the trainer's state.
    void realSlimeTrainerPool()
    {
        OOMLENS_REQUIRE_SHARED();
        const QString path = rlSnapshot("THUDM__slime__init_model.pickle");
        if (!QFile::exists(path))
            QSKIP("snapshots-rl/THUDM__slime__init_model.pickle is not in this corpus");
        Case input;
        addFile(input, path.toStdString());
        const CaseAnalysis analysis = analyzeCase(input);
        const auto pools = casePrivatePools(input, analysis, 0);
        QVERIFY(pools);
        const PoolAtDump* pool = findPool(*pools, { 0, 1 });
        QVERIFY(pool);
        QCOMPARE(pool->heldBy.role, PoolRole::TrainerState);
        QVERIFY(pool->heldBy.text.find("Megatron") != std::string::npos);
        QVERIFY(pool->heldBy.text.find("slime") != std::string::npos);
        QCOMPARE(liveBand(*analysis.snapshots[0].primary(), Category::KvCache), uint64_t(0));
        qInfo("slime: (0, 1) %s", pool->heldBy.text.c_str());
    }
};

QTEST_GUILESS_MAIN(TestColocated)
#include "tst_colocated.moc"
