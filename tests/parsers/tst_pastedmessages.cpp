#include "common/oomnames.h"
#include "common/textfixtures.h"
#include "core/phase.h"
#include "parsers/text/textparser.h"

#include <QTest>

#include <algorithm>

using namespace oomlens;
using test::value;

// Messages as people paste them (issue 10, class 7): without their first words, the IPEX per-block
// limit, XLA's buffer assignment and BFC allocator logs, cudaMallocAsync's NUL-shortened message,
// pre-1.0 THC errors, and evaluation named by the user's own code. Every number is read exactly.
class TestPastedMessages : public QObject
{
    Q_OBJECT

    static const OomMessage& only(const TextFindings& findings)
    {
        static const OomMessage empty;
        if (findings.oomMessages.size() != 1) {
            qWarning("expected one message, found %zu", findings.oomMessages.size());
            return empty;
        }
        return findings.oomMessages.front();
    }

private Q_SLOTS:
    void withoutFirstWordsOldStyle()
    {
        const TextFindings findings = test::parseTextFixture("pasted/headless_t1.txt");
        QCOMPARE(findings.oomMessages.size(), size_t(1));
        const OomMessage& m = only(findings);
        QCOMPARE(m.backend, Backend::Cuda);
        QCOMPARE(m.templateId, OomTemplate::T1);
        QCOMPARE(value(m.requestedBytes), qint64(2147483648));
        QCOMPARE(value(m.totalBytes), qint64(25436943811)); // 23.69 GiB
        QCOMPARE(value(m.allocatedBytes), qint64(21592948081)); // 20.11 GiB
        QCOMPARE(value(m.freeBytes), qint64(1406601789)); // 1.31 GiB
        QCOMPARE(value(m.reservedBytes), qint64(23085449216)); // 21.50 GiB
        QCOMPARE(m.device.value_or(-1), 0);
        QVERIFY(!m.truncated);
        QVERIFY(!m.notes.empty());
    }

    void withoutFirstWordsNewStyle()
    {
        const TextFindings findings = test::parseTextFixture("pasted/headless_t3.txt");
        const OomMessage& m = only(findings);
        QCOMPARE(m.backend, Backend::Cuda);
        QCOMPARE(m.templateId, OomTemplate::T3);
        QCOMPARE(value(m.requestedBytes), qint64(536870912));
        QCOMPARE(value(m.totalBytes), qint64(84986665370)); // 79.15 GiB
        QCOMPARE(value(m.freeBytes), qint64(316019835)); // 301.38 MiB
        QCOMPARE(value(m.allocatedBytes), qint64(81625853460)); // 76.02 GiB
        QCOMPARE(value(m.reservedUnallocatedBytes), qint64(2351494595)); // 2.19 GiB
        QCOMPARE(m.processes.size(), size_t(1));
        QVERIFY(m.processes[0].self);
    }

    void parenthesisOnly()
    {
        const TextFindings findings = test::parseTextFixture("pasted/parenthesis_only.txt");
        const OomMessage& m = only(findings);
        QCOMPARE(m.templateId, OomTemplate::T1);
        QCOMPARE(m.device.value_or(-1), 1);
        QCOMPARE(value(m.totalBytes), qint64(11553462026)); // 10.76 GiB
        QCOMPARE(value(m.allocatedBytes), qint64(9792525435)); // 9.12 GiB
        QCOMPARE(value(m.freeBytes), qint64(47773123)); // 45.56 MiB
        QCOMPARE(value(m.reservedBytes), qint64(10511932457)); // 9.79 GiB
        QCOMPARE(value(m.requestedBytes), qint64(-1));
        QVERIFY(m.truncated); // the request is not in what was pasted
    }

    void xpuPerBlockLimit()
    {
        const TextFindings findings = test::parseTextFixture("pasted/xpu_block_limit.txt");
        const OomMessage& m = only(findings);
        QCOMPARE(m.backend, Backend::Xpu);
        QCOMPARE(m.templateId, OomTemplate::XpuBlockLimit);
        QCOMPARE(value(m.platformLimitBytes), qint64(4294967296));
        QCOMPARE(value(m.requestedBytes), qint64(6442450944));
        QCOMPARE(value(m.totalBytes), qint64(16707422781)); // 15.56 GiB
        QCOMPARE(value(m.allocatedBytes), qint64(2287070085)); // 2.13 GiB
        QCOMPARE(value(m.reservedBytes), qint64(2684354560)); // 2.50 GiB
        QCOMPARE(value(m.freeBytes), qint64(-1));
        QCOMPARE(m.device.value_or(-1), 0);
        QVERIFY(!m.truncated);
        QVERIFY(m.traceback.has_value());
    }

    void xlaBufferAssignmentStats()
    {
        const TextFindings findings = test::parseTextFixture("pasted/xla_buffer_stats.txt");
        const OomMessage& m = only(findings);
        QCOMPARE(m.backend, Backend::Xla);
        QCOMPARE(value(m.requestedBytes), qint64(13421772800));
        QVERIFY(m.xlaBuffers.has_value());
        QCOMPARE(value(m.xlaBuffers->parameterBytes), qint64(2415919104)); // 2.25GiB
        QCOMPARE(value(m.xlaBuffers->constantBytes), qint64(8));
        QCOMPARE(value(m.xlaBuffers->liveOutBytes), qint64(2415919104));
        QCOMPARE(value(m.xlaBuffers->tempBytes), qint64(13421772800)); // 12.50GiB
        QCOMPARE(value(m.xlaBuffers->totalBytes), qint64(18253611008)); // 17.00GiB
        QVERIFY(!m.truncated);
    }

    void bfcLogFoldsIntoTheXlaMessage()
    {
        const TextFindings findings = test::parseTextFixture("pasted/bfc_xla.txt");
        QCOMPARE(findings.oomMessages.size(), size_t(1));
        const OomMessage& m = findings.oomMessages.front();
        QCOMPARE(m.backend, Backend::Xla);
        QCOMPARE(value(m.requestedBytes), qint64(3221225472));
        QCOMPARE(value(m.allowedBytes), qint64(12884901888)); // Limit:
        QCOMPARE(value(m.allocatedBytes), qint64(12745318400)); // InUse:
        QCOMPARE(value(m.reservedBytes), qint64(12884901888)); // Total bytes in pool:
        QCOMPARE(m.device.value_or(-1), 0);
        QVERIFY(!m.truncated);
    }

    void bfcLogFoldsIntoTheTfMessage()
    {
        const TextFindings findings = test::parseTextFixture("pasted/bfc_tf.txt");
        QCOMPARE(findings.oomMessages.size(), size_t(1));
        const OomMessage& m = findings.oomMessages.front();
        QCOMPARE(m.backend, Backend::Tf);
        QCOMPARE(value(m.requestedBytes), qint64(64LL * 256 * 64 * 64 * 4)); // from the shape, exact
        QCOMPARE(value(m.allowedBytes), qint64(11330676327));
        QCOMPARE(value(m.allocatedBytes), qint64(11072139264));
        QCOMPARE(m.device.value_or(-1), 0);
    }

    void bfcLogAlone()
    {
        const TextFindings findings = parseText("W external/tsl/tsl/framework/bfc_allocator.cc:485] Allocator "
                                                "(GPU_1_bfc) ran out of memory trying to allocate 1.97GiB (rounded "
                                                "to 2110783744)requested by op\n");
        const OomMessage& m = only(findings);
        QCOMPARE(m.templateId, OomTemplate::Bfc);
        QCOMPARE(m.backend, Backend::Xla);
        QCOMPARE(m.device.value_or(-1), 1);
        QCOMPARE(value(m.requestedBytes), qint64(2115271393)); // 1.97 GiB
    }

    void mallocAsyncShortenedByTheDeviceByte()
    {
        const TextFindings findings = test::parseTextFixture("pasted/malloc_async_short.txt");
        QCOMPARE(findings.oomMessages.size(), size_t(1)); // the logger's echo is the same failure
        const OomMessage& m = findings.oomMessages.front();
        QCOMPARE(m.backend, Backend::Cuda);
        QCOMPARE(m.templateId, OomTemplate::CudaMallocAsync);
        QVERIFY(!m.truncated);
        QVERIFY(std::any_of(m.notes.begin(), m.notes.end(),
            [](const std::string& note) { return note.find("NUL") != std::string::npos; }));
    }

    void thcErrorKeepsTheBackwardPhase()
    {
        const TextFindings findings = test::parseTextFixture("pasted/thc_backward.txt");
        QVERIFY(!findings.oomMessages.empty());
        const OomMessage& last = findings.oomMessages.back();
        QCOMPARE(last.templateId, OomTemplate::Thc);
        QCOMPARE(phaseName(last.phase), phaseName(Phase::Backward));
    }

    void evaluationFromTheUsersOwnNames_data()
    {
        QTest::addColumn<QString>("fixture");
        QTest::newRow("run_validation_epoch") << QStringLiteral("pasted/eval_user_names.txt");
        QTest::newRow("compute_metrics") << QStringLiteral("pasted/eval_compute_metrics.txt");
    }

    void evaluationFromTheUsersOwnNames()
    {
        QFETCH(QString, fixture);
        const TextFindings findings = test::parseTextFixture(qPrintable(fixture));
        const OomMessage& m = only(findings);
        QCOMPARE(phaseName(m.phase), phaseName(Phase::Eval));
    }

    void forwardFromTheUsersModelCall()
    {
        // Only the user's frame survived the paste: calling the model is the forward pass.
        const TextFindings findings = parseText(
            "Traceback (most recent call last):\n"
            "  File \"loop.py\", line 77, in <module>\n"
            "    out = model(batch)\n"
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 96.00 MiB. GPU 0 has a total "
            "capacity of 15.77 GiB of which 53.12 MiB is free.\n");
        QVERIFY(!findings.oomMessages.empty());
        QCOMPARE(phaseName(findings.oomMessages.front().phase), phaseName(Phase::Forward));
        const TextFindings building = parseText(
            "Traceback (most recent call last):\n"
            "  File \"loop.py\", line 12, in <module>\n"
            "    net = build_model(cfg)\n"
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 96.00 MiB. GPU 0 has a total "
            "capacity of 15.77 GiB of which 53.12 MiB is free.\n");
        QVERIFY(!building.oomMessages.empty());
        QVERIFY(building.oomMessages.front().phase != Phase::Forward);
    }

    void libraryValidatorsAreNotEvaluation()
    {
        // torch.distributions' _validate_sample runs inside every forward: a library name, not the user's.
        const TextFindings findings = parseText(
            "Traceback (most recent call last):\n"
            "  File \"/home/u/vae/train.py\", line 50, in <module>\n"
            "    out = model(x)\n"
            "  File \"/usr/lib/python3/site-packages/torch/nn/modules/module.py\", line 1520, in _call_impl\n"
            "    return forward_call(*args, **kwargs)\n"
            "  File \"/usr/lib/python3/site-packages/torch/distributions/normal.py\", line 77, in log_prob\n"
            "    self._validate_sample(value)\n"
            "  File \"/usr/lib/python3/site-packages/torch/distributions/distribution.py\", line 300, in "
            "_validate_sample\n"
            "    support = self.support\n"
            "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB. GPU 0 has a total capacity "
            "of 7.79 GiB of which 3.06 MiB is free.\n");
        QVERIFY(!findings.oomMessages.empty());
        QCOMPARE(phaseName(findings.oomMessages.front().phase), phaseName(Phase::Forward));
    }
};

QTEST_GUILESS_MAIN(TestPastedMessages)
#include "tst_pastedmessages.moc"
