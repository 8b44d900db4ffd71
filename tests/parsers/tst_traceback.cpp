#include "common/oomnames.h"
#include "common/testutil.h"
#include "core/phase.h"
#include "parsers/text/textparser.h"
#include "parsers/text/tracebackparser.h"

#include <QTest>

using namespace oomlens;

namespace {

const std::string oomLine = "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
                            "capacity of 79.15 GiB of which 1.00 GiB is free. Of the allocated memory 70.00 GiB is "
                            "allocated by PyTorch, and 6.00 GiB is reserved by PyTorch but unallocated.";

std::string frame(const std::string& file, int line, const std::string& function, const std::string& code)
{
    return "  File \"" + file + "\", line " + std::to_string(line) + ", in " + function + "\n    " + code + "\n";
}

std::string traceback(const std::string& frames)
{
    return "Traceback (most recent call last):\n" + frames + oomLine + "\n";
}

} // namespace

class TestTraceback : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void phases_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("phase");
        const std::string site = "/usr/lib/python3.11/site-packages/";
        const std::string main = frame("train.py", 10, "<module>", "main()");
        QTest::newRow("backward 2.3+") << QString::fromStdString(
            traceback(main + frame("train.py", 50, "main", "loss.backward()")
                + frame(site + "torch/_tensor.py", 581, "backward", "torch.autograd.backward(")
                + frame(site + "torch/autograd/graph.py", 825, "_engine_run_backward",
                    "return Variable._execution_engine.run_backward(")))
                                       << "backward";
        QTest::newRow("backward amp") << QString::fromStdString(
            traceback(main + frame("train.py", 51, "main", "scaler.scale(loss).backward()")))
                                      << "backward";
        QTest::newRow("backward accelerate")
            << QString::fromStdString(traceback(main + frame("train.py", 51, "main", "self.accelerator.backward(loss)")
                   + frame(site + "accelerate/accelerator.py", 2013, "backward", "loss.backward(**kwargs)")))
            << "backward";
        QTest::newRow("forward") << QString::fromStdString(
            traceback(main + frame("train.py", 40, "main", "out = model(x)")
                + frame(site + "torch/nn/modules/module.py", 1747, "_call_impl", "return forward_call(*args, **kwargs)")
                + frame(site + "torch/nn/modules/linear.py", 125, "forward",
                    "return F.linear(input, self.weight, self.bias)")))
                                 << "forward";
        QTest::newRow("optimizer") << QString::fromStdString(
            traceback(main + frame("train.py", 60, "main", "optimizer.step()")
                + frame(site + "torch/optim/optimizer.py", 487, "wrapper", "out = func(*args, **kwargs)")
                + frame(site + "torch/optim/adamw.py", 220, "step", "adamw(")))
                                   << "optimizer";
        QTest::newRow("eval no_grad") << QString::fromStdString(traceback(main
            + frame("train.py", 70, "main", "metrics = run(model)")
            + frame(site + "torch/utils/_contextlib.py", 116, "decorate_context", "return func(*args, **kwargs)")
            + frame("train.py", 20, "run", "out = model(x)")
            + frame(site + "torch/nn/modules/module.py", 1747, "_call_impl", "return forward_call(*args, **kwargs)")))
                                      << "eval";
        QTest::newRow("eval generate") << QString::fromStdString(
            traceback(main + frame("serve.py", 12, "main", "ids = model.generate(**inputs)")
                + frame(site + "transformers/generation/utils.py", 2215, "generate", "result = self._sample(")))
                                       << "eval";
        QTest::newRow("load to()") << QString::fromStdString(
            traceback(main + frame("train.py", 30, "main", "model = model.to(device)")
                + frame(site + "torch/nn/modules/module.py", 1340, "to", "return self._apply(convert)")
                + frame(site + "torch/nn/modules/module.py", 900, "_apply", "module._apply(fn)")
                + frame(site + "torch/nn/modules/module.py", 1326, "convert", "return t.to(")))
                                   << "load";
        QTest::newRow("load from_pretrained") << QString::fromStdString(
            traceback(main + frame("train.py", 30, "main", "model = AutoModel.from_pretrained(name)")
                + frame(site + "transformers/modeling_utils.py", 4000, "from_pretrained",
                    "caching_allocator_warmup(model, device_map)")))
                                              << "load";
        QTest::newRow("data") << QString::fromStdString(
            traceback(main + frame("train.py", 35, "main", "for batch in loader:")
                + frame(site + "torch/utils/data/dataloader.py", 701, "__next__", "data = self._next_data()")
                + frame(site + "torch/utils/data/_utils/pin_memory.py", 60, "pin_memory",
                    "return data.pin_memory(device)")))
                              << "data";
        QTest::newRow("unknown") << QString::fromStdString(
            traceback(main + frame("test.py", 5, "test_big", "x = torch.zeros(1 << 34, device='cuda')")))
                                 << "unknown";
        // No frame carries a phase's signature, but the innermost line computes from tensors: outside
        // backward, the optimizer, loading and data that is the forward computation (a library's
        // target assignment inside the loss here).
        QTest::newRow("computation by elimination")
            << QString::fromStdString(traceback(main + frame("train.py", 40, "main", "loss = criterion(preds, batch)")
                   + frame(site + "ultralytics/utils/tal.py", 240, "select_candidates_in_gts",
                       "bbox_deltas = torch.cat((xy_centers[None] - lt, rb - xy_centers[None]), dim=2)")))
            << "forward";
        // A library function under no_grad that re-raises: a warm-up or inference pass.
        QTest::newRow("library no_grad re-raising") << QString::fromStdString(traceback(
            frame(site + "torch/utils/_contextlib.py", 120, "decorate_context", "return func(*args, **kwargs)")
            + frame(site + "vllm/v1/worker/gpu_model_runner.py", 4105, "_dummy_sampler_run", "raise RuntimeError(")))
                                                    << "forward";
        // A `raise` decides nothing by itself.
        QTest::newRow("raise alone") << QString::fromStdString(
            traceback(main + frame("/home/u/app/runner.py", 88, "run", "raise RuntimeError(msg)")))
                                     << "unknown";
        // faulthandler: no comma before "in", no source lines.
        QTest::newRow("faulthandler") << QString::fromStdString(
            "Traceback (most recent call last):\n  File \"train.py\", line 88 in <module>\n"
            "  File \"/opt/torch/_tensor.py\", line 581 in backward\n"
            + oomLine + "\n") << "backward";
        // IPython 8 style.
        QTest::newRow("ipython") << QString::fromStdString(
            "---------------------------------------------------------------------------\n"
            "OutOfMemoryError                          Traceback (most recent call last)\n"
            "Cell In[4], line 3\n      1 model.train()\n----> 3 trainer.train()\n\n"
            "File /usr/lib/python3.10/site-packages/torch/_tensor.py:581, in Tensor.backward(self, gradient)\n"
            "    579 if has_torch_function_unary(self):\n--> 581 torch.autograd.backward(\n\n"
            + oomLine + "\n") << "backward";
    }

    void phases()
    {
        QFETCH(QString, text);
        QFETCH(QString, phase);
        const TextFindings findings = parseText(text.toStdString());
        QCOMPARE(findings.oomMessages.size(), size_t(1));
        const OomMessage& message = findings.oomMessages[0];
        QVERIFY(message.traceback);
        QCOMPARE(QString::fromUtf8(phaseName(message.phase).data(), qsizetype(phaseName(message.phase).size())), phase);
        QCOMPARE(message.traceback->phase, message.phase);
        QVERIFY(!message.traceback->truncated);
        QVERIFY(!message.traceback->frames.empty());
        if (phase != QStringLiteral("unknown"))
            QVERIFY(!message.traceback->phaseEvidence.empty());
        QVERIFY(findings.tracebacks.empty());
    }

    void frameDetails()
    {
        const auto findings = parseText(traceback(frame("C:\\work\\train.py", 12, "main", "loss.backward()")
            + "  File \"/x/torch/_dynamo/eval_frame.py\", line 600, in _fn\n    return fn(*args)\n"));
        QCOMPARE(findings.oomMessages.size(), size_t(1));
        const TracebackInfo& info = *findings.oomMessages[0].traceback;
        QCOMPARE(info.frames.size(), size_t(2));
        QCOMPARE(info.frames[0].filename, std::string("C:\\work\\train.py"));
        QCOMPARE(info.frames[0].line, 12);
        QCOMPARE(info.frames[0].function, std::string("main"));
        QCOMPARE(info.frames[0].code, std::string("loss.backward()"));
        QVERIFY(info.compiled);
        QCOMPARE(info.exceptionLine.rfind("torch.OutOfMemoryError", 0), size_t(0));
        QCOMPARE(info.sourceLine, size_t(1));
    }

    void frameLineStyles()
    {
        auto ipython
            = text::parseFrameLine("/usr/lib/python3.7/site-packages/jax/xla.py in _execute_compiled(compiled, avals)");
        QVERIFY(ipython);
        QCOMPARE(ipython->function, std::string("_execute_compiled"));
        auto modern = text::parseFrameLine("File /x/trainer.py:2113, in Trainer.evaluate(self, eval_dataset)");
        QVERIFY(modern);
        QCOMPARE(modern->line, 2113);
        QCOMPARE(modern->filename, std::string("/x/trainer.py"));
        QVERIFY(!text::parseFrameLine("File size:  20132"));
        QVERIFY(!text::parseFrameLine("the model is in training mode (see below)"));
    }

    void chainedExceptions()
    {
        const std::string text
            = traceback(frame("train.py", 78, "fwbw", "yhat = model(X)")
                  + frame("/t/torch/nn/modules/module.py", 489, "__call__", "result = self.forward(*input, **kwargs)")
                  + frame("/t/torch/nn/modules/activation.py", 50, "forward", "return F.threshold(input)"))
            + "\nDuring handling of the above exception, another exception occurred:\n\n"
            + "Traceback (most recent call last):\n" + frame("train.py", 90, "recover", "torch.cuda.empty_cache()")
            + "RuntimeError: CUDA error: an illegal memory access was encountered\n";
        const TextFindings findings = parseText(text);
        QCOMPARE(findings.oomMessages.size(), size_t(1));
        const TracebackInfo& info = *findings.oomMessages[0].traceback;
        QVERIFY(info.chained);
        QCOMPARE(info.phase, Phase::Forward);
        QCOMPARE(info.frames.size(), size_t(3));
        // The handler's traceback is part of the same story, not a separate finding.
        QVERIFY(findings.tracebacks.empty());
    }

    void directCauseChain()
    {
        const std::string text = "Traceback (most recent call last):\n" + frame("worker.py", 5, "run", "step()")
            + "ValueError: bad batch\n\nThe above exception was the direct cause of the following exception:\n\n"
            + traceback(frame("train.py", 60, "main", "optimizer.step()"));
        const TextFindings findings = parseText(text);
        QCOMPARE(findings.oomMessages.size(), size_t(1));
        QVERIFY(findings.oomMessages[0].traceback->chained);
        QCOMPARE(findings.oomMessages[0].phase, Phase::Optimizer);
        QCOMPARE(findings.tracebacks.size(), size_t(1));
        QVERIFY(findings.tracebacks[0].chained);
        QCOMPARE(findings.tracebacks[0].exceptionLine, std::string("ValueError: bad batch"));
    }

    void severalOomsInOneLog()
    {
        const QByteArray log = test::readFile(test::testDataDir() + QStringLiteral("/text/training_log.txt"));
        const std::string_view text(log.constData(), static_cast<size_t>(log.size()));
        const TextFindings findings = parseText(text);
        QCOMPARE(findings.oomMessages.size(), size_t(2));
        const OomMessage& first = findings.oomMessages[0];
        const OomMessage& second = findings.oomMessages[1];
        QCOMPARE(first.device.value_or(-1), 0);
        QCOMPARE(first.phase, Phase::Forward);
        QCOMPARE(first.traceback->frames.size(), size_t(5));
        QCOMPARE(first.sourceLine, size_t(19));
        QCOMPARE(second.device.value_or(-1), 1);
        QCOMPARE(second.phase, Phase::Backward);
        QCOMPARE(second.traceback->frames.size(), size_t(5));
        QCOMPARE(second.templateId, OomTemplate::T3);
        QCOMPARE(findings.allocConfs.size(), size_t(1));
        QVERIFY(findings.allocConfs[0].expandableSegments());
        QCOMPARE(findings.allocConfs[0].maxSplitSizeMb().value_or(0), int64_t(256));
        QCOMPARE(classifyText(text, findings), InputKind::OomMessage);
    }

    void tracebackWithoutOom()
    {
        const std::string text = "Traceback (most recent call last):\n"
            + frame("train.py", 10, "main", "trainer.evaluate()") + "KeyError: 'labels'\n";
        const TextFindings findings = parseText(text);
        QVERIFY(findings.oomMessages.empty());
        QCOMPARE(findings.tracebacks.size(), size_t(1));
        QCOMPARE(findings.tracebacks[0].phase, Phase::Eval);
        QCOMPARE(classifyText(text, findings), InputKind::Traceback);
    }

    void cutTraceback()
    {
        const std::string text = "Traceback (most recent call last):\n"
            + frame("train.py", 10, "main", "loss.backward()")
            + "  File \"/t/torch/_tensor.py\", line 581, in backward\n    torch.autograd.bac";
        const TextFindings findings = parseText(text);
        QCOMPARE(findings.tracebacks.size(), size_t(1));
        QVERIFY(findings.tracebacks[0].truncated);
        QCOMPARE(findings.tracebacks[0].phase, Phase::Backward);
    }

    // Issue 28: what real pastes look like. Each row is the phase the frames show, read through
    // the paste's structure rather than its names.
    void realPasteStructures_data()
    {
        QTest::addColumn<QString>("text");
        QTest::addColumn<QString>("phase");
        const std::string site = "/home/u/envs/x/lib/python3.10/site-packages/";
        // Pre-1.0: the C-level check prints first, then Python's traceback, cut before its exception.
        QTest::newRow("THCudaCheck first") << QString::fromStdString(
            "THCudaCheck FAIL file=/pytorch/aten/src/THC/generic/THCStorage.cu line=58 error=2 : out of memory\n"
            "Traceback (most recent call last):\n"
            + frame("train.py", 90, "<module>", "main()") + frame("train.py", 70, "main", "loss.backward()")
            + "  File \"" + site + "torch/autograd/__init__.py\", line 89, in backward\n    allow_unrea")
                                           << "backward";
        // The paste starts at the innermost frame's code line, its File line left behind.
        QTest::newRow("code line opens the paste") << QString::fromStdString(
            " attn_weights = torch.matmul(query_states, key_states.transpose(2, 3)) / math.sqrt(self.head_dim)\n"
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 8.23 GiB (GPU 0; 23.70 GiB total "
            "capacity; 14.43 GiB already allocated; 7.99 GiB free; 14.71 GiB reserved in total by PyTorch)\n")
                                                   << "forward";
        // A frame line without its function, then a blank line before the message.
        QTest::newRow("frame without function") << QString::fromStdString(
            "File \"pkg/attention/backends/sdpa.py\", line 46\n  mask = mask.expand(B, Sq, Skv).unsqueeze(1)\n\n"
            "torch.OutOfMemoryError: NPU out of memory.\nTried to allocate 14.90 GiB.\n")
                                                << "forward";
        // Jupyter's older traceback: "FILE in FUNC(ARGS)", numbered lines, the arrow on the failing one.
        QTest::newRow("ipython numbered lines") << QString::fromStdString(site
            + "ultralytics/yolo/utils/tal.py in select_candidates_in_gts(xy_centers, gt_bboxes, eps)\n"
              "     23     lt, rb = gt_bboxes.view(-1, 1, 4).chunk(2, 2)\n"
              "---> 24     bbox_deltas = torch.cat((xy_centers[None] - lt, rb - xy_centers[None]), dim=2)\n"
              "     25     return bbox_deltas.amin(3).gt_(eps)\n\n"
              "OutOfMemoryError: CUDA out of memory. Tried to allocate 4.98 GiB (GPU 0; 14.75 GiB total "
              "capacity; 12.11 GiB already allocated; 1.03 GiB free; 12.29 GiB reserved in total by PyTorch)\n")
                                                << "forward";
        // The paste cut the first frame line's path to its tail: still torch's no_grad decorator, here
        // around a library's warm-up run that re-raises the OOM in its own words.
        QTest::newRow("cut decorator path") << QString::fromStdString(
            "ils/_contextlib.py\", line 120, in decorate_context\n    return func(*args, **kwargs)\n"
            "  File \""
            + site + "vllm/v1/worker/gpu_model_runner.py\", line 4105, in _dummy_sampler_run\n    raise RuntimeError(\n"
            + "RuntimeError: CUDA out of memory occurred when warming up sampler with 1024 dummy requests.\n")
                                            << "forward";
        // A complete traceback, then the message cut mid-word by the end of the paste.
        QTest::newRow("message cut mid-word") << QString::fromStdString("Traceback (most recent call last):\n"
            + frame("train.py", 40, "penalty", "grads = torch.autograd.grad(out, x, create_graph=True)") + "  File \""
            + site + "torch/autograd/__init__.py\", line 275, in grad\n"
            + "    return Variable._execution_engine.run_backward(\nRuntimeError: CUDA out of")
                                              << "backward";
        // Two ranks interleaved: rank 1's message, rank 0's traceback around it.
        QTest::newRow("ranks interleaved") << QString::fromStdString(
            "[rank0]: Traceback (most recent call last):\n"
            "[rank0]:   File \"train.py\", line 60, in step\n"
            "[rank1]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 1 has a total "
            "capacity of 79.15 GiB of which 1.00 GiB is free.\n"
            "[rank0]:     optimizer.step()\n"
            "[rank0]:   File \""
            + site + "torch/optim/adamw.py\", line 220, in step\n[rank0]:     adamw(\n"
            + "[rank0]: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total "
              "capacity of 79.15 GiB of which 1.00 GiB is free.\n")
                                           << "optimizer";
        // vLLM's logger before every line, after the worker's prefix.
        QTest::newRow("logger prefixes") << QString::fromStdString(
            "(VllmWorker rank=0 pid=1) ERROR 03-16 06:12:38 [executor.py:375] Traceback (most recent call last):\n"
            "(VllmWorker rank=0 pid=1) ERROR 03-16 06:12:38 [executor.py:375]   File \"/w/runner.py\", line 12, in "
            "run\n"
            "(VllmWorker rank=0 pid=1) ERROR 03-16 06:12:38 [executor.py:375]     hidden = self.model(input_ids)\n"
            "(VllmWorker rank=0 pid=1) ERROR 03-16 06:12:38 [executor.py:375]              ^^^^^^^^^^^^^^^^^^^^^\n"
            "(VllmWorker rank=0 pid=1) ERROR 03-16 06:12:38 [executor.py:375] "
            + oomLine + "\n") << "forward";
        // The paste begins inside the first frame line.
        QTest::newRow("frame line cut at its start")
            << QString::fromStdString("ages/torch/nn/modules/module.py\", line 1150, in convert\n"
                                      "    return t.to(device)\nRuntimeError: CUDA error: out of memory\n")
            << "load";
        // A poster's own condensed chain.
        QTest::newRow("condensed chain") << QString::fromStdString(
            "train.py:1208 step -> torch/_tensor.py:623 backward\n  -> autograd/graph.py:979 _engine_run_backward\n"
            + oomLine + "\n") << "backward";
        // no_grad around a module's forward inside the training loss is not evaluation.
        QTest::newRow("no_grad inside a module call") << QString::fromStdString(
            traceback(frame("train.py", 30, "step", "loss = criterion(pred, target)")
                + frame(site + "torch/nn/modules/module.py", 1747, "_call_impl", "return forward_call(*args, **kwargs)")
                + frame(site + "torch/utils/_contextlib.py", 116, "decorate_context", "return func(*args, **kwargs)")
                + frame("/home/u/proj/assigner.py", 79, "forward", "scores = torch.where(mask, s, 0)")))
                                                      << "forward";
        // An optimizer package that is not torch.optim.
        QTest::newRow("fairseq optimizer") << QString::fromStdString(
            traceback(frame(site + "fairseq/optim/adam.py", 210, "step", "denom = exp_avg_sq.sqrt().add_(eps)")))
                                           << "optimizer";
        // A script named for evaluation calling the model.
        QTest::newRow("test script") << QString::fromStdString(
            traceback(frame("/home/u/reid/test.py", 162, "<module>", "feats = extract(model, loader)")
                + frame("/home/u/reid/test.py", 112, "extract", "outputs = model(img)")))
                                     << "eval";
    }

    void realPasteStructures()
    {
        QFETCH(QString, text);
        QFETCH(QString, phase);
        const TextFindings findings = parseText(text.toStdString());
        QVERIFY(!findings.oomMessages.empty());
        const std::string_view found = phaseName(findings.failingPhase());
        QCOMPARE(QString::fromUtf8(found.data(), qsizetype(found.size())), phase);
        // The diagnosis reads the message's own traceback: it must be linked, not left stray.
        QVERIFY(findings.oomMessages.front().traceback || findings.oomMessages.size() > 1);
    }
};

QTEST_GUILESS_MAIN(TestTraceback)
#include "tst_traceback.moc"
