#include "core/planner/dsconfig.h"
#include "core/planner/fsdpconfig.h"
#include "core/planner/planresult.h"
#include "core/planner/plantext.h"
#include "core/presentation/planbands.h"
#include "core/report/chartframe.h"
#include "core/report/charts.h"
#include "core/report/reportsections.h"
#include "core/report/svgwriter.h"
#include "core/units.h"

#include <algorithm>
#include <cstdio>
#include <optional>

namespace oomlens::report::sections {

namespace {

using planner::Band;
using planner::BandBytes;

std::string bandClass(Band band)
{
    const std::optional<Category> category = bandCategory(band);
    return category ? categoryClass(*category) : "plan-overhead";
}

struct PhaseBar
{
    std::string label;
    BandBytes bands {};
};

// One stacked bar per phase of a step (the What-if tab's picture), scaled so the card's capacity
// line is always inside the chart: "short by 6 GiB" is seen, not only read.
std::string planBarsSvg(const std::vector<PhaseBar>& bars, std::optional<uint64_t> capacityBytes)
{
    constexpr BarFrame frame = frames::planPhases;
    const double height = frame.rowHeight * static_cast<double>(bars.size()) + 30;
    SvgWriter svg(frame.width, height, "chart plan", "Planned memory per GPU by phase and band");
    uint64_t widest = capacityBytes.value_or(1);
    for (const PhaseBar& bar : bars)
        widest = std::max(widest, planner::bandTotal(bar.bands));
    const double scale = (frame.barRight - frame.barLeft) / static_cast<double>(std::max<uint64_t>(widest, 1));
    for (size_t r = 0; r < bars.size(); ++r) {
        const PhaseBar& bar = bars[r];
        const double y = 8 + frame.rowHeight * static_cast<double>(r);
        svg.text(frame.barLeft - 8, y + 17, bar.label, "tick", SvgWriter::Anchor::End);
        double x = frame.barLeft;
        for (int b = 0; b < planner::bandCount; ++b) {
            const uint64_t bytes = bar.bands[static_cast<size_t>(b)];
            if (bytes == 0)
                continue;
            const auto band = static_cast<Band>(b);
            const double w = scale * static_cast<double>(bytes);
            svg.rect(x, y, w, frame.rowHeight - 10, "band " + bandClass(band),
                std::string(bandLabel(band)) + " in " + bar.label + ": " + formatBytes(bytes));
            x += w;
        }
        svg.text(x + 6, y + 17, formatBytes(planner::bandTotal(bar.bands)), "tick small");
    }
    if (capacityBytes) {
        const double x = frame.barLeft + scale * static_cast<double>(*capacityBytes);
        svg.line(x, 2, x, height - 18, "capacity-line");
        svg.text(x, height - 4, "card " + formatBytes(*capacityBytes), "tick small", SvgWriter::Anchor::Middle);
    }
    return svg.finish();
}

// Serving's weights and KV cache per GPU, and vLLM's budget for the cache where the engine is known.
void servingFigures(HtmlWriter& html, const planner::PlanResult& plan)
{
    const planner::ServingMemory& serving = plan.shown.servingMemory;
    html.element("p",
        "Serving: weights " + formatBytes(serving.weightBytes) + " per GPU, KV cache "
            + formatBytes(serving.kvBytesPerToken) + " per token per GPU (" + formatBytes(serving.kvCacheBytes)
            + " for " + std::to_string(plan.setup.microBatch) + " × " + std::to_string(plan.setup.sequence)
            + " tokens), workspace " + formatBytes(serving.activationBytes) + ".");
    if (!plan.serving)
        return;
    const planner::ServingFit& fit = *plan.serving;
    char share[16];
    std::snprintf(share, sizeof share, "%.2f", fit.gpuMemoryUtilization);
    char needed[16];
    std::snprintf(needed, sizeof needed, "%.2f", fit.neededUtilization);
    html.element("p",
        "vLLM at gpu_memory_utilization " + std::string(share) + ": " + formatBytes(fit.kvBudgetBytes)
            + " for the KV cache, " + groupedNumber(static_cast<int64_t>(fit.kvTokens))
            + " tokens: " + std::to_string(fit.maxSequences) + " sequences of " + std::to_string(plan.setup.sequence)
            + " tokens, or " + std::to_string(fit.maxContext) + " tokens for each of "
            + std::to_string(plan.setup.microBatch) + ". This batch needs gpu_memory_utilization " + needed + ".");
}

// "2 (LM head) — busiest": the stage's number and what sets it apart.
std::string stageName(const planner::StageMemory& stage, int busiestStage)
{
    std::string name = std::to_string(stage.stage);
    if (stage.embedding)
        name += " (embedding)";
    if (stage.outputLayer)
        name += " (LM head)";
    if (stage.stage == busiestStage)
        name += " — busiest";
    return name;
}

void stagesTable(HtmlWriter& html, const planner::MemoryPlan& shown)
{
    html.raw("<h3>Pipeline stages</h3>\n<table class=\"plan-stages\">\n<tr><th>stage</th><th>layers</th>"
             "<th>microbatches in flight</th><th>parameters per GPU</th><th>activations</th><th>total</th></tr>\n");
    for (const planner::StageMemory& stage : shown.stages) {
        html.raw("<tr>");
        html.element("td", stageName(stage, shown.busiestStage));
        html.element(
            "td", std::to_string(stage.firstLayer) + "–" + std::to_string(stage.firstLayer + stage.layers - 1), "num");
        html.element("td", std::to_string(stage.inFlight), "num");
        html.element("td", groupedNumber(static_cast<int64_t>(stage.parameters)), "num");
        html.element("td", formatBytes(stage.perGpu[static_cast<size_t>(Band::Activations)]), "num");
        html.element("td", formatBytes(stage.totalPerGpu), "num");
        html.raw("</tr>\n");
    }
    html.raw("</table>\n");
}

void estimatorsTable(HtmlWriter& html, const planner::MemoryPlan& shown)
{
    html.raw("<h3>Published estimators beside the planner</h3>\n<table class=\"plan-estimators\">\n"
             "<tr><th>estimator</th><th>scope</th><th>its figure</th><th>the planner</th><th>why</th></tr>\n");
    for (const planner::EstimatorFigure& figure : shown.estimators) {
        html.raw("<tr>");
        html.element("td", figure.source);
        html.element("td", figure.scope);
        html.element("td", formatBytes(figure.bytes), "num");
        html.element("td", formatBytes(figure.plannerBytes), "num");
        html.element("td", figure.reason);
        html.raw("</tr>\n");
    }
    html.raw("</table>\n");
}

// Model parallelism's stages, serving's KV cache, and the published estimators beside ours.
void planLayout(HtmlWriter& html, const planner::PlanResult& plan)
{
    const planner::MemoryPlan& shown = plan.shown;
    if (shown.serving)
        servingFigures(html, plan);
    if (shown.stages.size() > 1)
        stagesTable(html, shown);
    if (!shown.estimators.empty())
        estimatorsTable(html, shown);
}

// The model, the set-up, and the verdict against the card where one was named.
void planVerdict(HtmlWriter& html, const planner::PlanResult& plan)
{
    const planner::MemoryPlan& shown = plan.shown;
    html.element("p",
        "Model " + plan.model.name + ", " + groupedNumber(static_cast<int64_t>(shown.parameterCount))
            + " parameters. Set-up: " + planner::describeSetup(plan.setup) + ".");
    if (plan.card) {
        const std::string verdict
            = planner::fitWords(shown.totalPerGpu, planner::usableBytes(plan.setup, plan.card->capacityBytes));
        html.element("p",
            "On " + plan.card->models + " (" + formatBytes(plan.card->capacityBytes) + " per GPU) the peak of "
                + formatBytes(shown.totalPerGpu) + " in the " + std::string(planner::peakPhaseName(shown.peakPhase))
                + " phase: " + verdict + ".",
            plan.fits.value_or(false) ? "verdict fits" : "verdict short");
    }
    if (plan.calibration)
        html.element("p", "Calibrated by measurement: " + plan.calibration->summary + ".");
}

// Training keeps no KV cache: its band appears when serving.
bool listedBand(const planner::MemoryPlan& shown, Band band)
{
    return band != Band::KvCache || shown.serving;
}

// A bar per phase of a step; serving has one, pipeline parallelism a bar per stage at its own peak.
std::vector<PhaseBar> phaseBars(const planner::MemoryPlan& shown)
{
    if (shown.serving)
        return { { "serving", shown.perGpu } };
    if (shown.stages.size() > 1) {
        std::vector<PhaseBar> bars;
        for (const planner::StageMemory& stage : shown.stages)
            bars.push_back({ "stage " + std::to_string(stage.stage), stage.perGpu });
        return bars;
    }
    return { { "forward", shown.byPhase[0] }, { "backward", shown.byPhase[1] },
        { "optimizer step", shown.byPhase[2] } };
}

void phaseFigure(HtmlWriter& html, const planner::PlanResult& plan)
{
    html.raw("<div class=\"figure\">\n");
    html.svg(planBarsSvg(phaseBars(plan.shown), plan.card ? std::optional(plan.card->capacityBytes) : std::nullopt));
    html.raw("\n<div class=\"legend\">");
    for (int b = 0; b < planner::bandCount; ++b) {
        const auto band = static_cast<Band>(b);
        if (!listedBand(plan.shown, band))
            continue;
        html.legendEntry(bandClass(band), bandLabel(band));
        html.raw(" ");
    }
    html.raw("</div>\n</div>\n");
}

// Each band's bytes per GPU at the peak; with a calibration, the formula's and the run's figures too.
void bandsTable(HtmlWriter& html, const planner::PlanResult& plan)
{
    const planner::MemoryPlan& shown = plan.shown;
    html.raw("<table class=\"plan-bands\">\n<tr><th>per GPU at the peak</th><th>");
    html.text(plan.calibration ? "projected" : "bytes");
    html.raw("</th>");
    if (plan.calibration)
        html.raw("<th>formula</th><th>measured</th><th>measured ÷ formula</th>");
    html.raw("</tr>\n");
    for (int b = 0; b < planner::bandCount; ++b) {
        const auto band = static_cast<Band>(b);
        if (!listedBand(shown, band))
            continue;
        html.raw("<tr>");
        html.element("td", bandLabel(band));
        html.element("td", formatBytes(shown.perGpu[static_cast<size_t>(b)]), "num");
        if (plan.calibration) {
            const planner::BandCalibration& calibration = plan.calibration->band(band);
            html.element("td", formatBytes(calibration.formula), "num");
            html.element("td", formatBytes(calibration.measured), "num");
            html.element("td", calibration.formula > 0 ? formatRatio(calibration.ratio) : "–", "num");
        }
        html.raw("</tr>\n");
    }
    html.raw("<tr>");
    html.element("th", "total");
    html.element("td", formatBytes(shown.totalPerGpu), "num");
    html.raw("</tr>\n</table>\n");
}

// The ladder of fixes against the card: each rung's total with the rungs before it, and alone.
void ladderTable(HtmlWriter& html, const planner::PlanResult& plan)
{
    html.raw("<h3>The ladder, cheapest first</h3>\n<table class=\"plan-ladder\">\n<tr><th>rung</th><th>change</th>"
             "<th>with the rungs before</th><th>verdict</th><th>alone</th></tr>\n");
    for (const planner::LadderRung& rung : plan.ladder) {
        html.raw("<tr>");
        html.element("td", rung.id);
        html.raw("<td>");
        html.text(rung.change);
        if (rung.changesExperiment) {
            html.raw(" ");
            html.element("span", "changes the experiment", "badge experiment");
        }
        html.raw("</td>");
        html.element("td", formatBytes(rung.climbedTotal), "num");
        html.element(
            "td", planner::fitWords(rung.climbedTotal, planner::usableBytes(plan.setup, plan.card->capacityBytes)));
        html.element("td", formatBytes(rung.aloneTotal), "num");
        html.raw("</tr>\n");
    }
    html.raw("</table>\n");
}

void cardsTable(HtmlWriter& html, const planner::PlanResult& plan)
{
    html.raw("<h3>Common cards</h3>\n<table class=\"plan-cards\">\n<tr><th>card</th><th>models</th><th>per GPU</th>"
             "<th>verdict</th><th>largest micro-batch</th></tr>\n");
    for (const planner::CardFit& fit : plan.cards) {
        html.raw("<tr>");
        html.element("td", fit.card.name);
        html.element("td", fit.card.models);
        html.element("td", formatBytes(fit.card.capacityBytes), "num");
        html.element("td", fit.fits ? "fits" : "does not fit");
        // 0: not even one sample fits; -1: activations were not modelled (no layer dimensions).
        html.element("td",
            fit.maxMicroBatch > 0        ? std::to_string(fit.maxMicroBatch)
                : fit.maxMicroBatch == 0 ? "none"
                                         : "–",
            "num");
        html.raw("</tr>\n");
    }
    html.raw("</table>\n");
}

void configFiles(HtmlWriter& html, const planner::PlanResult& plan)
{
    html.raw("<h3>ds_config.json for this set-up</h3>\n<pre><code>");
    html.text(planner::deepSpeedConfig(plan.setup).dump(2));
    html.raw("</code></pre>\n");
    // The same set-up for PyTorch FSDP and for accelerate launch, for those not on DeepSpeed.
    html.raw("<h3>FSDP equivalent</h3>\n<pre><code>");
    html.text(planner::fsdpSnippet(plan.model, plan.setup));
    html.raw("</code></pre>\n<h3>accelerate config</h3>\n<pre><code>");
    html.text(planner::accelerateConfig(plan.model, plan.setup));
    html.raw("</code></pre>\n");
}

} // namespace

// The plan of ReportOptions::plan: its verdict against the card, the bands per phase, the ladder
// of fixes, the common cards and the configuration files for the set-up.
void plan(HtmlWriter& html, const ReportContext& context)
{
    if (!context.options.plan)
        return;
    const planner::PlanResult& plan = *context.options.plan;
    html.beginSection("plan", plan.calibration ? "Memory plan, projected from this run" : "Memory plan");
    if (!plan.setupProblem.empty()) {
        html.element("p", "The set-up cannot be planned: " + plan.setupProblem, "note");
        html.endSection();
        return;
    }
    const planner::MemoryPlan& shown = plan.shown;
    planVerdict(html, plan);
    phaseFigure(html, plan);
    bandsTable(html, plan);
    html.element("p", "Host memory per node: " + formatBytes(shown.hostBytes) + ".");
    planLayout(html, plan);
    if (plan.maxMicroBatch >= 0 && !shown.serving)
        html.element("p",
            "Largest micro-batch that fits: " + std::to_string(plan.maxMicroBatch)
                + "; longest sequence at micro-batch " + std::to_string(plan.setup.microBatch) + ": "
                + std::to_string(plan.maxSequence) + ".");
    if (plan.card && !plan.ladder.empty())
        ladderTable(html, plan);
    cardsTable(html, plan);
    if (plan.setup.zeroStage > 0 || plan.setup.totalGpus() > 1)
        configFiles(html, plan);
    if (!shown.notes.empty()) {
        html.raw("<h3>Assumptions</h3>\n");
        html.list(shown.notes);
    }
    html.endSection();
}

} // namespace oomlens::report::sections
