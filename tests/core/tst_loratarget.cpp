#include "core/diagnosis/fixladder.h"
#include "core/diagnosis/fixladderlora.h"
#include "parsers/text/textparser.h"

#include <QTest>

#include <string>

using namespace oomlens;

// The LoRA rung names the layers of the model the stacks show, and is left out where they show a
// model it does not fit (a convolutional network) or no model at all.
namespace {

bool contains(const std::string& text, std::string_view needle)
{
    return text.find(needle) != std::string::npos;
}

const ModelFrame moduleCall { "/envs/a/lib/python3.11/site-packages/torch/nn/modules/module.py", "_call_impl" };
const ModelFrame linearForward { "/envs/a/lib/python3.11/site-packages/torch/nn/modules/linear.py", "forward" };
const ModelFrame convForward { "/envs/a/lib/python3.11/site-packages/torch/nn/modules/conv.py", "_conv_forward" };

ModelFrame modeling(std::string_view file)
{
    return { file, "forward" };
}

FixContext contextWith(LoraTarget target)
{
    FixContext context;
    context.lora = std::move(target);
    return context;
}

} // namespace

class TestLoraTarget : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void huggingFaceArchitecturesNameTheirProjections_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("modules");
        QTest::addColumn<QString>("task");
        const QString site = QStringLiteral("/envs/a/lib/python3.11/site-packages/transformers/models/");
        QTest::newRow("llama") << site + QStringLiteral("llama/modeling_llama.py")
                               << QStringLiteral(R"(["q_proj", "v_proj"])") << QStringLiteral("CAUSAL_LM");
        QTest::newRow("gpt2") << site + QStringLiteral("gpt2/modeling_gpt2.py") << QStringLiteral(R"(["c_attn"])")
                              << QStringLiteral("CAUSAL_LM");
        QTest::newRow("t5") << site + QStringLiteral("t5/modeling_t5.py") << QStringLiteral(R"(["q", "v"])")
                            << QStringLiteral("SEQ_2_SEQ_LM");
        QTest::newRow("bert") << site + QStringLiteral("bert/modeling_bert.py")
                              << QStringLiteral(R"(["query", "value"])") << QString();
        QTest::newRow("falcon") << site + QStringLiteral("falcon/modeling_falcon.py")
                                << QStringLiteral(R"(["query_key_value"])") << QStringLiteral("CAUSAL_LM");
        // A type without a known default: PEFT adapts every linear layer of a PreTrainedModel.
        QTest::newRow("new architecture")
            << site + QStringLiteral("zamba9/modeling_zamba9.py") << QStringLiteral("\"all-linear\"") << QString();
        QTest::newRow("remote code") << QStringLiteral(
            "/home/u/.cache/huggingface/modules/transformers_modules/THUDM/chatglm2-6b/modeling_chatglm.py")
                                     << QStringLiteral(R"(["query_key_value"])") << QStringLiteral("CAUSAL_LM");
    }

    void huggingFaceArchitecturesNameTheirProjections()
    {
        QFETCH(QString, file);
        QFETCH(QString, modules);
        QFETCH(QString, task);
        const std::string path = file.toStdString();
        const LoraTarget target = loraTargetOf({ moduleCall, modeling(path), linearForward });
        QVERIFY(target.applies());
        QVERIFY(target.transformers);
        QCOMPARE(QString::fromStdString(target.modules), modules);
        QCOMPARE(QString::fromStdString(target.taskType), task);
        QVERIFY2(contains(target.evidence, "modeling_"), target.evidence.c_str());
    }

    // Trained by transformers' Trainer or loaded by from_pretrained: a PreTrainedModel, whose linear
    // layers PEFT finds itself.
    void transformersTrainerMeansAPreTrainedModel()
    {
        const LoraTarget target = loraTargetOf({ moduleCall,
            { "/opt/conda/lib/python3.11/site-packages/transformers/trainer.py", "training_step" }, linearForward });
        QVERIFY(target.applies());
        QCOMPARE(target.modules, std::string("\"all-linear\""));
        QVERIFY(contains(target.evidence, "trainer.py"));
    }

    // A diffusion transformer or UNet from diffusers: its attention's to_q/to_k/to_v/to_out.0.
    void diffusersAttentionGetsItsOwnNames()
    {
        const LoraTarget target = loraTargetOf({ moduleCall,
            modeling("/envs/a/lib/python3.11/site-packages/diffusers/models/attention_processor.py"), linearForward });
        QVERIFY(target.applies());
        QVERIFY(!target.transformers);
        QVERIFY(contains(target.modules, "to_q"));
        QVERIFY(!contains(target.modules, "q_proj"));
        const std::optional<Fix> fix = makeFix(FixKind::Lora, contextWith(target));
        QVERIFY(fix.has_value());
        QVERIFY(contains(fix->snippet, "\"to_q\""));
        QVERIFY(!contains(fix->snippet, "q_proj"));
        QVERIFY(!contains(fix->snippet, "CAUSAL_LM"));
        // QLoRA's 4-bit base is transformers' from_pretrained: not offered here.
        QVERIFY(!contains(fix->snippet, "BitsAndBytesConfig"));
        QVERIFY(contains(fix->detail, "diffusers"));
    }

    // A model of the user's own code: attention over nn.Linear layers, whatever it calls them.
    void ownTransformerIsAdaptedThroughItsLinearLayers()
    {
        const LoraTarget target = loraTargetOf(
            { moduleCall, { "/home/u/cs336_basics/model.py", "scaled_dot_product_attention" }, linearForward });
        QVERIFY(target.applies());
        QVERIFY(contains(target.modules, "torch.nn.Linear"));
        const std::optional<Fix> fix = makeFix(FixKind::Lora, contextWith(target));
        QVERIFY(fix.has_value());
        QVERIFY(!contains(fix->snippet, "q_proj"));
    }

    void convolutionalNetworkGetsNoAdapter()
    {
        const LoraTarget target
            = loraTargetOf({ moduleCall, { "/home/u/models/resnet_unet.py", "forward" }, convForward, linearForward });
        QVERIFY(!target.applies());
        QVERIFY(!makeFix(FixKind::Lora, contextWith(target)).has_value());
    }

    void nothingShownMeansNoAdapter()
    {
        QVERIFY(!loraTargetOf(std::vector<ModelFrame> {}).applies());
        QVERIFY(!makeFix(FixKind::Lora, FixContext {}).has_value());
    }

    // A pasted traceback's frames reach the same reading.
    void tracebackFramesShowTheModel()
    {
        const TextFindings findings = parseText(
            "Traceback (most recent call last):\n"
            "  File \"/envs/a/lib/python3.10/site-packages/diffusers/models/transformers/transformer_flux.py\", "
            "line 512, in forward\n"
            "    encoder_hidden_states, hidden_states = block(\n"
            "  File \"/envs/a/lib/python3.10/site-packages/diffusers/models/attention_processor.py\", line 2379, in "
            "__call__\n"
            "    query = attn.to_q(hidden_states)\n"
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 72.00 MiB. GPU 0 has a total capacity of "
            "23.68 GiB of which 40.75 MiB is free. Of the allocated memory 22.90 GiB is allocated by PyTorch, and "
            "300.03 MiB is reserved by PyTorch but unallocated.\n");
        std::vector<const TracebackInfo*> tracebacks;
        for (const OomMessage& message : findings.oomMessages) {
            if (message.traceback)
                tracebacks.push_back(&*message.traceback);
        }
        for (const TracebackInfo& traceback : findings.tracebacks)
            tracebacks.push_back(&traceback);
        QVERIFY(!tracebacks.empty());
        const LoraTarget target = loraTargetOf(tracebacks);
        QVERIFY(target.applies());
        QVERIFY(contains(target.modules, "to_q"));
    }
};

QTEST_GUILESS_MAIN(TestLoraTarget)
#include "tst_loratarget.moc"
