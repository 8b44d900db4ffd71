// Engine lines read one at a time, as the engines' own source prints them: vLLM V1's byte check of
// max_model_len against the cache, V0's weight-load lines, TensorRT-LLM's engine deserialization,
// generate()'s forward, a recipe's dtype beside SGLang's lines; the budget's evidence quoting the
// part of a line that carries the figure; a bare OOM message that shows neither training nor
// inference; and diagnoseText taking the same path as a case.
#include "common/testutil.h"
#include "core/caseanalysis.h"
#include "core/diagnosis/textdiagnosis.h"
#include "parsers/inputloader.h"
#include "parsers/text/textparser.h"

#include <QTest>

#include <algorithm>
#include <string>

using namespace oomlens;

namespace {

CaseAnalysis analyse(const std::string& text)
{
    Case input;
    addInput(input, "paste.txt", text);
    return analyzeCase(input);
}

std::string topId(const CaseAnalysis& analysis)
{
    return analysis.diagnoses.empty() ? std::string("(none)") : diagnosisIdText(analysis.diagnoses.front().id);
}

bool offers(const Diagnosis& d, std::string_view fixId)
{
    return std::any_of(d.fixes.begin(), d.fixes.end(), [&](const Fix& f) { return f.id() == fixId; });
}

bool anyOffers(const std::vector<Diagnosis>& diagnoses, std::string_view fixId)
{
    return std::any_of(diagnoses.begin(), diagnoses.end(), [&](const Diagnosis& d) { return offers(d, fixId); });
}

const ServingFigure* figure(const CaseAnalysis& analysis, std::string_view key)
{
    return analysis.serving ? analysis.serving->run.figure(key) : nullptr;
}

// vLLM V1 (0.8): the profile's split and check_enough_kv_cache_memory's refusal.
const std::string v1ContextTooLong
    = "INFO 05-06 14:02:35 [gpu_model_runner.py:1347] Model loading took 27.5172 GiB and 10.082417 seconds\n"
      "INFO 05-06 14:03:16 [gpu_worker.py:227] Memory profiling takes 38.02 seconds\n"
      "the current vLLM instance can use total_gpu_memory (39.38GiB) x gpu_memory_utilization (0.90) = 35.44GiB\n"
      "model weights take 27.52GiB; non_torch_memory takes 0.24GiB; PyTorch activation peak memory takes 1.52GiB; "
      "the rest of the memory reserved for KV Cache is 6.16GiB.\n"
      "ERROR 05-06 14:03:16 [core.py:396] EngineCore failed to start.\n"
      "ERROR 05-06 14:03:16 [core.py:396] ValueError: To serve at least one request with the models's max seq len "
      "(131072), (24.00 GiB KV cache is needed, which is larger than the available KV cache memory (6.16 GiB). Based "
      "on the available memory, the estimated maximum model length is 33664. Try increasing `gpu_memory_utilization` "
      "or decreasing `max_model_len` when initializing the engine.\n";

const std::string bareMessage
    = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 648.00 MiB. GPU 0 has a total capacity of 47.53 "
      "GiB of which 176.88 MiB is free. Including non-PyTorch memory, this process has 47.35 GiB memory in use. Of the "
      "allocated memory 47.08 GiB is allocated by PyTorch, and 14.45 MiB is reserved by PyTorch but unallocated. If "
      "reserved but unallocated memory is large try setting PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True to avoid "
      "fragmentation.\n";

} // namespace

class TestServingLines : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    // V1 counts the cache in bytes, not tokens: its refusal is the same cause as V0's, and the
    // longest context it estimates is the shorter context to serve.
    void v1ByteCheckIsTheCacheBudget()
    {
        const CaseAnalysis analysis = analyse(v1ContextTooLong);
        QVERIFY(analysis.serving);
        QCOMPARE(analysis.serving->run.failure, ServingFailure::ContextExceedsCache);
        QCOMPARE(analysis.serving->run.generation, std::string("V1"));
        QCOMPARE(analysis.serving->run.settingValue("max_model_len").value_or(0), 131072.0);
        QCOMPARE(analysis.serving->run.settingValue("estimated_max_model_len").value_or(0), 33664.0);
        QVERIFY(figure(analysis, "kv_cache_needed"));
        QCOMPARE(topId(analysis), std::string("kv_cache_budget"));
        const Diagnosis& first = analysis.diagnoses.front();
        QVERIFY(!first.fixes.empty());
        QCOMPARE(first.fixes.front().id(), std::string("engine_context_length"));
        // The engine's own estimate is the context that fits, not a halving.
        QVERIFY2(first.fixes.front().snippet.find("32768") != std::string::npos, first.fixes.front().snippet.c_str());
    }

    // The budget's evidence quotes the clause that printed the figure, not the whole line.
    void figuresQuoteTheirClause()
    {
        const CaseAnalysis analysis = analyse(v1ContextTooLong);
        const ServingFigure* nonTorch = figure(analysis, "non_torch");
        QVERIFY(nonTorch);
        QCOMPARE(nonTorch->source.text, std::string("… non_torch_memory takes 0.24GiB …"));
        const ServingFigure* weights = figure(analysis, "weights");
        QVERIFY(weights);
        QCOMPARE(weights->source.line, size_t { 4 }); // "model weights take", the last one printed
        QCOMPARE(weights->source.text, std::string("model weights take 27.52GiB …"));
        const ServingFigure* card = figure(analysis, "card_total");
        QVERIFY(card);
        QCOMPARE(card->source.text, std::string("… total_gpu_memory (39.38GiB) …"));
        const ServingFigure* budget = figure(analysis, "budget");
        QVERIFY(budget);
        QCOMPARE(budget->source.text,
            std::string("… total_gpu_memory (39.38GiB) x gpu_memory_utilization (0.90) = 35.44GiB"));

        const CaseAnalysis sglang = analyse("[2025-06-02 21:42:02 TP0] Load weight end. type=LlamaForCausalLM, "
                                            "dtype=torch.bfloat16, avail mem=45.54 GB, mem usage=32.89 GB.\n"
                                            "[2025-06-02 21:42:03 TP0] KV Cache is allocated. #tokens: 576283, K "
                                            "size: 21.98 GB, V size: 21.98 GB\n");
        QVERIFY(sglang.serving);
        QCOMPARE(figure(sglang, "weights")->source.text, std::string("Load weight end. … mem usage=32.89 GB"));
        QCOMPARE(figure(sglang, "kv_cache")->source.text,
            std::string("KV Cache is allocated. … K size: 21.98 GB, V size: 21.98 GB"));

        // A flag keeps its dashes.
        const CaseAnalysis flags = analyse("vllm serve meta-llama/Llama-3.1-8B-Instruct --max-model-len 32768 "
                                           "--gpu-memory-utilization 0.95\n"
            + v1ContextTooLong);
        QVERIFY(flags.serving && !flags.serving->run.settings.empty());
        QCOMPARE(flags.serving->run.settings.front().source.text, std::string("… --max-model-len 32768 …"));
    }

    // A dtype is not a training recipe: SGLang's weight-load line names one, and the run still serves.
    void aDtypeAloneIsNotTraining()
    {
        const CaseAnalysis analysis
            = analyse("[2025-06-02 21:42:02 TP0] Load weight end. type=LlamaForCausalLM, dtype=torch.bfloat16, avail "
                      "mem=45.54 GB, mem usage=32.89 GB.\n"
                      "[2025-06-02 21:42:03 TP0] Memory pool end. avail mem=0.47 GB\n"
                      "Exception: Capture cuda graph failed: CUDA out of memory. Tried to allocate 252.00 MiB. GPU 0 "
                      "has a total capacity of 79.15 GiB of which 244.00 MiB is free. Including non-PyTorch memory, "
                      "this process has 78.91 GiB memory in use. Of the allocated memory 78.13 GiB is allocated by "
                      "PyTorch, with 105.73 MiB allocated in private pools (e.g., CUDA Graphs), and 6.00 MiB is "
                      "reserved by PyTorch but unallocated.\n");
        QVERIFY(analysis.serving);
        QCOMPARE(analysis.serving->run.engine, ServingEngine::Sglang);
        QCOMPARE(topId(analysis), std::string("graph_capture"));
    }

    // V0's model runner ends the load with "Loading model weights took": an OOM after it is not in
    // the load, and the profile run's frame places it.
    void v0LoadEndsWithItsOwnLine()
    {
        const CaseAnalysis analysis = analyse(
            "INFO 08-13 16:03:03 model_runner.py:720] Starting to load model meta-llama/Llama-3.1-8B-Instruct...\n"
            "INFO 08-13 16:03:10 model_runner.py:732] Loading model weights took 14.9888 GB\n"
            "Traceback (most recent call last):\n"
            "  File \"/usr/local/lib/python3.10/dist-packages/vllm/worker/worker.py\", line 179, in "
            "determine_num_available_blocks\n"
            "    self.model_runner.profile_run()\n"
            "  File \"/usr/local/lib/python3.10/dist-packages/vllm/worker/model_runner.py\", line 940, in profile_run\n"
            "    self.execute_model(model_input, kv_caches, intermediate_tensors)\n"
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.75 GiB. GPU 0 has a total capacity "
            "of 22.05 GiB of which 1.67 GiB is free. Including non-PyTorch memory, this process has 20.38 GiB memory "
            "in use. Of the allocated memory 20.05 GiB is allocated by PyTorch, and 20.00 MiB is reserved by PyTorch "
            "but unallocated.\n");
        QVERIFY(analysis.serving);
        QCOMPARE(analysis.serving->run.failure, ServingFailure::ProfileRun);
        QCOMPARE(topId(analysis), std::string("engine_batch"));
    }

    // TensorRT-LLM's runtime deserializes the engine (its weights) before it allocates the
    // execution context: an OOM there is the weights', not the runtime buffers'.
    void tensorRtDeserializationIsTheWeights()
    {
        const CaseAnalysis analysis = analyse(
            "[TensorRT-LLM][INFO] Loaded engine size: 134597 MiB\n"
            "[TensorRT-LLM][ERROR] 1: [defaultAllocator.cpp::allocate::31] Error Code 1: Cuda Runtime (out of memory)\n"
            "[TensorRT-LLM][ERROR] 2: [runtime.cpp::loadPlan::153] Error Code 2: OutOfMemory (Requested size was "
            "141135183872 bytes.)\n"
            "RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: Failed to deserialize cuda engine. "
            "(/src/cpp/tensorrt_llm/runtime/tllmRuntime.cpp:239)\n");
        QVERIFY(analysis.serving);
        QCOMPARE(analysis.serving->run.failure, ServingFailure::WeightLoad);
        QVERIFY(figure(analysis, "weights"));
        QCOMPARE(topId(analysis), std::string("capacity"));

        // The context's buffers after a deserialization that succeeded stay the engine's batch.
        const CaseAnalysis buffers
            = analyse("[TensorRT-LLM][ERROR] CUDA runtime error in ::cudaMallocAsync(ptr, n, mCudaStream->get()): out "
                      "of memory (/code/tensorrt_llm/cpp/tensorrt_llm/runtime/tllmBuffers.h:112)\n"
                      "2       0x7f4aa35755f6 tensorrt_llm::runtime::BufferManager::gpu(unsigned long, "
                      "nvinfer1::DataType) const + 230\n");
        QVERIFY(buffers.serving);
        QCOMPARE(buffers.serving->run.failure, ServingFailure::RuntimeBuffers);
        QCOMPARE(topId(buffers), std::string("engine_batch"));
    }

    // generate()'s forward holds batch x beams sequences at once: fewer of them is the fix.
    void generateForwardIsTheBatch()
    {
        const CaseAnalysis analysis = analyse(
            "Traceback (most recent call last):\n"
            "  File \"/venv/lib/python3.10/site-packages/transformers/generation/utils.py\", line 2307, in generate\n"
            "    result = self._beam_search(\n"
            "  File \"/venv/lib/python3.10/site-packages/transformers/generation/utils.py\", line 3485, in "
            "_beam_search\n"
            "    outputs = self(**model_inputs, return_dict=True)\n"
            "  File \"/venv/lib/python3.10/site-packages/transformers/models/llama/modeling_llama.py\", line 258, in "
            "forward\n"
            "    down_proj = self.down_proj(self.act_fn(self.gate_proj(x)) * self.up_proj(x))\n"
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 5.25 GiB. GPU 0 has a total capacity of "
            "39.38 GiB of which 4.81 GiB is free. Including non-PyTorch memory, this process has 34.57 GiB memory in "
            "use. Of the allocated memory 34.11 GiB is allocated by PyTorch, and 8.00 MiB is reserved by PyTorch but "
            "unallocated.\n");
        QVERIFY(analysis.serving);
        QCOMPARE(analysis.serving->run.engine, ServingEngine::HfGenerate);
        QCOMPARE(topId(analysis), std::string("engine_batch"));
        QCOMPARE(analysis.diagnoses.front().fixes.front().id(), std::string("generate_fewer_tokens"));
        QVERIFY(!anyOffers(analysis.diagnoses, "micro_batch"));
    }

    // A bare message shows neither a training step nor an inference run: it says so, and offers
    // only fixes that hold for both.
    void bareMessageGetsFixesForBoth()
    {
        const CaseAnalysis analysis = analyse(bareMessage);
        QVERIFY(!analysis.serving);
        QVERIFY(!analysis.diagnoses.empty());
        for (const char* training : { "micro_batch", "bf16", "checkpointing", "zero", "lora", "optimizer_8bit" })
            QVERIFY2(!anyOffers(analysis.diagnoses, training), training);
        QVERIFY(anyOffers(analysis.diagnoses, "smaller_batch"));
        const Diagnosis& first = analysis.diagnoses.front();
        QVERIFY(std::any_of(first.evidence.begin(), first.evidence.end(),
            [](const Evidence& e) { return e.text.find("trains or serves") != std::string::npos; }));
    }

    // The same message under a training loop's frames keeps training's ladder.
    void trainingFramesKeepTheTrainingLadder()
    {
        const CaseAnalysis analysis = analyse("Traceback (most recent call last):\n"
                                              "  File \"/home/me/train.py\", line 88, in <module>\n"
                                              "    loss = model(**batch).loss\n"
            + bareMessage);
        QVERIFY(!analysis.serving);
        QVERIFY(anyOffers(analysis.diagnoses, "micro_batch"));
        QVERIFY(!anyOffers(analysis.diagnoses, "smaller_batch"));
    }

    // diagnoseText is the case's path: an engine's refusal gets the engine's cause there too.
    void diagnoseTextTakesTheServingStep()
    {
        const std::vector<Diagnosis> diagnoses = diagnoseText(parseText(v1ContextTooLong));
        QVERIFY(!diagnoses.empty());
        QCOMPARE(diagnoses.front().id, DiagnosisId::KvCacheBudget);
        const std::vector<Diagnosis> bare = diagnoseText(parseText(bareMessage));
        QVERIFY(!anyOffers(bare, "micro_batch"));
    }
};

QTEST_GUILESS_MAIN(TestServingLines)
#include "tst_servinglines.moc"
