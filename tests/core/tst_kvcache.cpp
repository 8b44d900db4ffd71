#include "core/planner/kvcache.h"
#include "core/units.h"

#include <QTest>

using namespace oomlens;
using namespace oomlens::planner;

namespace {

KvCacheShape shape(int layers, int kvHeads, int headDim, KvDtype dtype = KvDtype::Fp16, int tp = 1)
{
    KvCacheShape cache;
    cache.layers = layers;
    cache.kvHeads = kvHeads;
    cache.headDim = headDim;
    cache.elementBytes = kvDtypeBytes(dtype);
    cache.tensorParallel = tp;
    return cache;
}

} // namespace

class TestKvCache : public QObject
{
    Q_OBJECT

private slots:
    void dtypeNames()
    {
        QCOMPARE(kvDtypeBytes(KvDtype::Fp16), 2);
        QCOMPARE(kvDtypeBytes(KvDtype::Bf16), 2);
        QCOMPARE(kvDtypeBytes(KvDtype::Fp8), 1);
        QCOMPARE(kvDtypeBytes(KvDtype::Fp32), 4);
        for (KvDtype dtype : { KvDtype::Fp16, KvDtype::Bf16, KvDtype::Fp8, KvDtype::Fp32 })
            QCOMPARE(kvDtypeFromName(kvDtypeName(dtype)), std::optional<KvDtype>(dtype));
        QCOMPARE(kvDtypeFromName("fp8_e4m3"), std::optional<KvDtype>(KvDtype::Fp8));
        QCOMPARE(kvDtypeFromName("bfloat16"), std::optional<KvDtype>(KvDtype::Bf16));
        QVERIFY(!kvDtypeFromName("int3"));
    }

    // Multi-head attention: Llama-2-7B (32 layers, 32 KV heads of 128) keeps 0.5 MiB per token
    // in fp16, so one 4096-token sequence holds 2 GiB (NVIDIA's "Mastering LLM Techniques:
    // Inference Optimization" gives the same 2 GB).
    void mhaModel()
    {
        const KvCacheShape llama7b = shape(32, 32, 128);
        QCOMPARE(kvBytesPerToken(llama7b), uint64_t { 2 * 32 * 32 * 128 * 2 });
        QCOMPARE(kvBytesPerToken(llama7b), 512 * KiB);
        QCOMPARE(kvCacheBytes(llama7b, 1, 4096), 2 * GiB);
        QCOMPARE(kvBytesPerToken(shape(32, 32, 128, KvDtype::Fp8)), 256 * KiB);
        // TP splits the heads: 4 ranks hold 8 heads each.
        QCOMPARE(kvBytesPerToken(shape(32, 32, 128, KvDtype::Fp16, 4)), 128 * KiB);
    }

    // Grouped-query attention: Llama-2-70B has 64 query heads but 8 KV heads: 320 KiB per token,
    // an eighth of what 64 heads would keep.
    void gqaModel()
    {
        const KvCacheShape llama70b = shape(80, 8, 128, KvDtype::Bf16);
        QCOMPARE(kvBytesPerToken(llama70b), uint64_t { 2 * 80 * 8 * 128 * 2 });
        QCOMPARE(kvBytesPerToken(llama70b), 320 * KiB);
        QCOMPARE(kvBytesPerToken(shape(80, 8, 128, KvDtype::Bf16, 8)), 40 * KiB);
        // TP 16 over 8 KV heads: each rank still holds a whole head (vLLM replicates them).
        QCOMPARE(shape(80, 8, 128, KvDtype::Bf16, 16).kvHeadsPerGpu(), 1);
        QCOMPARE(kvBytesPerToken(shape(80, 8, 128, KvDtype::Bf16, 16)), 40 * KiB);
        // Mistral-7B: 32 layers, 8 KV heads.
        QCOMPARE(kvBytesPerToken(shape(32, 8, 128)), 128 * KiB);
    }

    // DeepSeek-V3's latent cache: 61 layers x (kv_lora_rank 512 + rope 64) x 2 bytes, the same on every TP rank.
    void latentAttention()
    {
        KvCacheShape deepseek = shape(61, 128, 128, KvDtype::Bf16, 8);
        deepseek.latentDim = 512 + 64;
        QCOMPARE(kvBytesPerToken(deepseek), uint64_t { 61 * 576 * 2 });
        deepseek.tensorParallel = 1;
        QCOMPARE(kvBytesPerToken(deepseek), uint64_t { 61 * 576 * 2 });
    }

    void whatFits()
    {
        const KvCacheShape llama70b = shape(80, 8, 128, KvDtype::Bf16, 8); // 40 KiB per token per GPU
        const uint64_t free = 20 * GiB;
        QCOMPARE(kvTokensThatFit(llama70b, free), uint64_t { 524288 });
        QCOMPARE(kvSequencesThatFit(llama70b, free, 4096), uint64_t { 128 });
        QCOMPARE(kvContextThatFits(llama70b, free, 64), uint64_t { 8192 });
        QCOMPARE(kvSequencesThatFit(llama70b, free, 0), uint64_t { 0 });
        QCOMPARE(kvContextThatFits(llama70b, free, 0), uint64_t { 0 });
        // One byte short of a token fits none of it.
        QCOMPARE(kvTokensThatFit(llama70b, 40 * KiB - 1), uint64_t { 0 });
    }

    void invalidShape()
    {
        QCOMPARE(kvBytesPerToken(KvCacheShape {}), uint64_t { 0 });
        QCOMPARE(kvTokensThatFit(KvCacheShape {}, GiB), uint64_t { 0 });
        QCOMPARE(kvBytesPerToken(shape(0, 8, 128)), uint64_t { 0 });
    }
};

QTEST_GUILESS_MAIN(TestKvCache)
#include "tst_kvcache.moc"
