// What the front ends share at the door beside opening a case (tst_opening): whether inputs are a
// job or one case, what a named folder stands for, the one wording of an input that failed, the
// one report writer, and a plan request checked once and worded for each surface. The front
// ends' suites (tst_inputscli, tst_mcpserver, tst_plancli, tst_reportcli, tst_dropandpaste,
// tst_settings) check that each uses them.
#include "common/testutil.h"
#include "opening/inputfailure.h"
#include "opening/inputrequests.h"
#include "opening/opening.h"
#include "opening/planrequest.h"
#include "opening/reportwriter.h"

#include <QDir>
#include <QFile>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>

using namespace oomlens;

namespace {

std::string jobFile(const char* name)
{
    return QString(test::testDataDir() + QStringLiteral("/job/") + QString::fromUtf8(name)).toStdString();
}

const PlanWording flags { [](PlanField field) { return "--" + std::string(planFieldName(field)); }, "see --help" };
const PlanWording keys { [](PlanField field) {
                            std::string key(planFieldName(field));
                            std::replace(key.begin(), key.end(), '-', '_');
                            return "\"" + key + "\"";
                        },
    "see the tool's input schema" };

PlanRequest request(std::map<PlanField, std::string> values, std::set<PlanField> switches = {})
{
    return { std::move(values), std::move(switches) };
}

} // namespace

class TestFrontDoor : public QObject
{
    Q_OBJECT
private slots:
    // Two snapshots are two ranks; the traceback given with them belongs to the failing one. One
    // snapshot with its traceback is one case: nothing beside.
    void jobOrCase()
    {
        const std::string rank5 = jobFile("rank5.pickle");
        const std::string rank6 = jobFile("rank6.pickle");
        const std::string traceback = jobFile("rank6.oom.txt");
        const JobInputs job = jobInputsAmong({ LoadRequest::file(rank5), LoadRequest::file(traceback),
            LoadRequest::pasted("log"), LoadRequest::file(rank6) });
        QVERIFY(job.isJob());
        QCOMPARE(job.rankFiles, (std::vector<std::string> { rank5, rank6 }));
        QCOMPARE(job.beside.size(), size_t(2));
        QCOMPARE(job.beside[0].path, traceback);
        QCOMPARE(job.beside[1].text, std::string("log"));
        const JobInputs one = jobInputsAmong({ LoadRequest::file(rank6), LoadRequest::file(traceback) });
        QVERIFY(!one.isJob());
        QVERIFY(one.beside.empty());
    }

    // A folder stands for its files, each marked as found rather than named; a file named stays
    // itself.
    void aFolderStandsForItsFiles()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        for (const char* name : { "a.txt", "b.txt" }) {
            QFile file(dir.filePath(QString::fromUtf8(name)));
            QVERIFY(file.open(QIODevice::WriteOnly));
        }
        const std::string named = jobFile("rank6.oom.txt");
        const std::vector<LoadRequest> requests = requestsFor({ dir.path().toStdString(), named });
        QCOMPARE(requests.size(), size_t(3));
        QVERIFY(requests[0].inFolder && requests[1].inFolder);
        QVERIFY(requests[0].path.ends_with("/a.txt") && requests[1].path.ends_with("/b.txt"));
        QCOMPARE(requests[2].path, named);
        QVERIFY(!requests[2].inFolder);
    }

    // One wording: the path as given (and the summary that named it) for a terminal and an agent,
    // the file's name for the app's banner.
    void oneWordingOfAFailure()
    {
        const InputFailure failure { "/runs/rank3.pickle", "no such file", false, "/runs/rank3.oomlens-summary.json" };
        QCOMPARE(failureLine(failure, FailureReader::CommandLine),
            std::string("oomlens: /runs/rank3.pickle (summarized in /runs/rank3.oomlens-summary.json): no such file"));
        QCOMPARE(failureLine(failure, FailureReader::Banner), std::string("rank3.pickle: no such file"));
        const InputFailure pasted { "(pasted)", "no OOM message found", false, {} };
        QCOMPARE(failureLine(pasted, FailureReader::Banner), std::string("pasted text: no OOM message found"));
        QCOMPARE(failureLine(notASnapshot("x.txt"), FailureReader::CommandLine),
            std::string("oomlens: x.txt: not a memory snapshot"));
    }

    // The commands stamp their reports, the app's export does not; a failed write says why with
    // the path as given, and leaves nothing behind.
    void oneReportWriter()
    {
        QTemporaryDir dir;
        QVERIFY(dir.isValid());
        Case input;
        const CaseAnalysis analysis = analyzeCase(input);
        const std::string stampedPath = dir.filePath(QStringLiteral("stamped.html")).toStdString();
        const WrittenReport stamped = writeReport(input, analysis, {}, stampedPath, ReportStamp::Now);
        QVERIFY2(stamped.ok(), stamped.error.c_str());
        QCOMPARE(stamped.path, stampedPath);
        const QByteArray stampedHtml = test::readFile(QString::fromStdString(stampedPath));
        QCOMPARE(size_t(stampedHtml.size()), stamped.bytes);
        const std::string plainPath = dir.filePath(QStringLiteral("plain.html")).toStdString();
        QVERIFY(writeReport(input, analysis, {}, plainPath, ReportStamp::None).ok());
        const QByteArray plainHtml = test::readFile(QString::fromStdString(plainPath));
        QVERIFY(plainHtml.startsWith("<!DOCTYPE html>"));
        QVERIFY(plainHtml != stampedHtml);
        QCOMPARE(plainHtml, QByteArray::fromStdString(report::buildHtmlReport(input, analysis)));

        const WrittenReport failed = writeReport(input, analysis, {}, "/nonexistent/dir/r.html");
        QVERIFY(!failed.ok());
        QVERIFY2(failed.errorLine().starts_with("oomlens: cannot write /nonexistent/dir/r.html: "),
            failed.errorLine().c_str());
    }

    // The same check, worded for the command line and for an agent; the planner's own texts,
    // which name settings by their flags, too.
    void aPlanRequestWordedPerSurface()
    {
        const PlanRequest badBatch = request({ { PlanField::Model, "gpt2" }, { PlanField::Batch, "x" } });
        QCOMPARE(*readPlanRequest(badBatch, flags).problem, std::string("--batch needs a number, got 'x'"));
        QCOMPARE(*readPlanRequest(badBatch, keys).problem, std::string("\"batch\" needs a number, got 'x'"));
        const PlanRequest badChoice = request({ { PlanField::Model, "gpt2" }, { PlanField::Precision, "fp8" } });
        QCOMPARE(*readPlanRequest(badChoice, keys).problem,
            std::string("\"precision\" does not know 'fp8' (see the tool's input schema)"));
        const PlanRequest vpp = request({ { PlanField::Model, "gpt2" }, { PlanField::Vpp, "2" } });
        QCOMPARE(*readPlanRequest(vpp, flags).problem, std::string("--vpp (interleaved stages) needs --pp 2 or more"));
        QCOMPARE(
            *readPlanRequest(vpp, keys).problem, std::string("\"vpp\" (interleaved stages) needs \"pp\" 2 or more"));
        QCOMPARE(*readPlanRequest(request({}), keys).problem,
            std::string("give a model: \"model\" FILE|PRESET or \"params\" N"));
    }

    // A request that plans: the switches read, a model file that cannot be read is an input's
    // failure rather than a problem of the request.
    void aPlanRequestPlans()
    {
        const PlanReading serving = readPlanRequest(
            request({ { PlanField::Model, "llama-2-7b" }, { PlanField::Batch, "8" }, { PlanField::Card, "80GB" } },
                { PlanField::Inference }),
            flags);
        QVERIFY(serving.planned());
        QVERIFY(serving.result.setup.inference);
        QCOMPARE(serving.result.setup.microBatch, 8);
        const PlanReading missing
            = readPlanRequest(request({ { PlanField::Model, "/nonexistent/config.json" } }), flags);
        QVERIFY(!missing.problem);
        QCOMPARE(missing.failedInputs(), 1);
        QVERIFY(!missing.planned());
        QCOMPARE(missing.failures.front().path, std::string("/nonexistent/config.json"));
    }
};

QTEST_GUILESS_MAIN(TestFrontDoor)
#include "tst_frontdoor.moc"
