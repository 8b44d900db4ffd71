#include "common/oomnames.h"
#include "common/testutil.h"
#include "common/textfixtures.h"
#include "core/phase.h"
#include "parsers/text/textparser.h"

#include <QTest>

#include <nlohmann/json.hpp>

#include <string>
#include <vector>

using namespace oomlens;

// Issue 28's bar: on real pastes people posted in public issue threads (../shared/corpus/text:
// every row of oom_tracebacks.jsonl, and the rows of oom_messages.jsonl that carry a traceback and
// a phase label), the failing phase oomlens reports is the one the frames show on at least 85%.
// The labels were written from the visible frames by whoever gathered the corpus, not by us.
namespace {

struct Paste
{
    std::string id;
    std::string text;
    Phase labelled = Phase::Unknown;
};

std::vector<Paste> realPastesWithTracebacks()
{
    std::vector<Paste> pastes;
    for (const auto& record : test::corpusTextRecords(QStringLiteral("oom_tracebacks.jsonl")))
        pastes.push_back({ record["id"].get<std::string>(), record["text"].get<std::string>(),
            phaseFromName(record["phase"].get<std::string>()) });
    for (const auto& record : test::corpusTextRecords(QStringLiteral("oom_messages.jsonl"))) {
        const Phase labelled = phaseFromName(record["phase"].get<std::string>());
        if (record["has_traceback"].get<bool>() && labelled != Phase::Unknown)
            pastes.push_back({ record["id"].get<std::string>(), record["text"].get<std::string>(), labelled });
    }
    return pastes;
}

// What `diagnose` reports for the paste: the first message's phase (its frames' when it has
// them), else the first phase a stray traceback shows.
Phase reportedPhase(const std::string& text)
{
    return parseText(text).failingPhase();
}

} // namespace

class TestRealPastes : public QObject
{
    Q_OBJECT

private Q_SLOTS:
    void phaseOnRealPastes()
    {
        OOMLENS_REQUIRE_SHARED();
        const std::vector<Paste> pastes = realPastesWithTracebacks();
        QVERIFY(pastes.size() >= 40);
        int right = 0;
        int tracebackRows = 0;
        int tracebackRight = 0;
        int wrong = 0;
        for (const Paste& paste : pastes) {
            const Phase found = reportedPhase(paste.text);
            const bool ok = found == paste.labelled;
            right += ok ? 1 : 0;
            if (paste.id.rfind("tb-", 0) == 0) {
                ++tracebackRows;
                tracebackRight += ok ? 1 : 0;
            }
            if (!ok) {
                wrong += found != Phase::Unknown ? 1 : 0;
                qInfo("%s: labelled %s, found %s", paste.id.c_str(), std::string(phaseName(paste.labelled)).c_str(),
                    std::string(phaseName(found)).c_str());
            }
        }
        const int total = static_cast<int>(pastes.size());
        qInfo("phase right on %d of %d real pastes with tracebacks (%.0f%%): %d of %d in oom_tracebacks.jsonl, "
              "%d of %d in oom_messages.jsonl; %d wrong, %d unknown",
            right, total, 100.0 * right / total, tracebackRight, tracebackRows, right - tracebackRight,
            total - tracebackRows, wrong, total - right - wrong);
        QVERIFY2(right * 100 >= total * 85, "the phase is right on fewer than 85% of the real pastes");
        // Where it stands (49 of 50 when measured; the one miss, oom-077, is labelled evaluation from
        // the prose while its frames show only a forward pass): a drop below 48 is a regression.
        QVERIFY2(right >= 48 || total != 50, "the phase regressed below 48 of the 50 real pastes");
        // A wrong phase misleads where an unknown one only says less: keep them rare.
        QVERIFY2(wrong * 100 <= total * 10, "a wrong phase on more than 10% of the real pastes");
    }

    // What a user reads is each message's phase (`diagnose --json`'s oom_messages, the text): it must
    // be the failing phase above, also when the frames were printed apart from the message (vLLM
    // workers' "(VllmWorker rank=N pid=M)" prefixes). 43 of 50 before messages took it, 49 after.
    void messagesCarryTheFailingPhase()
    {
        OOMLENS_REQUIRE_SHARED();
        int right = 0;
        const std::vector<Paste> pastes = realPastesWithTracebacks();
        for (const Paste& paste : pastes) {
            const TextFindings findings = parseText(paste.text);
            const Phase failing = findings.failingPhase();
            Phase shown = failing; // a bare traceback: the JSON's failing_phase
            if (!findings.oomMessages.empty()) {
                shown = Phase::Unknown;
                for (const OomMessage& message : findings.oomMessages) {
                    if (message.phase != Phase::Unknown) {
                        shown = message.phase;
                        break;
                    }
                }
            }
            QVERIFY2(shown == failing, paste.id.c_str());
            right += shown == paste.labelled ? 1 : 0;
        }
        QVERIFY2(right >= 48 || pastes.size() != 50, "the phase a user reads regressed below 48 of the 50 real pastes");
    }
};

QTEST_GUILESS_MAIN(TestRealPastes)
#include "tst_realpastes.moc"
