// Family E (tests/data/scenarios_e): a held-out check. Fourteen scenarios simulated by
// tests/tools/familye on family D's allocator emulation and programs (imported, with the allocator's
// out-of-memory path as upstream writes it: no second free-list search after release_cached_blocks),
// written without reading the diagnosis rules, frozen, and measured once
// (tests/data/scenarios_e/README.md). Each label is backed by a counterfactual run that completes.
//
// Each scenario is checked four ways: it reads; its top diagnosis is the label's case (from the
// snapshot alone and with its OOM text); its bands at the peak match the simulation's bytes; and,
// where activation checkpointing is on, no fix proposes turning it on. The rows that failed when
// first measured are listed in expectedFailures(): QtTest reports a listed row that starts passing
// as XPASS, which fails the suite, and an unlisted row that fails fails it, so the family records
// whether the rules generalise without being tuned to it.
#include "common/analysisfixtures.h"
#include "common/scenariofamily.h"
#include "common/testutil.h"
#include "core/caseanalysis.h"
#include "core/jsonexport.h"

#include <QDir>
#include <QFile>
#include <QJsonObject>
#include <QProcess>
#include <QRegularExpression>
#include <QTemporaryDir>
#include <QTest>

#include <algorithm>
#include <cstdint>
#include <map>

using namespace oomlens;

namespace {

constexpr const char* heldOut = "held out: failed when first measured";

// Row name -> why it fails today.
const std::map<QString, const char*>& expectedFailures()
{
    static const std::map<QString, const char*> rows {
        { QStringLiteral("bands:ddp_qwen25_1_5b_l40s_contrastive_queue_never_dequeued"), heldOut },
        { QStringLiteral("bands:deepspeed_moe_mixtral_ep8_prefill_capture_all_to_all_deferred"), heldOut },
        { QStringLiteral("bands:gptfast_llama32_3b_l4_recapture_while_old_graphs_alive"), heldOut },
        { QStringLiteral("bands:lightning_ddp_llama32_3b_validation_step_outputs_logits"), heldOut },
        { QStringLiteral("bands:lm_eval_gemma2_9b_l40s_eager_attention_8k_scores"), heldOut },
        { QStringLiteral("bands:trl_grpo_qwen25_14b_zero3_colocate_weight_sync_gathers_whole_model"), heldOut },
        { QStringLiteral("bands:zero2_mistral_7b_a100_one_long_sample_pads_batch"), heldOut },
        { QStringLiteral("bands:zero3_llama2_13b_a100_40gb_prefetch_bucket_1e10"), heldOut },
        { QStringLiteral("text:fsdp2_llama3_8b_a100_40gb_adam_state_first_step_then_forward"), heldOut },
    };
    return rows;
}

const test::ScenarioFamily& family()
{
    static const test::ScenarioFamily family { test::testDataDir() + QStringLiteral("/scenarios_e"), QString(),
        expectedFailures() };
    return family;
}

// The categories the labels count, product.md §3 (unknown is the product's own: none of the
// simulation's bytes are unknown, so whatever lands there is a miss).
const char* const categories[] = { "parameters", "gradients", "optimizer_state", "activations", "temporaries", "inputs",
    "communication", "kv_cache", "unknown" };

// How far a band may be from the simulation's bytes. The simulation knows what every tensor is
// for; the product infers it from stacks and lifetimes, and a few kinds of tensor are honestly
// ambiguous (the fp32 loss logits between activations and temporaries, a capture's transient
// intermediates, the small pool's odds and ends). In these scenarios those make up less than 5% of
// the peak, and a band 5% of the peak off changes no diagnosis and no fit/no-fit verdict of a fix
// (the counterfactuals all leave at least that much room). The floor of 256 MiB covers the small
// runs, where a single logits tensor is a larger share of a small peak.
uint64_t bandTolerance(uint64_t peakBytes)
{
    return std::max<uint64_t>(peakBytes / 20, uint64_t(256) << 20);
}

QStringList bandMismatches(const nlohmann::ordered_json& product, const QJsonObject& truth, uint64_t tolerance)
{
    QStringList wrong;
    for (const char* category : categories) {
        const auto want = static_cast<uint64_t>(truth.value(QLatin1String(category)).toDouble());
        const uint64_t got = product.contains(category) ? product[category].get<uint64_t>() : 0;
        const uint64_t diff = got > want ? got - want : want - got;
        if (diff > tolerance)
            wrong << QStringLiteral("%1 want %2 MiB got %3 MiB")
                         .arg(QLatin1String(category))
                         .arg(want >> 20)
                         .arg(got >> 20);
    }
    return wrong;
}

// A fix that turns activation checkpointing on: the ladder's checkpointing step, a title that says
// so, or a snippet that is the switch.
bool enablesCheckpointing(const Fix& fix)
{
    static const QRegularExpression title(
        QStringLiteral(
            "(enable|use|turn on|add|apply).{0,30}(activation|gradient) checkpointing|^(activation|gradient) "
            "checkpointing"),
        QRegularExpression::CaseInsensitiveOption);
    static const QRegularExpression snippet(
        QStringLiteral("gradient_checkpointing_enable\\(|gradient_checkpointing\\s*="
                       "\\s*True|checkpoint_wrapper\\(|enable_activation_checkpointing"
                       "\\s*[:=]\\s*[Tt]rue|torch\\.utils\\.checkpoint\\.checkpoint\\(|"
                       "--recompute-(granularity|activations)"));
    const QString name = QString::fromStdString(fix.title);
    if (name.contains(QStringLiteral("offload"), Qt::CaseInsensitive))
        return false; // CPU offload of the checkpointed inputs is what is left to offer
    return fix.kind == FixKind::Checkpointing || title.match(name).hasMatch()
        || snippet.match(QString::fromStdString(fix.snippet)).hasMatch();
}

} // namespace

class TestDiagFamilyE : public QObject
{
    Q_OBJECT
private Q_SLOTS:
    void everyClassIsCovered()
    {
        // The yardstick itself: 12 to 16 scenarios, every wave-3 class at least twice, at least six
        // controls (a classic cause inside a distributed or engine recipe), every label complete.
        std::map<QString, int> perCase;
        int controls = 0;
        const QStringList names = test::scenarioNames(family().scenariosDir);
        for (const QString& name : names) {
            const QJsonObject label = family().scenarioLabel(name);
            const QString truth = label.value(QStringLiteral("case")).toString();
            ++perCase[truth];
            if (label.value(QStringLiteral("control")).toBool())
                ++controls;
            QVERIFY2(QFile::exists(family().scenario(name) + QStringLiteral(".pickle")), qPrintable(name));
            QVERIFY2(QFile::exists(family().scenario(name) + QStringLiteral(".oom.txt")), qPrintable(name));
            QVERIFY2(!label.value(QStringLiteral("phase")).toString().isEmpty(), qPrintable(name));
            QVERIFY2(label.value(QStringLiteral("step")).isDouble(), qPrintable(name));
            QVERIFY2(label.value(QStringLiteral("capacity_bytes")).toDouble() > 0, qPrintable(name));
            QVERIFY2(label.value(QStringLiteral("checkpointing")).isBool(), qPrintable(name));
            QVERIFY2(label.value(QStringLiteral("bytes_at_oom")).isObject(), qPrintable(name));
            QVERIFY2(label.value(QStringLiteral("bytes_at_peak")).isObject(), qPrintable(name));
            QVERIFY2(label.value(QStringLiteral("pending_free_bytes_at_oom")).isDouble(), qPrintable(name));
            QVERIFY2(label.value(QStringLiteral("private_pool_bytes_at_oom")).isDouble(), qPrintable(name));
        }
        QVERIFY(names.size() >= 12 && names.size() <= 16);
        for (const char* id : { "pending_frees", "communication_buffers", "graph_capture", "colocated_engine" })
            QVERIFY2(perCase[QLatin1String(id)] >= 2, id);
        QVERIFY(controls >= 6);
    }

    // The data is what the generator writes: run it into a second folder and compare every file
    // byte for byte. The generator also re-checks every label's physics (the run as written fails,
    // its counterfactual completes), so a change to it that breaks a label fails here.
    void generatorReproducesTheData()
    {
        QTemporaryDir out;
        QVERIFY(out.isValid());
        QProcess generator;
        generator.setProcessChannelMode(QProcess::MergedChannels);
        QProcessEnvironment env = QProcessEnvironment::systemEnvironment();
        env.insert(
            QStringLiteral("PYTHONDONTWRITEBYTECODE"), QStringLiteral("1")); // nothing written into the source tree
        generator.setProcessEnvironment(env);
        generator.start(QStringLiteral(OOMLENS_PYTHON),
            { QStringLiteral(OOMLENS_SOURCE_DIR "/tests/tools/familye/generate.py"), QStringLiteral("--out"),
                out.path() });
        QVERIFY2(generator.waitForFinished(240000), "the generator did not finish in 4 minutes");
        const QByteArray log = generator.readAll();
        QVERIFY2(
            generator.exitStatus() == QProcess::NormalExit && generator.exitCode() == 0, log.right(2000).constData());
        const QDir committed(family().scenariosDir);
        const QStringList files = committed.entryList(QDir::Files, QDir::Name);
        QCOMPARE(QDir(out.path()).entryList(QDir::Files, QDir::Name), files);
        for (const QString& file : files)
            QVERIFY2(test::readFile(committed.filePath(file)) == test::readFile(out.filePath(file)), qPrintable(file));
    }

    void scenariosRead_data() { test::scenarioRows(family()); }

    // Every input of every scenario loads, as one snapshot and at least one OOM message.
    void scenariosRead()
    {
        QFETCH(QString, name);
        test::checkScenarioRead(family(), name);
    }

    void scenarioDiagnosis_data() { test::scenarioDiagnosisRows(family()); }

    // The top diagnosis is the label's case (or one it allows), from the snapshot alone and with the
    // OOM text added.
    void scenarioDiagnosis()
    {
        QFETCH(QString, name);
        QFETCH(bool, withText);
        test::checkScenarioDiagnosis(family(), name, withText);
    }

    void bands_data()
    {
        QTest::addColumn<QString>("name");
        for (const QString& name : test::scenarioNames(family().scenariosDir))
            QTest::newRow(qPrintable(QStringLiteral("bands:") + name)) << name;
    }

    // The bands of the JSON's categories_at_peak against the simulation's bytes at that peak (and
    // categories_at_oom against the bytes at the OOM, once the JSON carries it), within
    // bandTolerance(); the total must be the simulation's peak within 1% (the reconstruction).
    void bands()
    {
        QFETCH(QString, name);
        const QJsonObject label = family().scenarioLabel(name);
        const Case input = test::scenarioCase(family().scenario(name), false);
        const auto doc = caseToJson(input, analyzeCase(input));
        QVERIFY(!doc["snapshots"].empty());
        const auto& snapshot = doc["snapshots"][0];
        const auto peak = static_cast<uint64_t>(label.value(QStringLiteral("peak_allocated_bytes")).toDouble());
        const auto got = snapshot["peak_allocated_bytes"].get<uint64_t>();
        QVERIFY2((got > peak ? got - peak : peak - got) <= peak / 100,
            qPrintable(QStringLiteral("peak want %1 got %2").arg(peak).arg(got)));
        const uint64_t tolerance = bandTolerance(peak);
        QStringList wrong = bandMismatches(
            snapshot["categories_at_peak"], label.value(QStringLiteral("bytes_at_peak")).toObject(), tolerance);
        if (snapshot.contains("categories_at_oom") && snapshot["categories_at_oom"].is_object()) {
            for (const QString& miss : bandMismatches(
                     snapshot["categories_at_oom"], label.value(QStringLiteral("bytes_at_oom")).toObject(), tolerance))
                wrong << QStringLiteral("at oom: ") + miss;
        }
        test::expectFailureIfListed(family().expectedFailures);
        QVERIFY2(wrong.isEmpty(), qPrintable(wrong.join(QStringLiteral("; "))));
    }

    void checkpointingNotProposed_data()
    {
        QTest::addColumn<QString>("name");
        for (const QString& name : test::scenarioNames(family().scenariosDir)) {
            if (family().scenarioLabel(name).value(QStringLiteral("checkpointing")).toBool())
                QTest::newRow(qPrintable(QStringLiteral("ckpt:") + name)) << name;
        }
    }

    // Activation checkpointing is on in these runs: no fix of any diagnosis may propose it.
    void checkpointingNotProposed()
    {
        QFETCH(QString, name);
        const Case input = test::scenarioCase(family().scenario(name), true);
        const CaseAnalysis analysis = analyzeCase(input);
        QVERIFY(!analysis.diagnoses.empty());
        QStringList proposals;
        for (const auto& diagnosis : analysis.diagnoses) {
            for (const auto& fix : diagnosis.fixes) {
                if (enablesCheckpointing(fix))
                    proposals << QString::fromStdString(fix.title);
            }
        }
        test::expectFailureIfListed(family().expectedFailures);
        QVERIFY2(proposals.isEmpty(), qPrintable(proposals.join(QStringLiteral(" | "))));
    }
};

QTEST_GUILESS_MAIN(TestDiagFamilyE)
#include "tst_diagfamilye.moc"
