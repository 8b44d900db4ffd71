// The planner's activation model against measured runs: for scenario snapshots whose model
// dimensions, batch, sequence, precision and attention are known (the family A and family B
// generators' configurations, read from tests/tools; family C stays blind), the saved
// activations one transformer block holds at the end of the first forward pass, measured from
// the snapshot, against estimateActivations()'s per-block figure. The bar: within 15%.

#include "common/testutil.h"
#include "core/analysis/snapshotanalysis.h"
#include "core/planner/activationmodel.h"
#include "core/planner/modelspec.h"
#include "core/planner/trainingsetup.h"
#include "parsers/snapshotreader.h"

#include <QTest>

#include <cstdio>
#include <string>
#include <vector>

using namespace oomlens;
using namespace oomlens::planner;

namespace {

// One measured run: where its snapshot is, the model and set-up it ran, and the Python line
// that calls one block (`x = block(x)`): everything allocated under it belongs to a block.
struct ValidationCase
{
    const char* name;
    const char* folder; // scenarios or scenarios_b
    ModelSpec model;
    TrainingSetup setup;
    const char* blockFile; // file name suffix of the block call's frame
    int blockLine;
    // Mixed precision: autocast keeps a 16-bit copy of every matmul weight until backward. A
    // profile sees it under the block; the planner counts it once, in the parameter band (the
    // "+2 bytes per parameter" of mixed precision), so the comparison adds it back per block.
    bool autocastWeightCache = false;
};

ModelSpec tinyGpt(int vocab, int hidden, int layers, int heads)
{
    // tests/tools/trainsim.py: pre-LN blocks, LayerNorm with biases, a 4h GELU MLP, eager
    // attention with a causal mask, no dropout, an untied head.
    ModelSpec model;
    model.name = "TinyGPT";
    model.vocab = vocab;
    model.hidden = hidden;
    model.layers = layers;
    model.heads = heads;
    model.ffn = 4 * hidden;
    model.layerNormBiases = true;
    return model;
}

// tests/tools/familyb/training.py's Shape: "gpt2" (LayerNorm, fused QKV, GELU MLP, attention
// dropout in training) and "llama" (RMSNorm, rotary, GQA, SwiGLU).
ModelSpec familyB(bool gpt2, int layers, int hidden, int heads, int kvHeads, int ffn, int vocab)
{
    ModelSpec model;
    model.name = gpt2 ? "gpt2-shaped" : "llama-shaped";
    model.layers = layers;
    model.hidden = hidden;
    model.heads = heads;
    model.kvHeads = kvHeads;
    model.ffn = ffn;
    model.vocab = vocab;
    model.gatedMlp = !gpt2;
    model.layerNormBiases = gpt2;
    model.dropout = gpt2;
    model.tiedEmbeddings = gpt2;
    return model;
}

TrainingSetup run(int batch, int sequence, Precision precision, Attention attention)
{
    TrainingSetup setup;
    setup.microBatch = batch;
    setup.sequence = sequence;
    setup.precision = precision;
    setup.attention = attention;
    return setup;
}

std::vector<ValidationCase> cases()
{
    // Family A: tests/tools/make_scenarios.py's scenario_table() and the issue-10 table (fp32
    // TinyGPT unless dtype_bytes=2, which loads the model in bf16: pure bf16).
    // Family B: tests/tools/familyb/scenarios.py (SHAPES; batch and sequence as the
    // scenario's description states them); "amp" is bf16 autocast over fp32 weights.
    return {
        { "healthy", "scenarios", tinyGpt(8192, 512, 4, 8), run(8, 256, Precision::Fp32, Attention::Eager), "model.py",
            73 },
        { "first_backward", "scenarios", tinyGpt(16384, 512, 4, 8), run(16, 256, Precision::Fp32, Attention::Eager),
            "model.py", 73 },
        { "optimizer_step2", "scenarios", tinyGpt(16384, 1024, 4, 16), run(8, 256, Precision::Fp32, Attention::Eager),
            "model.py", 73 },
        { "capacity_bf16", "scenarios", tinyGpt(32768, 2048, 8, 16), run(1, 64, Precision::Bf16, Attention::Eager),
            "model.py", 73 },
        { "gpt2l_eager_attention_first_backward", "scenarios_b", familyB(true, 36, 1280, 20, 20, 5120, 50257),
            run(4, 912, Precision::MixedBf16, Attention::Eager), "modeling_gpt2.py", 611, true },
        { "gpt2l_container_first_backward", "scenarios_b", familyB(true, 36, 1280, 20, 20, 5120, 50257),
            run(18, 1024, Precision::MixedBf16, Attention::Sdpa), "modeling_gpt2.py", 611, true },
        { "llama1b_eager_gqa_first_backward", "scenarios_b", familyB(false, 16, 2048, 32, 8, 8192, 128256),
            run(3, 2048, Precision::MixedBf16, Attention::Eager), "modeling_llama.py", 657, true },
        { "tinyllama_lightning_closure_first_backward", "scenarios_b", familyB(false, 22, 2048, 32, 4, 5632, 32000),
            run(4, 2048, Precision::MixedBf16, Attention::Sdpa), "modeling_llama.py", 657, true },
    };
}

bool stackHasFrame(const Snapshot& snapshot, StackId stack, std::string_view fileSuffix, int line)
{
    for (const FrameId id : snapshot.frames->stack(stack)) {
        const Frame& frame = snapshot.frames->frame(id);
        const std::string_view file = snapshot.strings->get(frame.filename);
        if (frame.line == line && file.size() >= fileSuffix.size()
            && file.substr(file.size() - fileSuffix.size()) == fileSuffix)
            return true;
    }
    return false;
}

struct Measurement
{
    uint64_t blockBytes = 0; // live under the block call at the end of the first forward
    int64_t endOfForward = -1;
};

// The end of the first forward is the event before the first backward one; what the blocks
// hold then is what they saved for backward (their temporaries are freed by then).
Measurement measureBlocks(const SnapshotAnalysis& analysis, const ValidationCase& validation)
{
    Measurement measurement;
    const DeviceAnalysis* device = analysis.primary();
    if (device == nullptr)
        return measurement;
    int64_t firstBackward = -1;
    for (size_t e = 0; e < device->eventPhase.size(); ++e) {
        if (device->eventPhase[e] == Phase::Backward) {
            firstBackward = static_cast<int64_t>(e);
            break;
        }
    }
    if (firstBackward <= 0)
        return measurement;
    measurement.endOfForward = firstBackward - 1;
    for (const Allocation& allocation : device->allocations) {
        if (!allocation.liveAfter(measurement.endOfForward) || allocation.olderThanTrace())
            continue;
        if (stackHasFrame(*analysis.snapshot, allocation.stack, validation.blockFile, validation.blockLine))
            measurement.blockBytes += allocation.requestedSize;
    }
    return measurement;
}

// The 16-bit weight copies autocast caches for one block's matmuls.
uint64_t autocastCachePerBlock(const ModelSpec& model)
{
    return 2 * model.blockLinearParameters() / static_cast<uint64_t>(model.layers);
}

double mib(uint64_t bytes)
{
    return static_cast<double>(bytes) / (1024.0 * 1024.0);
}

} // namespace

class TestActivationValidation : public QObject
{
    Q_OBJECT

private slots:
    // The fixes the table asked for, from the physics: eager attention over grouped K/V saves
    // them repeated to every head (repeat_kv's copies feed the matmuls), SDPA the grouped ones;
    // RMSNorm saves one fp32 statistic per token, LayerNorm two.
    void groupedKvAndNormStatistics()
    {
        const ModelSpec llama = familyB(false, 16, 2048, 32, 8, 8192, 128256);
        const TrainingSetup eager = run(2, 512, Precision::MixedBf16, Attention::Eager);
        TrainingSetup sdpa = eager;
        sdpa.attention = Attention::Sdpa;
        const ActivationEstimate withScores = estimateActivations(llama, eager);
        const ActivationEstimate flash = estimateActivations(llama, sdpa);
        const uint64_t tokens = 2 * 512;
        const uint64_t logSumExp = 2 * 32 * 512 * 4;
        QCOMPARE(withScores.perLayerBytes - withScores.scoreBytesPerLayer - (flash.perLayerBytes - logSumExp),
            tokens * 2 * 2 * (2048 - 512));

        ModelSpec layerNorm = llama;
        layerNorm.layerNormBiases = true;
        QCOMPARE(estimateActivations(layerNorm, sdpa).perLayerBytes - flash.perLayerBytes, tokens * 2 * 4);
    }

    void perBlockWithinFifteenPercent()
    {
        std::printf("%-44s %12s %12s %7s\n", "scenario", "predicted", "measured", "ratio");
        int checked = 0;
        QStringList outside;
        for (const ValidationCase& validation : cases()) {
            const QString path = test::testDataDir() + QStringLiteral("/") + QString::fromLatin1(validation.folder)
                + QStringLiteral("/") + QString::fromLatin1(validation.name) + QStringLiteral(".pickle");
            const QByteArray bytes = test::readFile(path);
            QVERIFY2(!bytes.isEmpty(), qPrintable(path));
            const SnapshotReadResult read
                = readSnapshot(std::string_view(bytes.constData(), static_cast<size_t>(bytes.size())));
            QVERIFY2(read.snapshot, read.error.c_str());
            const SnapshotAnalysis analysis = analyzeSnapshot(read.snapshot);
            const Measurement measurement = measureBlocks(analysis, validation);
            QVERIFY2(measurement.endOfForward >= 0, validation.name);
            const uint64_t measured = measurement.blockBytes / static_cast<uint64_t>(validation.model.layers);

            const ActivationEstimate estimate = estimateActivations(validation.model, validation.setup);
            const uint64_t predicted = estimate.perLayerBytes
                + (validation.autocastWeightCache ? autocastCachePerBlock(validation.model) : 0);
            const double ratio = static_cast<double>(measured) / static_cast<double>(predicted);
            std::printf("%-44s %9.2f MiB %9.2f MiB %6.3fx\n", validation.name, mib(predicted), mib(measured), ratio);
            // The whole table first, then the verdict: one run off should not hide the others.
            if (measured == 0 || ratio < 0.85 || ratio > 1.15)
                outside << QString::fromLatin1(validation.name);
            ++checked;
        }
        QCOMPARE(checked, 8);
        QVERIFY2(outside.isEmpty(), qPrintable(QStringLiteral("outside 15%: ") + outside.join(QStringLiteral(", "))));
    }
};

QTEST_GUILESS_MAIN(TestActivationValidation)
#include "tst_activationvalidation.moc"
