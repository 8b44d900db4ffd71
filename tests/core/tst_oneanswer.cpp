#include "common/testutil.h"
#include "core/caseanalysis.h"
#include "core/diagnosis/textdiagnosis.h"
#include "core/presentation/explain.h"
#include "core/presentation/verdict.h"
#include "core/textbrief.h"
#include "core/textreport.h"
#include "parsers/inputloader.h"
#include "parsers/text/textparser.h"

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
};

QTEST_GUILESS_MAIN(TestOneAnswer)
#include "tst_oneanswer.moc"
