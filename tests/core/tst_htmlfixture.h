#pragma once

// The scripted case of the HTML report tests: a training run written in the trace builder's text
// form (tests/common/tracebuilder.h) and analysed by the real analysis, an OOM message, a summary
// and diagnoses. Hostile strings (script tags, attribute breakers) sit in frame names, filenames,
// messages and evidence, where real inputs can carry them.

#include "common/analysisfixtures.h"
#include "common/tracetext.h"
#include "core/case.h"
#include "core/caseanalysis.h"
#include "core/units.h"

#include <memory>
#include <string>
#include <utility>

namespace oomlens::test {

inline const std::string hostileScript = "<script>alert(1)</script>";
inline const std::string hostileAttribute = "\"><img src=x onerror=alert(1)>";
// The trace builder's words cannot carry a double quote; this one breaks single-quoted attributes.
inline const std::string hostileFilename = "'><img src=x onerror=alert(1)>.py";

// `stack=` with the builder's stack for a phase word and one more (outer) frame, quoted for spaces.
inline std::string stackWith(std::string_view phase, const std::string& innerFrame, const std::string& outerFrame)
{
    std::string frames = phaseStacks().find(phase)->second;
    if (!innerFrame.empty())
        frames = innerFrame + ";" + frames;
    if (!outerFrame.empty())
        frames += ";" + outerFrame;
    return "\"stack=" + frames + "\"";
}

// Analyses a snapshot built from trace text, as the app would open it.
inline SnapshotAnalysis analyzeReportTrace(const std::string& text)
{
    return analyzeSnapshot(traceSnapshot(text));
}

// A two-step training run with Adam that dies allocating gradients in the backward of step 2,
// plus the text inputs a user would paste beside it. The ring buffer lost the beginning: an
// input batch is freed whose allocation the trace never saw.
inline std::pair<Case, CaseAnalysis> hostileTrainingCase()
{
    const std::string forward = stackWith("fwd", "model.py:" + hostileScript + ":12", "");
    const std::string gradient = stackWith("grad", "", hostileFilename + ":train_step:43");
    std::string trace = "before batch0 512MiB data\n"
                        "before inputs 512MiB data\n"
                        "free batch0 data\n"
                        "segment_alloc s1 2GiB\n"
                        "alloc params 1GiB load in=s1\n";
    for (int step = 1; step <= 2; ++step) {
        const std::string n = std::to_string(step);
        trace += "annotate ProfilerStep#" + n + "\n";
        trace += "alloc a" + n + " 768MiB " + forward + "\n";
        trace += "alloc b" + n + " 268439552 " + forward + "\n";
        if (step == 2) {
            trace += "segment_alloc s3 1GiB\nalloc g2 1GiB in=s3 " + gradient + "\noom 3GiB free=600MiB bwd\n";
            break;
        }
        trace += "alloc g" + n + " 1GiB " + gradient + "\n";
        trace += "free b" + n + " bwd\nfree a" + n + " bwd\n";
        trace += "segment_alloc s2 2GiB\nalloc m" + n + " 1GiB optinit in=s2\nalloc v" + n + " 1GiB optinit in=s2\n";
        trace += "free g" + n + " zero\n";
    }
    SnapshotAnalysis analyzed = analyzeReportTrace(trace);
    auto snapshot = std::make_shared<Snapshot>(*analyzed.snapshot);
    AllocatorSettings settings;
    settings.allocConf = "max_split_size_mb:128";
    settings.maxSplitSize = 128 * static_cast<int64_t>(MiB);
    snapshot->allocatorSettings = settings;
    analyzed.snapshot = snapshot;

    Case input;
    input.inputs.push_back({ "logs/" + hostileAttribute + ".log", InputKind::Log, std::nullopt, -1 });
    input.inputs.push_back({ "snap" + hostileScript + ".pickle", InputKind::Snapshot, std::nullopt, 0 });
    input.inputs.push_back({ "broken.bin", InputKind::Unknown, "not a memory snapshot, and not text", -1 });

    OomMessage message;
    message.backend = Backend::Cuda;
    message.templateId = OomTemplate::T3;
    message.exception = "torch.OutOfMemoryError";
    message.device = 0;
    message.requestedBytes = 3 * GiB;
    message.totalBytes = 8 * GiB;
    message.freeBytes = 600 * MiB;
    message.allocatedBytes = 5 * GiB + 4096;
    message.reservedBytes = 7 * GiB;
    message.reservedUnallocatedBytes = 2 * GiB - 4096;
    message.processes.push_back({ int64_t(4242), 7 * GiB + 400 * MiB, true });
    message.torchVersionHint = "2.2-2.7";
    message.phase = Phase::Backward;
    message.text = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB. GPU 0 has a total capacity "
                   "of 8.00 GiB of which 600.00 MiB is free. "
        + hostileScript;
    TracebackInfo traceback;
    traceback.frames.push_back({ "train.py", 88, "main", "train_step(batch)" });
    traceback.frames.push_back({ hostileAttribute, 12, "train_step", "loss.backward()" });
    traceback.phase = Phase::Backward;
    traceback.phaseEvidence = "loss.backward() in train_step";
    message.traceback = traceback;
    input.text.oomMessages.push_back(message);

    MemorySummary summary;
    summary.device = 0;
    summary.ooms = 1;
    summary.allocRetries = 3;
    summary.unitEra = "KiB/MiB";
    summary.rows["allocated_memory"] = { 5 * GiB, 6 * GiB, 40 * GiB, 35 * GiB };
    summary.rows["gpu_reserved_memory"] = { 7 * GiB, 7 * GiB, 9 * GiB, 2 * GiB };
    summary.rows["allocations"] = { uint64_t(123), uint64_t(456), uint64_t(7890), uint64_t(7767) };
    input.text.summaries.push_back(summary);

    AllocConfSetting conf;
    conf.raw = "max_split_size_mb:128";
    conf.options["max_split_size_mb"] = "128";
    conf.source = "export";
    input.text.allocConfs.push_back(conf);

    NvidiaSmiTable smi;
    smi.driverVersion = "535.104.05";
    smi.cudaVersion = "12.2";
    smi.gpus.push_back({ 0, "NVIDIA GeForce RTX 3070 " + hostileScript, 7 * GiB + 500 * MiB, 8 * GiB });
    input.text.nvidiaSmi.push_back(smi);

    CaseAnalysis analysis;
    analysis.snapshots.push_back(std::move(analyzed));
    input.snapshots.push_back(analysis.snapshots.front().snapshot);

    Diagnosis diagnosis;
    diagnosis.id = DiagnosisId::FirstBackward;
    diagnosis.title = "The first backward pass does not fit";
    diagnosis.confidence = 0.82;
    diagnosis.summary = "Forward fits, but gradients for " + hostileScript + " push step 2's backward over the card.";
    diagnosis.evidence.push_back({ "activations 1.00 GiB live at the OOM in backward of step 2", std::nullopt });
    diagnosis.evidence.push_back({ "largest stack: " + hostileAttribute, std::nullopt });
    Fix bf16;
    bf16.kind = FixKind::Bf16;
    bf16.title = "bf16 autocast";
    bf16.detail = "Halves the activations.";
    bf16.snippet = "with torch.autocast(\"cuda\", dtype=torch.bfloat16):\n    loss = model(x) < 1 && y > 2";
    bf16.projectedSavingBytes = 512 * static_cast<int64_t>(MiB);
    bf16.fitsAfter = false;
    diagnosis.fixes.push_back(bf16);
    Fix lora;
    lora.kind = FixKind::Lora;
    lora.title = "LoRA";
    lora.detail = "Train adapters instead of every weight.";
    lora.changesExperiment = true;
    diagnosis.fixes.push_back(lora);
    analysis.diagnoses.push_back(diagnosis);
    reconcileCase(input, analysis); // the card, as diagnoseCase reconciles it
    return { std::move(input), std::move(analysis) };
}

} // namespace oomlens::test
