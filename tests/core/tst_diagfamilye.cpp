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
#include "common/scenariofamilysuite.h"
#include "common/testutil.h"

#include <QTest>

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

} // namespace

class TestDiagFamilyE : public test::ScenarioFamilySuite
{
    Q_OBJECT
public:
    TestDiagFamilyE()
        : ScenarioFamilySuite(family(), QStringLiteral(OOMLENS_SOURCE_DIR "/tests/tools/familye/generate.py"))
    { }

private Q_SLOTS:
    void everyClassIsCovered()
    {
        // The yardstick itself: 12 to 16 scenarios, every wave-3 class at least twice, at least six
        // controls (a classic cause inside a distributed or engine recipe), every label complete.
        test::FamilyCensus census;
        test::countLabels(family(), census);
        if (QTest::currentTestFailed())
            return;
        QVERIFY(census.names.size() >= 12 && census.names.size() <= 16);
        for (const char* id : { "pending_frees", "communication_buffers", "graph_capture", "colocated_engine" })
            QVERIFY2(census.perCase[QLatin1String(id)] >= 2, id);
        QVERIFY(census.controls >= 6);
    }
};

QTEST_GUILESS_MAIN(TestDiagFamilyE)
#include "tst_diagfamilye.moc"
