#include "common/textfixtures.h"
#include "core/caseanalysis.h"
#include "core/jsonexport.h"
#include "core/utf8prefix.h"
#include "parsers/inputloader.h"
#include "parsers/text/textlines.h"
#include "parsers/text/textparser.h"

#include <QTest>

#include <algorithm>

using namespace oomlens;

// Host RAM kills (issue 10, class 8): the kernel's and a cgroup's OOM killer, a DataLoader worker
// killed by SIGKILL, a shell's "Killed", exit status 137 and torchrun's exitcode -9 are found as
// such, and ordinary log lines that merely say "killed" or "137" are not.
class TestHostMemory : public QObject
{
    Q_OBJECT

    static bool hasKind(const TextFindings& findings, const std::string& kind)
    {
        return std::any_of(findings.hostKills.begin(), findings.hostKills.end(),
            [&](const HostMemoryKill& kill) { return hostKillKindName(kill.kind) == kind; });
    }

private Q_SLOTS:
    void kinds_data()
    {
        QTest::addColumn<QString>("fixture");
        QTest::addColumn<QString>("kind");
        QTest::newRow("dmesg") << QStringLiteral("host/dmesg_oom_killer.txt") << QStringLiteral("kernel_oom_killer");
        QTest::newRow("DataLoader worker")
            << QStringLiteral("host/dataloader_worker.txt") << QStringLiteral("dataloader_worker");
        QTest::newRow("bare Killed") << QStringLiteral("host/bare_killed.txt") << QStringLiteral("killed");
        QTest::newRow("slurm cgroup") << QStringLiteral("host/slurm_cgroup.txt") << QStringLiteral("cgroup");
        QTest::newRow("torchrun -9") << QStringLiteral("host/torchrun_sigkill.txt") << QStringLiteral("exit_137");
        QTest::newRow("shell job line") << QStringLiteral("host/cuda_oom_then_killed.txt") << QStringLiteral("killed");
    }

    void kinds()
    {
        QFETCH(QString, fixture);
        QFETCH(QString, kind);
        const TextFindings findings = test::parseTextFixture(qPrintable(fixture));
        QVERIFY(!findings.empty());
        QVERIFY2(hasKind(findings, kind.toStdString()), qPrintable(kind));
        for (const auto& kill : findings.hostKills)
            QVERIFY(kill.sourceLine >= 1);
    }

    void kernelLineCarriesPidProcessAndRss()
    {
        const TextFindings findings = test::parseTextFixture("host/dmesg_oom_killer.txt");
        const auto kill = std::find_if(findings.hostKills.begin(), findings.hostKills.end(),
            [](const HostMemoryKill& k) { return k.line.find("Killed process") != std::string::npos; });
        QVERIFY(kill != findings.hostKills.end());
        QCOMPARE(kill->pid.value_or(0), int64_t(48213));
        QCOMPARE(kill->process, std::string("python"));
        QCOMPARE(kill->residentBytes.value_or(0), uint64_t(61234567) * 1024);
    }

    void cgroupLimitLine()
    {
        const TextFindings findings
            = parseText("memory: usage 33554432kB, limit 33554432kB, failcnt 51234\n"
                        "Memory cgroup out of memory: Killed process 7001 (python3) total-vm:40000000kB, "
                        "anon-rss:33000000kB, file-rss:0kB, shmem-rss:0kB\n");
        QCOMPARE(findings.hostKills.size(), size_t(2));
        QCOMPARE(findings.hostKills[0].kind, HostKillKind::Cgroup);
        QCOMPARE(findings.hostKills[0].limitBytes.value_or(0), uint64_t(33554432) * 1024);
        QCOMPARE(findings.hostKills[1].kind, HostKillKind::Cgroup);
        QCOMPARE(findings.hostKills[1].pid.value_or(0), int64_t(7001));
    }

    void exitStatus137()
    {
        QVERIFY(
            hasKind(parseText("Process finished with exit code 137 (interrupted by signal 9: SIGKILL)\n"), "exit_137"));
        QVERIFY(hasKind(parseText("subprocess.CalledProcessError: Command '['python', 'train.py']' returned non-zero "
                                  "exit status 137.\n"),
            "exit_137"));
        QVERIFY(hasKind(parseText("    Reason:       OOMKilled\n    Exit Code:    137\n"), "cgroup"));
        QVERIFY(hasKind(parseText("RuntimeError: DataLoader worker (pid 4242) is killed by signal: Bus error. It is "
                                  "possible that dataloader's workers are out of shared memory.\n"),
            "shared_memory"));
    }

    void ordinaryLinesAreNotKills()
    {
        const TextFindings findings = test::parseTextFixture("host/not_a_kill.txt");
        QVERIFY(findings.hostKills.empty());
        QVERIFY(parseText("killed the process tree of the old run\nskill level 137\n").hostKills.empty());
    }

    void cudaMessageAndKillAreBothFound()
    {
        const TextFindings findings = test::parseTextFixture("host/cuda_oom_then_killed.txt");
        QCOMPARE(findings.oomMessages.size(), size_t(1));
        QCOMPARE(findings.hostKills.size(), size_t(1));
    }

    // A kill line is kept and quoted as evidence cut to a few hundred bytes; a cut inside a
    // character made the case's JSON throw on the half character (nlohmann type_error 316), found
    // by fuzz_rules: fuzz/corpus/rules/crash-host-kill-quote-cut-inside-character.
    void aQuotedKillLineStaysValidUtf8()
    {
        const std::string euro = "\xe2\x82\xac"; // three bytes
        QCOMPARE(utf8Prefix("a" + euro, 2), std::string_view("a"));
        QCOMPARE(utf8Prefix("a" + euro, 4), std::string_view("a" + euro));
        for (size_t shift = 0; shift < 3; ++shift) { // every place of the cut within a character
            std::string log = "worker exited with exit_code=137 " + std::string(shift, 'x');
            while (log.size() < 700)
                log += euro;
            log += '\n';
            Case input;
            addInput(input, "kill.log", log);
            QCOMPARE(input.text.hostKills.size(), size_t(1));
            QVERIFY(text::isValidUtf8(input.text.hostKills.front().line));
            const CaseAnalysis analysis = analyzeCase(input);
            // dump() without an error handler throws on invalid UTF-8 anywhere in the document.
            const std::string json = caseToJson(input, analysis).dump();
            QVERIFY(json.find("exit_code=137") != std::string::npos);
        }
    }
};

QTEST_GUILESS_MAIN(TestHostMemory)
#include "tst_hostmemory.moc"
