#include "common/testutil.h"
#include "common/textfixtures.h"
#include "core/analysis/cardreconciliation.h"
#include "core/caseanalysis.h"
#include "core/diagnosis/fixladderlora.h"
#include "core/diagnosis/textdiagnosis.h"
#include "core/presentation/explain.h"
#include "core/presentation/verdict.h"
#include "core/report/htmlreport.h"
#include "core/textbrief.h"
#include "core/textreport.h"
#include "parsers/inputloader.h"
#include "parsers/text/textparser.h"

#include <QDir>
#include <QTest>

#include <algorithm>
#include <cmath>
#include <string>

using namespace oomlens;

// One fact, one value: what the text, the JSON and the evidence say of a case cannot disagree.
// Each case below is a contradiction real pastes showed; the test fails if it comes back.
namespace {

bool contains(const std::string& text, std::string_view needle)
{
    return text.find(needle) != std::string::npos;
}

std::string allText(const std::vector<Diagnosis>& diagnoses)
{
    std::string text;
    for (const Diagnosis& d : diagnoses) {
        text += d.title + "\n" + d.summary + "\n";
        for (const Evidence& e : d.evidence)
            text += e.text + "\n";
        for (const Fix& f : d.fixes)
            text += f.title + "\n" + f.detail + "\n" + f.snippet + "\n";
    }
    return text;
}

Case textCase(const std::string& text)
{
    Case input;
    addInput(input, "paste.txt", text);
    return input;
}

// A T3 message cut right after the other process's size (../shared/corpus tb-032's last line).
const char* cutAfterProcess = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 15.46 GiB. GPU 0 has a "
                              "total capacity of 79.15 GiB of which 5.50 GiB is free. Process 1079173 has 6.04 GiB";

const char* mpsBackward = R"(Traceback (most recent call last):
  File "/opt/envs/hf/lib/python3.10/site-packages/torch/autograd/graph.py", line 825, in _engine_run_backward
    return Variable._execution_engine.run_backward(  # Calls into the C++ engine to run the backward pass
RuntimeError: MPS backend out of memory (MPS allocated: 11.14 GB, other allocations: 6.65 GB, max allowed: 18.13 GB). Tried to allocate 375.40 MB on private pool. Use PYTORCH_MPS_HIGH_WATERMARK_RATIO=0.0 to disable upper limit for memory allocations (may cause system failure).
)";

// A HIP card shared with another process: the verdict is about memory outside PyTorch's cache, so
// the rest of the card is explained, in ROCm's words.
const char* hipOtherProcess
    = "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
      "capacity of 63.98 GiB of which 1.00 GiB is free. Process 4242 has 30.00 GiB memory in "
      "use. Including non-PyTorch memory, this process has 32.90 GiB memory in use. Of the "
      "allocated memory 30.00 GiB is allocated by PyTorch, and 1.00 GiB is reserved by PyTorch "
      "but unallocated.";

// A card whose memory outside the cache is a context's worth (0.45 GiB): nothing there explains
// the failure, so the answer does not list what the rest of a card usually is.
const char* smallRest = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB. GPU 0 has a total "
                        "capacity of 23.69 GiB of which 256.00 MiB is free. Including non-PyTorch memory, this process "
                        "has 23.43 GiB memory in use. Of the allocated memory 21.00 GiB is allocated by PyTorch, and "
                        "2.00 GiB is reserved by PyTorch but unallocated.";

// Terminal rows the text takes at `columns` wide: a long evidence line wraps.
int screenRows(const std::string& text, size_t columns)
{
    int rows = 0;
    size_t start = 0;
    while (start < text.size()) {
        size_t end = text.find('\n', start);
        if (end == std::string::npos)
            end = text.size();
        rows += static_cast<int>(std::max<size_t>(1, (end - start + columns - 1) / columns));
        start = end + 1;
    }
    return rows;
}

// What one answer must never say at once; empty when it holds together, else the first clash.
std::string contradiction(const Case& input, const CaseAnalysis& analysis, const std::string& brief,
    const std::string& full, const LoraTarget& lora)
{
    for (const OomMessage& message : input.text.oomMessages) {
        if (message.totalBytes && contains(full, "card's size is not in the message"))
            return "says the card's size is missing while the message gives it";
        if (message.backend == Backend::Hip || message.backend == Backend::Mps) {
            for (const char* foreign : { "nvidia-smi", "cuBLAS", "CUDA context", "NCCL buffers" })
                if (contains(full, foreign))
                    return std::string("CUDA's ") + foreign + " for a " + std::string(backendName(message.backend))
                        + " failure";
        }
    }
    const CardReconciliation card = reconcileCard(input, analysis);
    if (!card.restMatters && contains(full, "The rest of the card is usually"))
        return "explains the rest of the card where it does not matter";
    // The adapter's layers are the model's: Llama's names only for a model that has them.
    if (contains(full, "target_modules") && !lora.applies())
        return "offers LoRA for a model the inputs do not show";
    if (contains(full, R"(["q_proj", "v_proj"])") && !contains(lora.modules, "q_proj"))
        return "names q_proj/v_proj for a model without them";
    const Verdict verdict = verdictOf(analysis);
    if (verdict.fix && !contains(full, verdict.fix->title))
        return "the brief's fix is not in the full answer";
    if (!verdict.empty() && !contains(brief, verdict.diagnosis->title))
        return "the brief lacks its own verdict";
    return {};
}

} // namespace

class TestOneAnswer : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    // "Process N has X" cut before "memory in use" is still a process, and the diagnosis uses it.
    void cutProcessClauseIsRead()
    {
        const TextFindings findings = parseText(cutAfterProcess);
        QCOMPARE(findings.oomMessages.size(), size_t(1));
        const OomMessage& message = findings.oomMessages.front();
        QCOMPARE(message.processes.size(), size_t(1));
        QCOMPARE(message.processes.front().pid.value_or(0), int64_t(1079173));
        QCOMPARE(message.processes.front().bytes.value_or(0), uint64_t(std::llround(6.04 * double(uint64_t(1) << 30))));
    }

    void cutProcessClauseIsUsedAndTheCardIsNotDenied()
    {
        const Case input = textCase(cutAfterProcess);
        const CaseAnalysis analysis = analyzeCase(input);
        const std::string text = allText(analysis.diagnoses);
        QVERIFY2(contains(text, "1079173"), text.c_str());
        // The message gives the card's size: no line may say it does not.
        QVERIFY2(!contains(text, "card's size is not in the message"), text.c_str());
        QVERIFY(contains(caseToText(input, analysis), "79.15 GiB"));
        // The other process could not have made room (5.50 + 6.04 < 15.46): it is not the verdict.
        QVERIFY(!analysis.diagnoses.empty());
        QVERIFY(analysis.diagnoses.front().id != DiagnosisId::OtherProcess);
        QVERIFY2(contains(text, "would not have fit"), text.c_str());
    }

    // A failure on a line that reads Adam's state is not the state arriving.
    void foreachUpdateIsNotTheStateArriving()
    {
        const std::string paste
            = "  File \"/envs/a/lib/python3.10/site-packages/torch/optim/adam.py\", line 505, in _multi_tensor_adam\n"
              "    exp_avg_sq_sqrt = torch._foreach_sqrt(device_exp_avg_sqs)\n"
              "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 246.00 MiB (GPU 3; 39.59 GiB total "
              "capacity; 37.60 GiB already allocated; 99.69 MiB free; 38.17 GiB reserved in total by PyTorch)\n";
        const std::vector<Diagnosis> diagnoses = diagnoseText(parseText(paste));
        const auto step = std::find_if(
            diagnoses.begin(), diagnoses.end(), [](const Diagnosis& d) { return d.id == DiagnosisId::OptimizerStep2; });
        QVERIFY(step != diagnoses.end());
        QVERIFY2(!contains(step->title, "arrives at the first step"), step->title.c_str());
        QVERIFY2(!contains(step->summary, "at the first step"), step->summary.c_str());
        QVERIFY(contains(allText({ *step }), "_foreach_sqrt"));
    }

    // Apple MPS gets only advice that exists on it: no CUDA context, NCCL, Ampere or nvidia-smi, and
    // no "other process" to stop for memory the process itself holds.
    void mpsGetsOnlyMpsAdvice()
    {
        const Case input = textCase(mpsBackward);
        const CaseAnalysis analysis = analyzeCase(input);
        QVERIFY(!analysis.diagnoses.empty());
        const std::string text = allText(analysis.diagnoses) + caseToText(input, analysis);
        for (const char* foreign : { "Ampere", "NCCL", "CUDA context", "nvidia-smi", "CUDA_VISIBLE_DEVICES",
                 "Free the card from the other process", "cuDNN" })
            QVERIFY2(!contains(text, foreign), foreign);
        QVERIFY(contains(text, "MPS"));
    }

    // The backend's own tools: a ROCm card is not found through nvidia-smi.
    void rocmOtherProcessUsesRocmTools()
    {
        const char* hip = "torch.OutOfMemoryError: HIP out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                          "capacity of 63.98 GiB of which 1.00 GiB is free. Process 4242 has 30.00 GiB memory in use. "
                          "Of the allocated memory 30.00 GiB is allocated by PyTorch, and 1.00 GiB is reserved by "
                          "PyTorch but unallocated.";
        const std::string text = allText(diagnoseText(parseText(hip)));
        QVERIFY2(contains(text, "Free the card from the other process"), text.c_str());
        QVERIFY(contains(text, "rocm-smi"));
        QVERIFY(!contains(text, "nvidia-smi"));
        QVERIFY(!contains(text, "CUDA_VISIBLE_DEVICES"));
    }

    // The brief answer carries the verdict, its evidence and a fix, and every one of them is the
    // full output's too.
    void briefIsPartOfTheFullAnswer()
    {
        const QByteArray bytes = test::readFile(QStringLiteral(OOMLENS_SOURCE_DIR "/resources/examples/oom_case.txt"));
        Case input;
        addInput(input, "oom_case.txt", std::string_view(bytes.constData(), size_t(bytes.size())));
        const CaseAnalysis analysis = analyzeCase(input);
        const Verdict verdict = verdictOf(analysis);
        QVERIFY(!verdict.empty());
        QVERIFY(!verdict.evidence.empty() && verdict.evidence.size() <= verdictEvidenceLines);
        QVERIFY(verdict.fix != nullptr);
        const std::string brief = caseToBriefText(input, analysis);
        const std::string full = caseToText(input, analysis);
        QVERIFY(contains(brief, verdict.diagnosis->title));
        QVERIFY(contains(brief, verdict.fix->title));
        for (const Evidence* evidence : verdict.evidence) {
            QVERIFY(contains(brief, evidence->text));
            QVERIFY(contains(full, evidence->text));
        }
        QVERIFY(contains(full, verdict.fix->title));
        QVERIFY(std::count(brief.begin(), brief.end(), '\n') <= 30);
    }

    // The rest of the card in the backend's own words: a HIP context, rocBLAS and RCCL on ROCm.
    void rocmRestOfCardSpeaksRocm()
    {
        const Case input = textCase(hipOtherProcess);
        const CaseAnalysis analysis = analyzeCase(input);
        const CardReconciliation card = reconcileCard(input, analysis);
        QVERIFY(card.restMatters);
        const std::string full = caseToText(input, analysis);
        const std::string html = report::buildHtmlReport(input, analysis);
        for (const std::string* text : { &full, &html }) {
            QVERIFY(contains(*text, "HIP context"));
            QVERIFY(contains(*text, "RCCL buffers"));
            QVERIFY(contains(*text, "rocm-smi"));
            for (const char* foreign : { "CUDA context", "cuBLAS", "nvidia-smi", "CUDA_MODULE_LOADING" })
                QVERIFY2(!contains(*text, foreign), foreign);
        }
    }

    // A context's worth outside the cache: the report and the text leave the rest-of-card list out;
    // 4 GiB outside a card that lacked 0.75 GiB (tests/data/history/card_oom.txt) keeps it.
    void restOfCardOnlyWhereItMatters()
    {
        const Case small = textCase(smallRest);
        const CaseAnalysis smallAnalysis = analyzeCase(small);
        QVERIFY(reconcileCard(small, smallAnalysis).available());
        QVERIFY(!reconcileCard(small, smallAnalysis).restMatters);
        QVERIFY(!contains(report::buildHtmlReport(small, smallAnalysis), "The rest of the card: what it usually is"));
        QVERIFY(!contains(caseToText(small, smallAnalysis), "The rest of the card is usually"));

        Case large;
        addFile(large, QString(test::testDataDir() + QStringLiteral("/history/card_oom.txt")).toStdString());
        const CaseAnalysis largeAnalysis = analyzeCase(large);
        QVERIFY(reconcileCard(large, largeAnalysis).restMatters);
        QVERIFY(contains(report::buildHtmlReport(large, largeAnalysis), "The rest of the card: what it usually is"));
    }

    // Every real paste and snapshot: the default answer fits on one screen (at most
    // briefScreenRows rows of 100 columns, long lines wrapped: a laptop terminal) and holds no
    // contradiction.
    void corpusAnswersFitAndAgree()
    {
        OOMLENS_REQUIRE_SHARED();
        constexpr int briefScreenRows = 40;
        int answers = 0, mostRows = 0;
        std::string longest;
        const auto check = [&](const std::string& name, const Case& input, const LoraTarget& lora) {
            const CaseAnalysis analysis = analyzeCase(input);
            const std::string brief = caseToBriefText(input, analysis);
            const std::string full = caseToText(input, analysis);
            const int rows = screenRows(brief, 100);
            if (rows > mostRows) {
                mostRows = rows;
                longest = name;
            }
            QVERIFY2(rows <= briefScreenRows, (name + ": " + std::to_string(rows) + " rows\n" + brief).c_str());
            const std::string clash = contradiction(input, analysis, brief, full, lora);
            QVERIFY2(clash.empty(), (name + ": " + clash).c_str());
            ++answers;
        };
        for (const char* file :
            { "oom_messages.jsonl", "oom_tracebacks.jsonl", "memory_summaries.jsonl", "serving_oom.jsonl" }) {
            for (const auto& record : test::corpusTextRecords(QString::fromLatin1(file))) {
                const Case input = textCase(record["text"].get<std::string>());
                std::vector<const TracebackInfo*> tracebacks;
                for (const OomMessage& message : input.text.oomMessages) {
                    if (message.traceback)
                        tracebacks.push_back(&*message.traceback);
                }
                for (const TracebackInfo& traceback : input.text.tracebacks)
                    tracebacks.push_back(&traceback);
                check(record["id"].get<std::string>(), input, loraTargetOf(tracebacks));
                if (QTest::currentTestFailed())
                    return;
            }
        }
        for (const char* folder : { "/snapshots", "/snapshots-rl" }) {
            const QDir dir(test::corpusDir() + QLatin1String(folder));
            for (const QString& name : dir.entryList({ QStringLiteral("*.pickle"), QStringLiteral("*.pkl") })) {
                Case input;
                addFile(input, dir.filePath(name).toStdString());
                const LoraTarget lora
                    = input.snapshots.empty() ? LoraTarget {} : loraTargetOf(*input.snapshots.front());
                check(name.toStdString(), input, lora);
                if (QTest::currentTestFailed())
                    return;
            }
        }
        QVERIFY(answers >= 100);
        qInfo("%d answers, the longest %d rows (%s)", answers, mostRows, longest.c_str());
    }
};

QTEST_GUILESS_MAIN(TestOneAnswer)
#include "tst_oneanswer.moc"
