// What a training log printed before the failure, in logging styles other than family C's: the HF
// Trainer's dicts, Lightning's progress bar and model summary, fairseq's token counts, plain prints of
// torch.cuda.memory_allocated() in bytes, tensor shapes alone. Inputs in tests/data/text/progress_logs.
#include "common/diagnosisids.h"
#include "common/testutil.h"
#include "core/diagnosis/textdiagnosis.h"
#include "core/units.h"
#include "parsers/text/textparser.h"

#include <QTest>

using namespace oomlens;

namespace {

TextFindings findingsOf(const char* name)
{
    const QByteArray bytes
        = test::readFile(test::testDataDir() + QStringLiteral("/text/progress_logs/") + QLatin1String(name));
    return parseText(std::string_view(bytes.constData(), static_cast<size_t>(bytes.size())));
}

bool says(const Diagnosis& d, const std::string& words)
{
    for (const auto& e : d.evidence) {
        if (e.text.find(words) != std::string::npos)
            return true;
    }
    return false;
}

} // namespace

class TestDiagTextLogs : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void topDiagnosis_data()
    {
        QTest::addColumn<QString>("file");
        QTest::addColumn<QString>("top");
        QTest::newRow("HF dicts, MiB in the key") << "hf_dict_mib_leak.txt"
                                                  << "leak";
        QTest::newRow("memory_allocated() in bytes") << "plain_print_bytes_leak.txt"
                                                     << "leak";
        QTest::newRow("Lightning bar seq_len") << "lightning_bar_seq_len_longest.txt"
                                               << "longest_batch";
        QTest::newRow("fairseq ntokens") << "fairseq_ntokens_longest.txt"
                                         << "longest_batch";
        QTest::newRow("shapes alone") << "shape_only_longest.txt"
                                      << "longest_batch";
        QTest::newRow("Lightning 16-mixed 6.7B") << "lightning_summary_16_mixed_capacity.txt"
                                                 << "capacity";
    }

    // Each log names its cause in its own style.
    void topDiagnosis()
    {
        QFETCH(QString, file);
        QFETCH(QString, top);
        const auto diagnoses = diagnoseText(findingsOf(file.toUtf8().constData()));
        QVERIFY(!diagnoses.empty());
        QCOMPARE(test::diagnosisName(diagnoses.front().id), top);
    }

    void memoryLogFields()
    {
        // {'step': 50, 'gpu_mem_allocated_mib': 11300.5}: the unit in the key, the step in the dict.
        const auto hf = findingsOf("hf_dict_mib_leak.txt").oomMessages.front().memoryLog;
        QCOMPARE(hf.size(), size_t(6));
        QCOMPARE(hf.front().step, int64_t(50));
        QCOMPARE(*hf.front().bytes, uint64_t(11300.5 * MiB));
        QCOMPARE(hf.front().bytesMetric, std::string("allocated"));

        // torch.cuda.memory_allocated() printed raw: bytes.
        const auto plain = findingsOf("plain_print_bytes_leak.txt").oomMessages.front().memoryLog;
        QCOMPARE(plain.size(), size_t(5));
        QCOMPARE(*plain.back().bytes, uint64_t(4000000000) + 50 * uint64_t(90000000));

        // A tqdm bar's counter is the step when nothing names one.
        const auto bar = findingsOf("lightning_bar_seq_len_longest.txt").oomMessages.front().memoryLog;
        QCOMPARE(bar.size(), size_t(5));
        QCOMPARE(bar.back().step, int64_t(124));
        QCOMPARE(*bar.back().sequenceLength, uint64_t(2048));
        QVERIFY(!bar.back().bytes); // "1.20it/s" and "v_num=2" are not memory

        const auto fairseq = findingsOf("fairseq_ntokens_longest.txt").oomMessages.front().memoryLog;
        QCOMPARE(fairseq.back().step, int64_t(303));
        QCOMPARE(*fairseq.back().tokens, uint64_t(14336));
        QCOMPARE(fairseq.back().batch, std::string("32"));

        // A line with only a shape is kept: torch.Size([4, 8192]) reads 4x8192.
        const auto shapes = findingsOf("shape_only_longest.txt").oomMessages.front().memoryLog;
        QCOMPARE(shapes.size(), size_t(4));
        QCOMPARE(shapes.back().batch, std::string("4x8192"));
    }

    void memoryThatGrowsWithTheBatchIsNoLeak()
    {
        // Memory rises at every step, but so does the sequence length: the work changed, not a leak.
        QVERIFY(!test::findDiagnosis(diagnoseText(findingsOf("growing_with_length_not_leak.txt")), DiagnosisId::Leak));
    }

    void recipeDecidesTheProjection()
    {
        // The same 6.7B trainable parameters with AdamW on an 80 GiB card. 16-mixed keeps fp32 weights:
        // 16 B each, 100 GiB, cannot fit. bf16-true keeps 16-bit weights and moments: 8 B each, 50 GiB.
        const TextFindings mixed = findingsOf("lightning_summary_16_mixed_capacity.txt");
        const OomMessage& message = mixed.oomMessages.front();
        QCOMPARE(*message.trainableParameters, uint64_t(6700000000));
        QCOMPARE(*message.totalParameters, uint64_t(6700000000));
        QVERIFY(message.recipe.autocast);
        QCOMPARE(message.recipe.optimizer, std::string("adamw"));
        const auto diagnoses = diagnoseText(mixed);
        QVERIFY(says(diagnoses.front(), "training keeps 16 bytes for each"));
        QVERIFY(says(diagnoses.front(), "mixed precision keeps the weights in fp32"));
        QVERIFY(says(diagnoses.front(), "line 1: Using 16bit Automatic Mixed Precision (AMP)"));

        const TextFindings pure = findingsOf("lightning_summary_bf16_true_fits.txt");
        QCOMPARE(pure.oomMessages.front().recipe.weightPrecision, std::string("bf16"));
        const auto pureDiagnoses = diagnoseText(pure);
        QVERIFY(!pureDiagnoses.empty());
        QVERIFY(pureDiagnoses.front().title.find("training state") == std::string::npos);
        QCOMPARE(pureDiagnoses.front().id, DiagnosisId::FirstBackward);
    }

    void shardedStateIsNotProjectedPerGpu()
    {
        // ZeRO-3 splits weights, gradients and moments across the ranks: 6.7B parameters say nothing
        // of one GPU's share.
        const TextFindings findings = findingsOf("zero3_count_not_per_gpu.txt");
        QCOMPARE(findings.oomMessages.front().recipe.sharding, std::string("zero3"));
        for (const auto& d : diagnoseText(findings))
            QVERIFY(!says(d, "trainable parameters"));
    }

    void modelLibraryFrameIsAForward()
    {
        // A pipeline call, then diffusers' attention: no module forward printed, the layer still says forward.
        const std::string oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 32.00 GiB. GPU 0 has a "
                                "total capacity of 23.65 GiB of which 17.96 GiB is free.";
        const std::string frames
            = "Traceback (most recent call last):\n"
              "  File \"gen.py\", line 12, in <module>\n"
              "    image = pipe(prompt).images[0]\n"
              "  File \"/venv/lib/python3.11/site-packages/diffusers/models/attention_processor.py\", "
              "line 688, in get_attention_scores\n"
              "    attention_scores = torch.baddbmm(\n";
        const TextFindings alone = parseText(frames + oom + "\n");
        QCOMPARE(alone.failingPhase(), Phase::Forward);
        QVERIFY(alone.oomMessages.front().traceback->phaseEvidence.find("get_attention_scores") != std::string::npos);

        // With an evaluation frame outside it, evaluation decides: the layer only speaks when nothing else does.
        const std::string eval
            = "Traceback (most recent call last):\n"
              "  File \"run.py\", line 40, in evaluate\n"
              "    out = model(batch)\n"
              "  File \"/venv/lib/python3.11/site-packages/transformers/models/llama/modeling_llama.py\", "
              "line 300, in forward\n"
              "    attn = q @ k.transpose(2, 3)\n";
        QCOMPARE(parseText(eval + oom + "\n").failingPhase(), Phase::Eval);
    }

    void parameterCountStyles_data()
    {
        QTest::addColumn<QString>("line");
        QTest::addColumn<qulonglong>("trainable");
        QTest::addColumn<qulonglong>("total");
        QTest::newRow("PEFT") << "trainable params: 4,194,304 || all params: 6,742,609,920 || trainable%: 0.0622"
                              << qulonglong(4194304) << qulonglong(6742609920);
        QTest::newRow("HF Trainer") << "  Number of trainable parameters = 1,235,814,400" << qulonglong(1235814400)
                                    << qulonglong(0);
        QTest::newRow("torchinfo") << "Trainable params: 124,439,808" << qulonglong(124439808) << qulonglong(0);
        QTest::newRow("plain") << "Model has 1.3B trainable parameters" << qulonglong(1300000000) << qulonglong(0);
        QTest::newRow("nanoGPT total") << "number of parameters: 123.69M" << qulonglong(0) << qulonglong(123690000);
        QTest::newRow("non-trainable") << "0         Non-trainable params" << qulonglong(0) << qulonglong(0);
    }

    void parameterCountStyles()
    {
        QFETCH(QString, line);
        QFETCH(qulonglong, trainable);
        QFETCH(qulonglong, total);
        const std::string oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
                                "total capacity of 79.15 GiB of which 1.00 GiB is free.";
        const TextFindings findings = parseText(line.toStdString() + "\n" + oom + "\n");
        QCOMPARE(findings.oomMessages.size(), size_t(1));
        const OomMessage& message = findings.oomMessages.front();
        QCOMPARE(qulonglong(message.trainableParameters.value_or(0)), trainable);
        QCOMPARE(qulonglong(message.totalParameters.value_or(0)), total);
    }

    void recipeStyles_data()
    {
        QTest::addColumn<QString>("line");
        QTest::addColumn<QString>("precision");
        QTest::addColumn<QString>("optimizer");
        QTest::addColumn<QString>("variant");
        QTest::newRow("HF args") << "bf16=True, optim=adamw_torch_fused,"
                                 << ""
                                 << "adamw"
                                 << "fused";
        QTest::newRow("from_pretrained")
            << "model = AutoModelForCausalLM.from_pretrained(name, torch_dtype=torch.bfloat16)"
            << "bf16"
            << ""
            << "";
        QTest::newRow("bnb paged") << "optim=paged_adamw_8bit"
                                   << ""
                                   << "adamw-8bit"
                                   << "paged";
        QTest::newRow("autocast dtype is compute") << "with torch.autocast('cuda', dtype=torch.bfloat16):"
                                                   << ""
                                                   << ""
                                                   << "";
        QTest::newRow("timestamp is not amp") << "timestamp=1700000000 sgd momentum=0.9"
                                              << ""
                                              << "sgd"
                                              << "";
    }

    void recipeStyles()
    {
        QFETCH(QString, line);
        QFETCH(QString, precision);
        QFETCH(QString, optimizer);
        QFETCH(QString, variant);
        const std::string oom = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
                                "total capacity of 79.15 GiB of which 1.00 GiB is free.";
        const TextFindings findings = parseText(line.toStdString() + "\n" + oom + "\n");
        const TrainingRecipe& recipe = findings.oomMessages.front().recipe;
        QCOMPARE(QString::fromStdString(recipe.weightPrecision), precision);
        QCOMPARE(QString::fromStdString(recipe.optimizer), optimizer);
        QCOMPARE(QString::fromStdString(recipe.optimizerVariant), variant);
        QCOMPARE(recipe.autocast, line.contains(QLatin1String("autocast")) || line.startsWith(QLatin1String("bf16")));
    }
};

QTEST_GUILESS_MAIN(TestDiagTextLogs)
#include "tst_diagtextlogs.moc"
