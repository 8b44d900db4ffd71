// The real serving and inference OOMs of ../shared/corpus/text/serving_oom.jsonl (labels written
// from the public threads): the engine read from the text, the engine's cause first, and never a
// training rung for an inference run. Skips when ../shared is absent.
#include "common/testutil.h"
#include "common/textfixtures.h"
#include "core/caseanalysis.h"
#include "parsers/inputloader.h"

#include <QTest>

#include <nlohmann/json.hpp>

#include <algorithm>
#include <map>
#include <set>

using namespace oomlens;

namespace {

// The corpus's cause labels in the catalogue's ids; "unknown" has none.
std::string expectedCause(const std::string& label)
{
    static const std::map<std::string, std::string> causes = {
        { "kv_cache_budget", "kv_cache_budget" },
        { "utilization_setting", "kv_cache_budget" },
        { "too_many_tokens_at_once", "engine_batch" },
        { "graph_capture", "graph_capture" },
        { "other_process", "other_process" },
        { "weights_do_not_fit", "capacity" },
        { "long_context_activation", "large_allocation" },
    };
    const auto found = causes.find(label);
    return found == causes.end() ? std::string() : found->second;
}

std::string expectedEngine(const std::string& label)
{
    return label == "trtllm" ? "tensorrt_llm" : label;
}

// Rows whose pasted text carries no sign of the inference run at all: a bare OOM message, the
// engine named only in the thread's title or prose. Nothing in the text tells them from training
// either: their workload is unknown, and they get only fixes that hold for both.
const std::map<std::string, const char*>& textWithoutEngine()
{
    static const std::map<std::string, const char*> rows = {
        { "srv-005", "a bare OOM message; generate() is named only in the thread" },
        { "srv-009", "a bare OOM message; the diffusers pipeline is in another paste of the thread" },
    };
    return rows;
}

// Rows whose text does not show the failure its label names.
const std::map<std::string, const char*>& failureNotInText()
{
    static const std::map<std::string, const char*> rows = {
        { "srv-041", "the paste ends after a capture that finished; the OOM is only in the thread's title" },
    };
    return rows;
}

// Fixes of a training step only: micro-batch and accumulation, autocast, activation checkpointing,
// ZeRO/FSDP, LoRA, the optimizer's state, the evaluation loop.
const std::set<std::string>& trainingFixIds()
{
    static const std::set<std::string> ids = { "micro_batch", "bf16", "checkpointing", "zero", "lora", "optimizer_8bit",
        "optimizer_foreach", "offload", "shorter_sequences", "eval_accumulation_steps", "eval_batch_size",
        "length_bucketing", "fsdp2", "reshard_after_forward", "offload_checkpointed_inputs" };
    return ids;
}

struct RowOutcome
{
    std::string engine; // empty: no inference run read
    std::string top; // empty: no diagnosis
    std::vector<std::string> trainingFixes;
    bool saysWorkloadUnknown = false; // a diagnosis says the text shows neither training nor inference
};

RowOutcome analyse(const nlohmann::json& record)
{
    Case input;
    addInput(input, record["id"].get<std::string>() + ".txt", record["text"].get<std::string>());
    const CaseAnalysis analysis = analyzeCase(input);
    RowOutcome outcome;
    if (analysis.serving)
        outcome.engine = std::string(servingEngineName(analysis.serving->run.engine));
    if (!analysis.diagnoses.empty())
        outcome.top = diagnosisIdText(analysis.diagnoses.front().id);
    for (const Diagnosis& diagnosis : analysis.diagnoses) {
        for (const Evidence& evidence : diagnosis.evidence)
            outcome.saysWorkloadUnknown
                = outcome.saysWorkloadUnknown || evidence.text.find("trains or serves") != std::string::npos;
        for (const Fix& fix : diagnosis.fixes) {
            if (trainingFixIds().count(fix.id()))
                outcome.trainingFixes.push_back(fix.id());
        }
    }
    return outcome;
}

} // namespace

class TestServingCorpus : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void rows_data()
    {
        QTest::addColumn<int>("index");
        if (!test::hasShared())
            return;
        const auto records = test::corpusTextRecords(QStringLiteral("serving_oom.jsonl"));
        for (size_t i = 0; i < records.size(); ++i)
            QTest::newRow(records[i]["id"].get<std::string>().c_str()) << static_cast<int>(i);
    }

    void rows()
    {
        OOMLENS_REQUIRE_SHARED();
        QFETCH(int, index);
        const nlohmann::json record = test::corpusTextRecords(QStringLiteral("serving_oom.jsonl")).at(index);
        const std::string id = record["id"].get<std::string>();
        const RowOutcome outcome = analyse(record);
        const bool engineShown = !textWithoutEngine().count(id);
        if (engineShown)
            QCOMPARE(outcome.engine, expectedEngine(record["engine"].get<std::string>()));
        const std::string cause = expectedCause(record["cause"].get<std::string>());
        if (!cause.empty() && !failureNotInText().count(id))
            QCOMPARE(outcome.top, cause);
        if (!engineShown)
            QVERIFY2(outcome.saysWorkloadUnknown,
                "a text that shows no engine and no training says its workload is unknown");
        const std::string offered = outcome.trainingFixes.empty() ? std::string() : outcome.trainingFixes.front();
        QVERIFY2(outcome.trainingFixes.empty(), ("training rung offered: " + offered).c_str());
    }

    // The score the rows add up to, printed for the record.
    void score()
    {
        OOMLENS_REQUIRE_SHARED();
        const auto records = test::corpusTextRecords(QStringLiteral("serving_oom.jsonl"));
        int engines = 0;
        int causes = 0;
        int causesJudged = 0;
        int clean = 0;
        for (const nlohmann::json& record : records) {
            const RowOutcome outcome = analyse(record);
            engines += outcome.engine == expectedEngine(record["engine"].get<std::string>());
            const std::string cause = expectedCause(record["cause"].get<std::string>());
            if (!cause.empty()) {
                ++causesJudged;
                causes += outcome.top == cause;
            }
            clean += outcome.trainingFixes.empty();
        }
        qInfo("serving corpus: engine %d/%zu, the labelled cause first %d/%d, no training rung %d/%zu", engines,
            records.size(), causes, causesJudged, clean, records.size());
        QVERIFY(!records.empty());
        QVERIFY(engines >= static_cast<int>(records.size() - textWithoutEngine().size()));
    }
};

QTEST_GUILESS_MAIN(TestServingCorpus)
#include "tst_servingcorpus.moc"
