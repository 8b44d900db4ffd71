#include "common/oomnames.h"
#include "common/testutil.h"
#include "common/textfixtures.h"
#include "core/phase.h"
#include "parsers/text/textparser.h"

#include <QTest>

#include <nlohmann/json.hpp>

#include <map>
#include <regex>
#include <set>

using namespace oomlens;
using test::value;

namespace {

// The corpus labels near-OOM CUDA errors with backend "cuda"; we are more specific.
std::string labelBackend(Backend ours)
{
    if (ours == Backend::Cublas || ours == Backend::Cudnn || ours == Backend::CudaRuntime)
        return "cuda";
    return backendText(ours);
}

// Corpus template label -> the template ids that fit it.
const std::map<std::string, std::set<OomTemplate>>& templateFamilies()
{
    static const std::map<std::string, std::set<OomTemplate>> families {
        { "cuda-1.0-1.4-cached", { OomTemplate::T0 } },
        { "cuda-1.5-1.9-reserved", { OomTemplate::T1 } },
        { "cuda-1.10-1.13/2.0-max_split-hint", { OomTemplate::T1 } },
        { "cuda-2.1-capacty", { OomTemplate::T2 } },
        { "cuda-2.2+-expandable-hint", { OomTemplate::T3, OomTemplate::T4 } },
        { "hip-2.2+-expandable-hint", { OomTemplate::T3, OomTemplate::T4 } },
        { "xpu-2.x", { OomTemplate::Xpu } },
        { "mps", { OomTemplate::Mps } },
        { "xla-resource-exhausted", { OomTemplate::Xla } },
        { "tf-oom-when-allocating-tensor", { OomTemplate::Tf } },
        { "cublas-alloc-failed", { OomTemplate::Cublas } },
        { "cuda-error-out-of-memory", { OomTemplate::CudaRuntime } },
        { "thc-cuda-runtime-error-2", { OomTemplate::Thc } },
        { "cuda-mallocasync", { OomTemplate::CudaMallocAsync } },
        { "cuda-message-cut-before-stats", { OomTemplate::Unknown } },
    };
    return families;
}

// Records whose copy is cut somewhere no parser can see: at a word boundary inside the hint
// (indistinguishable from a user trimming it, as in oom-055), or inside unrelated log output
// after a complete message.
const std::set<std::string> truncationOutsideFindings { "oom-026", "oom-049", "oom-089", "oom-099" };

// Phases the visible text proves; the other phase labels come from the issue discussion.
const std::map<std::string, Phase> phaseFromTraceback {
    { "oom-026", Phase::Backward }, { "oom-065", Phase::Forward }, { "oom-068", Phase::Load },
    { "oom-075", Phase::Forward }, { "oom-076", Phase::Eval }, { "oom-079", Phase::Eval },
    { "oom-089", Phase::Forward }, { "oom-098", Phase::Optimizer },
    { "oom-021", Phase::Load }, // a tensor factory under `with torch.device(...)`: model construction
    { "oom-046", Phase::Forward }, // JAX running a compiled program
    { "oom-094", Phase::Load }, // unloading a model
};

// oom-077 is labelled eval from the issue text (model.eval()); its frames only show module forwards.
const std::set<std::string> phaseLabelNotInText { "oom-077" };

bool anyTruncated(const TextFindings& findings)
{
    for (const OomMessage& message : findings.oomMessages) {
        if (message.truncated || (message.traceback && message.traceback->truncated))
            return true;
    }
    for (const TracebackInfo& traceback : findings.tracebacks) {
        if (traceback.truncated)
            return true;
    }
    for (const MemorySummary& summary : findings.summaries) {
        if (summary.truncated)
            return true;
    }
    return false;
}

// An oracle written apart from the parser: a size as printed, in bytes, by decimal arithmetic.
std::optional<uint64_t> sizeFromText(const std::string& number, const std::string& unit)
{
    static const std::map<std::string, uint64_t> units { { "bytes", 1 }, { "B", 1 }, { "KiB", 1ULL << 10 },
        { "KB", 1ULL << 10 }, { "MiB", 1ULL << 20 }, { "MB", 1ULL << 20 }, { "GiB", 1ULL << 30 }, { "GB", 1ULL << 30 },
        { "TiB", 1ULL << 40 } };
    const auto it = units.find(unit);
    if (it == units.end())
        return std::nullopt;
    const size_t dot = number.find('.');
    const uint64_t whole = std::stoull(number.substr(0, dot));
    uint64_t bytes = whole * it->second;
    if (dot != std::string::npos) {
        const std::string digits = number.substr(dot + 1);
        uint64_t scale = 1;
        for (size_t i = 0; i < digits.size(); ++i)
            scale *= 10;
        // Printed sizes have two decimals (six at most): digits x 2^40 stays within 64 bits.
        const uint64_t fraction = std::stoull(digits.substr(0, 6)) * it->second;
        if (digits.size() > 6)
            return std::nullopt;
        bytes += static_cast<uint64_t>((fraction + scale / 2) / scale);
    }
    return bytes;
}

// The first size after one of the patterns, each with the size as groups 1 (number) and 2 (unit).
std::optional<uint64_t> oracle(const std::string& text, std::initializer_list<const char*> patterns)
{
    for (const char* pattern : patterns) {
        std::smatch match;
        if (std::regex_search(text, match, std::regex(pattern)))
            return sizeFromText(match[1].str(), match[2].str());
    }
    return std::nullopt;
}

#define SIZE_RE "([0-9]+(?:\\.[0-9]+)?) ?(bytes|B|KiB|KB|MiB|MB|GiB|GB|TiB)"

Phase findingsPhase(const TextFindings& findings)
{
    for (const OomMessage& message : findings.oomMessages) {
        if (message.phase != Phase::Unknown)
            return message.phase;
    }
    for (const TracebackInfo& traceback : findings.tracebacks) {
        if (traceback.phase != Phase::Unknown)
            return traceback.phase;
    }
    return Phase::Unknown;
}

} // namespace

class TestTextCorpus : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void oomMessages_data()
    {
        QTest::addColumn<QString>("id");
        QTest::addColumn<QString>("record");
        if (!test::hasShared())
            return;
        for (const auto& record : test::corpusTextRecords(QStringLiteral("oom_messages.jsonl")))
            QTest::newRow(record["id"].get<std::string>().c_str())
                << QString::fromStdString(record["id"].get<std::string>()) << QString::fromStdString(record.dump());
    }

    void oomMessages()
    {
        OOMLENS_REQUIRE_SHARED();
        QFETCH(QString, id);
        QFETCH(QString, record);
        const auto json = nlohmann::json::parse(record.toStdString());
        const std::string key = id.toStdString();
        const std::string text = json["text"].get<std::string>();
        const TextFindings findings = parseText(text);
        QVERIFY2(!findings.empty(), "nothing parsed");

        const std::string templateLabel = json["template"].get<std::string>();
        if (templateLabel.rfind("message-not-visible", 0) == 0) {
            QVERIFY(findings.oomMessages.empty());
            QVERIFY(!findings.tracebacks.empty());
        } else {
            QVERIFY(!findings.oomMessages.empty());
            const OomMessage& message = findings.oomMessages.front();
            QCOMPARE(labelBackend(message.backend), json["backend"].get<std::string>());
            const auto family = templateFamilies().find(templateLabel);
            QVERIFY2(family != templateFamilies().end(), templateLabel.c_str());
            QVERIFY2(family->second.count(message.templateId), oomTemplateText(message.templateId).c_str());
            QVERIFY(!message.text.empty());
            QVERIFY(message.sourceLine >= 1);
        }

        const bool truncated = json["truncated"].get<bool>();
        if (!truncated)
            QVERIFY2(!anyTruncated(findings), "flagged truncated, the label says complete");
        else if (!truncationOutsideFindings.count(key))
            QVERIFY2(anyTruncated(findings), "the label says truncated");

        const Phase labelled = phaseFromName(json["phase"].get<std::string>());
        const Phase found = findingsPhase(findings);
        if (phaseFromTraceback.count(key)) {
            QCOMPARE(phaseName(found), phaseName(phaseFromTraceback.at(key)));
            QCOMPARE(phaseName(found), phaseName(labelled));
        } else if (found != Phase::Unknown && !phaseLabelNotInText.count(key)) {
            // Where we claim a phase, it must not contradict the label.
            QCOMPARE(phaseName(found), phaseName(labelled));
        }
    }

    void exactValues_data()
    {
        QTest::addColumn<QString>("id");
        test::addOomByteColumns();
        // By hand: round(x * 2^unit) per field; T0 reserved = allocated + cached; T1 unallocated =
        // reserved - allocated; T2+ reserved = allocated + unallocated.
        QTest::newRow("oom-001 T1") << "oom-001" << qint64(1836098519) << qint64(6442450944) << qint64(1116691497)
                                    << qint64(3747358966) << qint64(3758096384) << qint64(3758096384 - 3747358966)
                                    << qint64(-1);
        QTest::newRow("oom-062 T0") << "oom-062" << qint64(13107200) << qint64(11725260718) << qint64(9964324127)
                                    << qint64(8986296) << qint64(8986296 + 4907336) << qint64(4907336) << qint64(-1);
        QTest::newRow("oom-012 T2") << "oom-012" << qint64(3221225472) << qint64(25393994138) << qint64(1782411428)
                                    << qint64(12981538652) << qint64(12981538652 + 5196910428) << qint64(5196910428)
                                    << qint64(-1);
        QTest::newRow("oom-021 HIP") << "oom-021" << qint64(3554085437) << qint64(137438953472) << qint64(818140938)
                                     << qint64(61954903245) << qint64(61954903245 + 79503032) << qint64(79503032)
                                     << qint64(-1);
        QTest::newRow("oom-070 cudaMallocAsync")
            << "oom-070" << qint64(135171932) << qint64(33672543601) << qint64(30083645) << qint64(31782757990)
            << qint64(-1) << qint64(-1) << qint64(-1);
        QTest::newRow("oom-029 MPS GB") << "oom-029" << qint64(805306368) << qint64(-1) << qint64(-1)
                                        << qint64(5970004541) << qint64(-1) << qint64(-1) << qint64(7301444403);
        QTest::newRow("oom-039 XPU allowed")
            << "oom-039" << qint64(8708046193) << qint64(17759689769) << qint64(17759689769) << qint64(0) << qint64(0)
            << qint64(0) << qint64(8879844884);
        QTest::newRow("oom-048 XLA") << "oom-048" << qint64(20029400304) << qint64(-1) << qint64(-1) << qint64(-1)
                                     << qint64(-1) << qint64(-1) << qint64(-1);
        QTest::newRow("oom-049 XLA async")
            << "oom-049" << qint64(1225195446464) << qint64(85095874560) << qint64(22635544576) << qint64(-1)
            << qint64(-1) << qint64(-1) << qint64(-1);
        QTest::newRow("oom-101 TF shape") << "oom-101" << qint64(128LL * 128 * 109 * 109 * 4) << qint64(-1)
                                          << qint64(-1) << qint64(-1) << qint64(-1) << qint64(-1) << qint64(-1);
    }

    void exactValues()
    {
        OOMLENS_REQUIRE_SHARED();
        QFETCH(QString, id);
        std::string text;
        for (const auto& record : test::corpusTextRecords(QStringLiteral("oom_messages.jsonl"))) {
            if (record["id"] == id.toStdString())
                text = record["text"].get<std::string>();
        }
        QVERIFY(!text.empty());
        const TextFindings findings = parseText(text);
        QVERIFY(!findings.oomMessages.empty());
        const OomMessage& message = findings.oomMessages.front();
        test::compareOomBytes(message);
    }

    void particularRecords()
    {
        OOMLENS_REQUIRE_SHARED();
        std::map<std::string, TextFindings> parsed;
        for (const auto& record : test::corpusTextRecords(QStringLiteral("oom_messages.jsonl")))
            parsed[record["id"].get<std::string>()] = parseText(record["text"].get<std::string>());
        // A process line with a PID, and the NVML self line.
        QCOMPARE(parsed["oom-026"].oomMessages[0].processes.size(), size_t(1));
        QCOMPARE(parsed["oom-026"].oomMessages[0].processes[0].pid.value_or(0), int64_t(40666));
        QVERIFY(parsed["oom-012"].oomMessages[0].processes[0].self);
        // The logger's echo and pytest's cut summary line are the same failure.
        QCOMPARE(parsed["oom-086"].oomMessages.size(), size_t(1));
        QCOMPARE(parsed["oom-039"].oomMessages.size(), size_t(1));
        // Chained exception: the OOM, then the handler's traceback.
        QVERIFY(parsed["oom-075"].oomMessages[0].traceback->chained);
        QVERIFY(parsed["oom-079"].oomMessages[0].traceback->chained);
        // srun's "0: " prefixes are gone before the traceback is read.
        QCOMPARE(parsed["oom-098"].oomMessages[0].traceback->frames.size(), size_t(7));
        // VS Code lists frames innermost first; we store them outermost first.
        const auto& vscode = parsed["oom-065"].oomMessages[0].traceback->frames;
        QVERIFY(vscode.front().filename.find("train.py") != std::string::npos);
        QCOMPARE(vscode.back().function, std::string("forward"));
        // Old ("RuntimeError") vs new class names narrow the version.
        QCOMPARE(parsed["oom-002"].oomMessages[0].torchVersionHint, std::string("1.10-1.12"));
        QCOMPARE(parsed["oom-062"].oomMessages[0].torchVersionHint, std::string("<=1.3"));
        QCOMPARE(parsed["oom-007"].oomMessages[0].torchVersionHint, std::string("2.1"));
        QCOMPARE(parsed["oom-021"].oomMessages[0].torchVersionHint, std::string("2.5-2.7"));
        // The garbage 2^64 memory-fraction limit is not a number we keep.
        QVERIFY(!parsed["oom-070"].oomMessages[0].allowedBytes);
        QVERIFY(!parsed["oom-070"].oomMessages[0].notes.empty());
    }

    // The bars: message fields exact on 95% of numeric messages of every era and backend,
    // checked against an independent reading of the printed numbers; the failing phase found on 75%
    // of messages whose traceback shows it.
    void fieldsMatchThePrintedNumbers()
    {
        OOMLENS_REQUIRE_SHARED();
        std::map<std::string, std::pair<int, int>> byTemplate; // label -> (exact, numeric)
        for (const auto& record : test::corpusTextRecords(QStringLiteral("oom_messages.jsonl"))) {
            const std::string text = record["text"].get<std::string>();
            const TextFindings findings = parseText(text);
            if (findings.oomMessages.empty())
                continue;
            const OomMessage& m = findings.oomMessages.front();
            const std::string flat = std::regex_replace(text, std::regex("\\s+"), " ");
            struct Check
            {
                std::optional<uint64_t> expected;
                std::optional<uint64_t> parsed;
            };
            const Check checks[] = {
                { oracle(flat, { "Tried to allocate " SIZE_RE, "Requested : " SIZE_RE }), m.requestedBytes },
                { oracle(
                      flat, { SIZE_RE " total capacity", "total capac[i]?ty of " SIZE_RE, "Device limit : " SIZE_RE }),
                    m.totalBytes },
                { oracle(
                      flat, { "; " SIZE_RE " free", "of which " SIZE_RE " is free", "according to CUDA\\): " SIZE_RE }),
                    m.freeBytes },
                { oracle(flat,
                      { SIZE_RE " already allocated", "Of the allocated memory " SIZE_RE,
                          "Currently allocated : " SIZE_RE, "MPS allocated: " SIZE_RE }),
                    m.allocatedBytes },
                { oracle(flat, { "(?:trying to allocate|allocating|failed to allocate) ([0-9]+) (bytes)" }),
                    m.backend == Backend::Xla ? m.requestedBytes : std::nullopt },
            };
            int compared = 0;
            bool exact = true;
            for (const Check& check : checks) {
                if (!check.expected)
                    continue;
                ++compared;
                exact = exact && check.parsed == check.expected;
            }
            if (compared == 0)
                continue;
            auto& [right, numeric] = byTemplate[record["template"].get<std::string>()];
            ++numeric;
            right += exact ? 1 : 0;
            if (!exact)
                qWarning("%s: a field differs from the printed number", record["id"].get<std::string>().c_str());
        }
        QVERIFY(byTemplate.size() >= 8);
        for (const auto& [label, counts] : byTemplate) {
            qInfo("%s: %d of %d numeric messages exact", label.c_str(), counts.first, counts.second);
            QVERIFY2(counts.first * 100 >= counts.second * 95, label.c_str());
        }
    }

    void phaseFoundWhereTheTracebackShowsIt()
    {
        OOMLENS_REQUIRE_SHARED();
        int shown = 0;
        int found = 0;
        for (const auto& record : test::corpusTextRecords(QStringLiteral("oom_messages.jsonl"))) {
            const std::string id = record["id"].get<std::string>();
            const Phase labelled = phaseFromName(record["phase"].get<std::string>());
            if (!record["has_traceback"].get<bool>() || labelled == Phase::Unknown || phaseLabelNotInText.count(id))
                continue;
            ++shown;
            found += findingsPhase(parseText(record["text"].get<std::string>())) == labelled ? 1 : 0;
        }
        qInfo("phase found on %d of %d messages whose traceback shows it", found, shown);
        QVERIFY(shown >= 10);
        QVERIFY(found * 4 >= shown * 3);
    }

    void memorySummaries_data()
    {
        QTest::addColumn<QString>("id");
        QTest::addColumn<QString>("text");
        if (!test::hasShared())
            return;
        for (const auto& record : test::corpusTextRecords(QStringLiteral("memory_summaries.jsonl")))
            QTest::newRow(record["id"].get<std::string>().c_str()) << QString::fromStdString(
                record["id"].get<std::string>()) << QString::fromStdString(record["text"].get<std::string>());
    }

    void memorySummaries()
    {
        OOMLENS_REQUIRE_SHARED();
        QFETCH(QString, text);
        const TextFindings findings = parseText(text.toStdString());
        QCOMPARE(findings.summaries.size(), size_t(1));
        // Every copy in the corpus is cut somewhere.
        QVERIFY(findings.summaries[0].truncated);
    }

    void summaryValues()
    {
        OOMLENS_REQUIRE_SHARED();
        std::map<std::string, MemorySummary> byId;
        std::map<std::string, TextFindings> all;
        for (const auto& record : test::corpusTextRecords(QStringLiteral("memory_summaries.jsonl"))) {
            auto findings = parseText(record["text"].get<std::string>());
            QVERIFY(!findings.summaries.empty());
            byId[record["id"].get<std::string>()] = findings.summaries[0];
            all[record["id"].get<std::string>()] = std::move(findings);
        }
        const MemorySummary& ms002 = byId["ms-002"];
        QCOMPARE(ms002.unitEra, std::string("KB/MB"));
        QCOMPARE(value(ms002.rows.at("allocated_memory").current), qint64(12166) << 20);
        QCOMPARE(value(ms002.rows.at("gpu_reserved_memory").freed), qint64(4504) << 20);
        QCOMPARE(value(ms002.smallPool.at("allocated_memory").freed), qint64(11) << 20);
        const MemorySummary& ms003 = byId["ms-003"];
        QCOMPARE(ms003.unitEra, std::string("KiB/MiB"));
        QCOMPARE(ms003.allocRetries.value_or(-1), int64_t(1));
        QCOMPARE(value(ms003.rows.at("allocated_memory").peak), qint64(14441) << 20);
        const MemorySummary& ms004 = byId["ms-004"];
        QCOMPARE(ms004.ooms.value_or(-1), int64_t(1));
        QCOMPARE(ms004.allocRetries.value_or(-1), int64_t(6));
        QCOMPARE(value(ms004.rows.at("allocated_memory").allocated), qint64(767743) << 30);
        QCOMPARE(all["ms-004"].oomMessages.size(), size_t(1));
        const MemorySummary& ms007 = byId["ms-007"];
        QCOMPARE(value(ms007.rows.at("gpu_reserved_segments").peak), qint64(230));
        QCOMPARE(value(ms007.rows.at("non_releasable_allocs").allocated), qint64(24551));
        QCOMPARE(value(ms007.largePool.at("gpu_reserved_segments").current), qint64(3));
        const MemorySummary& ms009 = byId["ms-009"];
        QCOMPARE(value(ms009.rows.at("allocated_memory").current), qint64(1048576));
        QCOMPARE(value(ms009.rows.at("allocated_memory").freed), qint64(0));
        const MemorySummary& ms011 = byId["ms-011"];
        QVERIFY(ms011.allZero);
        QCOMPARE(all["ms-011"].oomMessages.at(0).templateId, OomTemplate::CudaMallocAsync);
        QVERIFY(!byId["ms-003"].allZero);
        const MemorySummary& ms015 = byId["ms-015"];
        QCOMPARE(value(ms015.rows.at("oversize_gpu_segments").peak), qint64(0));
        QCOMPARE(ms015.rows.size(), size_t(2));
        QCOMPARE(byId["ms-017"].ooms.value_or(-1), int64_t(0));
        QVERIFY(byId["ms-017"].rows.empty());
    }
};

QTEST_GUILESS_MAIN(TestTextCorpus)
#include "tst_textcorpus.moc"
