#include "core/planner/plantext.h"

#include "core/planner/fsdpconfig.h"
#include "core/strings.h"
#include "core/units.h"

#include <algorithm>
#include <cstdio>
#include <sstream>

namespace oomlens::planner {

namespace {

std::string bandLabel(Band band)
{
    std::string name(bandName(band));
    for (char& c : name) {
        if (c == '_')
            c = ' ';
    }
    return name;
}

std::string millions(uint64_t count)
{
    char buffer[32];
    if (count >= 1000000000)
        std::snprintf(buffer, sizeof buffer, "%.2fB", static_cast<double>(count) / 1e9);
    else
        std::snprintf(buffer, sizeof buffer, "%.1fM", static_cast<double>(count) / 1e6);
    return buffer;
}

std::string percent(double fraction)
{
    char buffer[32];
    std::snprintf(buffer, sizeof buffer, "%.2f", fraction);
    return buffer;
}

void writeStages(std::ostringstream& out, const MemoryPlan& plan)
{
    out << "\nLayout: " << plan.dataParallel << "-way data parallel";
    if (plan.expertDataParallel != plan.dataParallel)
        out << ", experts' state over " << plan.expertDataParallel;
    out << "; " << millions(plan.parametersPerGpu) << " parameters on the busiest GPU.\n";
    if (plan.stages.size() < 2)
        return;
    out << padRight("stage", 7) << padLeft("layers", 8) << padLeft("in flight", 11) << padLeft("params/GPU", 12)
        << padLeft("activations", 13) << padLeft("total", 12) << '\n';
    for (const StageMemory& stage : plan.stages) {
        std::string name = std::to_string(stage.stage);
        if (stage.embedding)
            name += "e";
        if (stage.outputLayer)
            name += "h";
        out << padRight(name + (stage.stage == plan.busiestStage ? " *" : ""), 7)
            << padLeft(std::to_string(stage.firstLayer) + "-" + std::to_string(stage.firstLayer + stage.layers - 1), 8)
            << padLeft(std::to_string(stage.inFlight), 11) << padLeft(millions(stage.parameters), 12)
            << padLeft(formatBytes(stage.perGpu[static_cast<size_t>(Band::Activations)]), 13)
            << padLeft(formatBytes(stage.totalPerGpu), 12) << '\n';
    }
    out << "(e: the embedding, h: the LM head and the loss; *: the busiest, whose bands are above)\n";
}

void writeEstimators(std::ostringstream& out, const MemoryPlan& plan)
{
    if (plan.estimators.empty())
        return;
    out << "\nPublished estimators beside the planner:\n";
    for (const EstimatorFigure& figure : plan.estimators) {
        out << "  " << figure.source << ": " << formatBytes(figure.bytes) << " of " << figure.scope
            << " (the planner: " << formatBytes(figure.plannerBytes) << "). " << figure.reason << '\n';
    }
}

void writeServing(std::ostringstream& out, const PlanResult& result)
{
    const ServingMemory& serving = result.shown.servingMemory;
    const TrainingSetup& setup = result.setup;
    out << "Serving: weights " << formatBytes(serving.weightBytes) << " per GPU ("
        << millions(result.shown.parametersPerGpu) << " parameters at " << servingBytesPerWeight(setup)
        << " bytes each in the blocks"
        << "); KV cache " << formatBytes(serving.kvBytesPerToken) << " per token per GPU ("
        << kvDtypeName(setup.kvDtype) << "), " << formatBytes(serving.kvCacheBytes) << " for " << setup.microBatch
        << " x " << setup.sequence << " tokens; workspace " << formatBytes(serving.activationBytes) << ".\n";
    out << "As vLLM: " << vllmCommand(result.model, setup);
    if (!result.serving || !result.card)
        return;
    const ServingFit& fit = *result.serving;
    out << "vLLM on " << result.card->name << " at --gpu-memory-utilization " << percent(fit.gpuMemoryUtilization)
        << ": budget " << formatBytes(fit.budgetBytes) << ", " << formatBytes(fit.kvBudgetBytes)
        << " left for the KV cache = " << fit.kvTokens << " tokens (vLLM's \"GPU KV cache size\"); " << fit.maxSequences
        << " concurrent sequences of " << setup.sequence << " tokens, or " << fit.maxContext << " tokens each for "
        << setup.microBatch << " sequences. This batch needs --gpu-memory-utilization "
        << percent(fit.neededUtilization) << (fit.neededUtilization > 1 ? " (more than the card)" : "") << ".\n";
}

void writeHeading(std::ostringstream& out, const PlanResult& result)
{
    const MemoryPlan& shown = result.shown;
    out << "Model: " << result.model.name << ", " << millions(shown.parameterCount) << " parameters";
    if (result.setup.loraRank > 0)
        out << " (" << millions(shown.trainableParameters) << " trainable)";
    if (result.model.moe())
        out << ", " << result.model.experts << " experts (top-" << result.model.topK() << ", "
            << millions(result.model.activeParameters()) << " active per token)";
    out << "\nSet-up: " << describeSetup(result.setup) << "\n\n";
}

// Each band per GPU at the peak; with a calibration, the formula's and the run's figures beside.
void writeBands(std::ostringstream& out, const PlanResult& result)
{
    const MemoryPlan& shown = result.shown;
    const bool calibrated = result.calibration.has_value();
    out << padRight("per GPU", 18) << padLeft(calibrated ? "projected" : "bytes", 12);
    if (calibrated)
        out << padLeft("formula", 12) << padLeft("measured", 12) << padLeft("ratio", 8);
    out << '\n';
    for (int i = 0; i < bandCount; ++i) {
        const Band band = static_cast<Band>(i);
        if (band == Band::KvCache && !shown.serving)
            continue; // training keeps no KV cache
        out << padRight(bandLabel(band), 18) << padLeft(formatBytes(shown.perGpu[static_cast<size_t>(i)]), 12);
        if (calibrated) {
            const BandCalibration& c = result.calibration->band(band);
            out << padLeft(formatBytes(c.formula), 12) << padLeft(formatBytes(c.measured), 12)
                << padLeft(c.formula > 0 ? formatRatio(c.ratio) : "-", 8);
        }
        out << '\n';
    }
    out << padRight("total", 18) << padLeft(formatBytes(shown.totalPerGpu), 12) << "\n\n";
}

void writeHostMemory(std::ostringstream& out, const PlanResult& result)
{
    const MemoryPlan& shown = result.shown;
    out << "Host memory per node: " << formatBytes(shown.hostBytes) << '\n';
    if (shown.pageableBytes > 0)
        out << "Paged optimizer state: " << formatBytes(shown.pageableBytes)
            << " of the optimizer state can move to host memory under pressure (counted on the GPU above, and in "
               "the host figure)\n";
    if (result.calibration)
        out << "Calibration: " << result.calibration->summary
            << "; what-ifs below are projected from the measurement.\n";
}

void writeLadder(std::ostringstream& out, const std::vector<LadderRung>& ladder, uint64_t usable)
{
    size_t idWidth = 15;
    for (const LadderRung& rung : ladder)
        idWidth = std::max(idWidth, rung.id.size() + 1);
    out << "\nThe ladder, cheapest first (each rung on top of the ones before; alone in brackets):\n";
    for (const LadderRung& rung : ladder) {
        out << "  " << padRight(rung.id, idWidth) << padRight(rung.change, 48)
            << padLeft(formatBytes(rung.climbedTotal), 11) << "  " << fitWords(rung.climbedTotal, usable) << "  [alone "
            << formatBytes(rung.aloneTotal) << "]" << (rung.changesExperiment ? "  changes the experiment" : "")
            << '\n';
    }
    const LadderRung& last = ladder.back();
    if (last.climbedTotal <= usable)
        out << "It fits from rung '" << last.id << "' on.\n";
    else
        out << "Even the whole ladder does not fit one card: more GPUs (--gpus, --nodes) or a larger card.\n";
}

// The verdict on the named card, what fits on it, and the ladder of fixes when it does not.
void writeCard(std::ostringstream& out, const PlanResult& result, const GpuCard& card)
{
    const MemoryPlan& shown = result.shown;
    out << "\nOn " << card.name << " (" << card.models << ", " << formatBytes(card.capacityBytes) << ")";
    // Serving is held to vLLM's share of the card, the ladder too.
    const uint64_t usable = usableBytes(result.setup, card.capacityBytes);
    if (shown.serving)
        out << " within vLLM's " << percent(result.setup.gpuMemoryUtilization) << " of it";
    out << ": " << fitWords(shown.totalPerGpu, usable) << ".\n";
    if (result.fitsWithPaging && !*result.fits)
        out << (*result.fitsWithPaging ? "With the paged optimizer state moved to host memory it runs, slower: "
                                       : "Even with the paged optimizer state on the host: ")
            << fitWords(shown.totalPerGpu - shown.pageableBytes, card.capacityBytes) << ".\n";
    if (result.maxMicroBatch >= 0 && !shown.serving)
        out << "Largest micro-batch that fits: " << result.maxMicroBatch << "; longest sequence at micro-batch "
            << result.setup.microBatch << ": " << result.maxSequence << ".\n";
    if (!result.ladder.empty())
        writeLadder(out, result.ladder, usable);
}

void writeCommonCards(std::ostringstream& out, const PlanResult& result)
{
    out << "\nCommon cards:\n";
    for (const CardFit& fit : result.cards) {
        out << "  " << padRight(fit.card.name, 7) << padRight(fit.card.models, 28)
            << padLeft(formatBytes(fit.card.capacityBytes), 11) << "  "
            << padRight(fit.fits ? "fits" : "does not fit", 14);
        if (fit.maxMicroBatch > 0)
            out << (result.shown.serving ? "sequences up to " : "micro-batch up to ") << fit.maxMicroBatch;
        out << '\n';
    }
}

} // namespace

std::string fitWords(uint64_t totalBytes, uint64_t capacityBytes)
{
    if (totalBytes <= capacityBytes)
        return "fits with " + formatBytes(capacityBytes - totalBytes) + " to spare";
    return "short by " + formatBytes(totalBytes - capacityBytes);
}

std::string planToText(const PlanResult& result)
{
    std::ostringstream out;
    const MemoryPlan& shown = result.shown;
    writeHeading(out, result);
    writeBands(out, result);
    if (shown.serving) {
        writeServing(out, result);
    } else {
        out << "Peak phase: " << peakPhaseName(shown.peakPhase) << " (forward "
            << formatBytes(bandTotal(shown.byPhase[0])) << ", backward " << formatBytes(bandTotal(shown.byPhase[1]))
            << ", optimizer step " << formatBytes(bandTotal(shown.byPhase[2])) << ", formula)\n";
    }
    if (!shown.stages.empty())
        writeStages(out, shown);
    writeEstimators(out, shown);
    writeHostMemory(out, result);
    if (result.card)
        writeCard(out, result, *result.card);
    writeCommonCards(out, result);
    if (!shown.serving && !result.setup.parallel.any()) {
        out << "\nFSDP equivalent (beside the ds_config.json of --json):\n" << fsdpSnippet(result.model, result.setup);
        out << "\naccelerate config:\n" << accelerateConfig(result.model, result.setup);
    }
    for (const std::string& note : shown.notes)
        out << "\nNote: " << note;
    if (!shown.notes.empty())
        out << '\n';
    return out.str();
}

} // namespace oomlens::planner
