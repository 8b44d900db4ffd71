#include "core/caseanalysis.h"
#include "core/jsonexport.h"
#include "core/textreport.h"
#include "parsers/inputloader.h"
#include "parsers/text/textparser.h"

#include <QTest>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

using namespace oomlens;

// torchrun prefixes every line a worker prints with "[rankN]:"; when several ranks fail at once
// their tracebacks arrive line by line, mixed. Each rank's lines are read as that rank's own, so
// every message gets its own traceback, the failing rank's message comes first, and when several
// ranks failed the message says which. The logs below follow the shape of torchrun 2.x output:
// worker lines prefixed, the launcher's own lines and its ChildFailedError summary not.
namespace {

const std::string site = "/opt/conda/lib/python3.11/site-packages/";

std::string oomLine(int gpu, const char* size)
{
    return std::string("torch.OutOfMemoryError: CUDA out of memory. Tried to allocate ") + size + ". GPU "
        + std::to_string(gpu)
        + " has a total capacity of 79.15 GiB of which 312.00 MiB is free. Including non-PyTorch memory, this process "
          "has 78.83 GiB memory in use. Of the allocated memory 76.90 GiB is allocated by PyTorch, and 1.20 GiB is "
          "reserved by PyTorch but unallocated.";
}

// Lines of two ranks, taken alternately: what two processes writing to one terminal look like.
std::string interleaved(int rankA, const std::vector<std::string>& a, int rankB, const std::vector<std::string>& b)
{
    std::string text;
    for (size_t i = 0; i < std::max(a.size(), b.size()); ++i) {
        if (i < a.size())
            text += "[rank" + std::to_string(rankA) + "]: " + a[i] + "\n";
        if (i < b.size())
            text += "[rank" + std::to_string(rankB) + "]: " + b[i] + "\n";
    }
    return text;
}

const std::vector<std::string> forwardTraceback {
    "Traceback (most recent call last):",
    "  File \"/workspace/train.py\", line 142, in <module>",
    "    main()",
    "  File \"/workspace/train.py\", line 118, in main",
    "    outputs = model(**batch)",
    "  File \"" + site + "torch/nn/modules/module.py\", line 1747, in _call_impl",
    "    return forward_call(*args, **kwargs)",
    "  File \"" + site + "transformers/models/llama/modeling_llama.py\", line 1190, in forward",
    "    logits = self.lm_head(hidden_states)",
};

const std::vector<std::string> backwardTraceback {
    "Traceback (most recent call last):",
    "  File \"/workspace/train.py\", line 142, in <module>",
    "    main()",
    "  File \"/workspace/train.py\", line 121, in main",
    "    loss.backward()",
    "  File \"" + site + "torch/_tensor.py\", line 581, in backward",
    "    torch.autograd.backward(",
    "  File \"" + site + "torch/autograd/graph.py\", line 825, in _engine_run_backward",
    "    return Variable._execution_engine.run_backward(",
};

std::string launcherSummary(int firstFailure, int other)
{
    return "W1105 10:12:03.412000 2201 torch/distributed/elastic/multiprocessing/api.py:897] Sending process 2207 "
           "closing signal SIGTERM\n"
           "E1105 10:12:04.001000 2201 torch/distributed/elastic/multiprocessing/api.py:869] failed (exitcode: 1) "
           "local_rank: "
        + std::to_string(firstFailure)
        + " (pid: 2208) of binary: /opt/conda/bin/python\n"
          "Traceback (most recent call last):\n"
          "  File \"/opt/conda/bin/torchrun\", line 8, in <module>\n"
          "    sys.exit(main())\n"
          "  File \""
        + site
        + "torch/distributed/run.py\", line 892, in main\n"
          "    run(args)\n"
          "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: \n"
          "============================================================\n"
          "train.py FAILED\n"
          "------------------------------------------------------------\n"
          "Failures:\n"
          "[1]:\n"
          "  time      : 2024-11-05_10:12:03\n"
          "  host      : gpu-node-7\n"
          "  rank      : "
        + std::to_string(other) + " (local_rank: " + std::to_string(other)
        + ")\n"
          "  exitcode  : 1 (pid: 2207)\n"
          "------------------------------------------------------------\n"
          "Root Cause (first observed failure):\n"
          "[0]:\n"
          "  time      : 2024-11-05_10:12:02\n"
          "  host      : gpu-node-7\n"
          "  rank      : "
        + std::to_string(firstFailure) + " (local_rank: " + std::to_string(firstFailure)
        + ")\n"
          "  exitcode  : 1 (pid: 2208)\n"
          "  error_file: <N/A>\n"
          "  traceback : To enable traceback see: https://pytorch.org/docs/stable/elastic/errors.html\n"
          "============================================================\n";
}

bool hasFrameCode(const TracebackInfo& traceback, const std::string& code)
{
    for (const TracebackFrame& frame : traceback.frames) {
        if (frame.code.find(code) != std::string::npos)
            return true;
    }
    return false;
}

} // namespace

class TestRankInterleaving : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    // Ranks 0 and 1 both fail, their lines mixed one for one; torchrun's summary says rank 1 failed
    // first. Rank 1 (printed second on each line pair) ran out in forward, rank 0 in backward.
    void twoRanksFailTogether()
    {
        std::vector<std::string> rank0 = backwardTraceback;
        rank0.push_back(oomLine(0, "3.00 GiB"));
        std::vector<std::string> rank1 = forwardTraceback;
        rank1.push_back(oomLine(1, "1.95 GiB"));
        const std::string log = interleaved(0, rank0, 1, rank1) + launcherSummary(1, 0);
        const TextFindings findings = parseText(log);
        QCOMPARE(findings.oomMessages.size(), size_t(2));
        const OomMessage& first = findings.oomMessages[0];
        QCOMPARE(first.rank, std::optional<int>(1));
        QCOMPARE(first.device, std::optional<int>(1));
        QVERIFY(first.traceback);
        QVERIFY(hasFrameCode(*first.traceback, "outputs = model(**batch)"));
        QVERIFY(!hasFrameCode(*first.traceback, "loss.backward()")); // never the neighbour's frames
        QCOMPARE(first.phase, Phase::Forward);
        const OomMessage& second = findings.oomMessages[1];
        QCOMPARE(second.rank, std::optional<int>(0));
        QVERIFY(second.traceback && hasFrameCode(*second.traceback, "loss.backward()"));
        QVERIFY(!hasFrameCode(*second.traceback, "outputs = model(**batch)"));
        QCOMPARE(second.phase, Phase::Backward);
        QCOMPARE(findings.failedRanks, (std::vector<int> { 1, 0 }));
        QCOMPARE(findings.failingPhase(), Phase::Forward);
        QVERIFY(std::find(first.notes.begin(), first.notes.end(),
                    "ranks 0 and 1 ran out of memory; this is rank 1's message, the first failure torchrun observed, "
                    "with its own traceback")
            != first.notes.end());
        // Source lines still point into the whole log: rank 1's message is on line 20.
        QCOMPARE(first.sourceLine, size_t(20));
        QCOMPARE(second.sourceLine, size_t(19));

        // diagnose --json and the text output say it too.
        Case input;
        addInput(input, "torchrun.log", log);
        const CaseAnalysis analysis = analyzeCase(input);
        const auto json = caseToJson(input, analysis);
        QCOMPARE(json.at("oom_messages").at(0).at("rank").get<int>(), 1);
        QCOMPARE(json.at("oom_messages").at(1).at("rank").get<int>(), 0);
        QCOMPARE(json.at("failed_ranks").get<std::vector<int>>(), (std::vector<int> { 1, 0 }));
        const std::string text = caseToText(input, analysis);
        QVERIFY2(text.find("ranks 0 and 1 ran out of memory") != std::string::npos, text.c_str());
    }

    // Without torchrun's summary the first message printed is the failing rank's.
    void firstPrintedWithoutSummary()
    {
        std::vector<std::string> rank2 = forwardTraceback;
        rank2.push_back(oomLine(2, "1.95 GiB"));
        std::vector<std::string> rank3 = backwardTraceback;
        rank3.push_back(oomLine(3, "3.00 GiB"));
        rank3.insert(rank3.begin(), "step 40 | loss 2.113"); // rank 3's message comes one line later
        const TextFindings findings = parseText(interleaved(3, rank3, 2, rank2));
        QCOMPARE(findings.oomMessages.size(), size_t(2));
        QCOMPARE(findings.oomMessages[0].rank, std::optional<int>(2));
        QCOMPARE(findings.oomMessages[0].phase, Phase::Forward);
        QCOMPARE(findings.failedRanks, (std::vector<int> { 2, 3 }));
        const auto& notes = findings.oomMessages[0].notes;
        QVERIFY(std::find(notes.begin(), notes.end(),
                    "ranks 2 and 3 ran out of memory; this is rank 2's message, the first one printed, with its own "
                    "traceback")
            != notes.end());
    }

    // One rank runs out of memory while another, interleaved, dies of the collective it was waiting
    // in: the OOM message keeps its own rank's frames, the other traceback stays a bare one, and no
    // note claims several OOMs.
    void oneRankFailsOthersTimeOut()
    {
        std::vector<std::string> rank0 = backwardTraceback;
        rank0.push_back(oomLine(0, "3.00 GiB"));
        const std::vector<std::string> rank1 { "Traceback (most recent call last):",
            "  File \"/workspace/train.py\", line 142, in <module>", "    main()",
            "  File \"/workspace/train.py\", line 125, in main", "    optimizer.step()",
            "  File \"" + site + "torch/distributed/distributed_c10d.py\", line 2501, in all_reduce",
            "    work = group.allreduce([tensor], opts)",
            "torch.distributed.DistBackendError: [Rank 1] NCCL watchdog thread terminated with exception: "
            "NCCL communicator was aborted" };
        const TextFindings findings = parseText(interleaved(1, rank1, 0, rank0));
        QCOMPARE(findings.oomMessages.size(), size_t(1));
        const OomMessage& message = findings.oomMessages[0];
        QCOMPARE(message.rank, std::optional<int>(0));
        QCOMPARE(message.phase, Phase::Backward);
        QVERIFY(message.traceback && !hasFrameCode(*message.traceback, "optimizer.step()"));
        QCOMPARE(findings.failedRanks, std::vector<int> { 0 });
        QVERIFY(message.notes.empty() || message.notes.front().find("ranks") == std::string::npos);
        QCOMPARE(findings.tracebacks.size(), size_t(1));
        QVERIFY(hasFrameCode(findings.tracebacks[0], "optimizer.step()"));
    }

    // vLLM's workers carry their rank in their own prefix; the same reading applies.
    void vllmWorkersInterleaved()
    {
        std::vector<std::string> worker0 = forwardTraceback;
        worker0.push_back(oomLine(0, "1.95 GiB"));
        std::vector<std::string> worker1 = backwardTraceback;
        worker1.push_back(oomLine(1, "3.00 GiB"));
        std::string log;
        for (size_t i = 0; i < worker0.size(); ++i) {
            log += "(VllmWorker rank=1 pid=255) " + worker1[i] + "\n";
            log += "(VllmWorker rank=0 pid=254) " + worker0[i] + "\n";
        }
        const TextFindings findings = parseText(log);
        QCOMPARE(findings.oomMessages.size(), size_t(2));
        QCOMPARE(findings.oomMessages[0].rank, std::optional<int>(1)); // printed first
        QCOMPARE(findings.oomMessages[0].phase, Phase::Backward);
        QCOMPARE(findings.oomMessages[1].rank, std::optional<int>(0));
        QCOMPARE(findings.oomMessages[1].phase, Phase::Forward);
        QVERIFY(!hasFrameCode(*findings.oomMessages[1].traceback, "loss.backward()"));
    }

    // A single rank's prefixed log reads as before, its rank recorded.
    void singleRankKeepsItsRank()
    {
        std::vector<std::string> rank0 = forwardTraceback;
        rank0.push_back(oomLine(0, "1.95 GiB"));
        std::string log;
        for (const std::string& line : rank0)
            log += "[rank0]: " + line + "\n";
        const TextFindings findings = parseText(log);
        QCOMPARE(findings.oomMessages.size(), size_t(1));
        QCOMPARE(findings.oomMessages[0].rank, std::optional<int>(0));
        QCOMPARE(findings.oomMessages[0].phase, Phase::Forward);
        QVERIFY(findings.failedRanks.empty());
    }
};

QTEST_MAIN(TestRankInterleaving)
#include "tst_rankinterleaving.moc"
