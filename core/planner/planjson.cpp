#include "core/planner/planjson.h"

#include "core/planner/dsconfig.h"
#include "core/planner/fsdpconfig.h"

namespace oomlens::planner {

namespace {

using Json = nlohmann::ordered_json;

Json bandsToJson(const BandBytes& bands)
{
    Json json = Json::object();
    for (int i = 0; i < bandCount; ++i)
        json[std::string(bandName(static_cast<Band>(i)))] = bands[static_cast<size_t>(i)];
    return json;
}

Json modelToJson(const ModelSpec& model, const MemoryPlan& plan)
{
    Json json;
    json["name"] = model.name;
    json["parameters"] = plan.parameterCount;
    json["trainable_parameters"] = plan.trainableParameters;
    json["layers"] = model.layers;
    json["hidden"] = model.hidden;
    json["heads"] = model.heads;
    json["kv_heads"] = model.kvHeadsOrHeads();
    json["vocab"] = model.vocab;
    json["ffn"] = model.hasDimensions() ? model.ffnOrDefault() : 0;
    json["tied_embeddings"] = model.tiedEmbeddings;
    json["largest_layer_parameters"] = plan.largestLayerParameters;
    return json;
}

Json setupToJson(const TrainingSetup& setup)
{
    Json json;
    json["micro_batch"] = setup.microBatch;
    json["seq"] = setup.sequence;
    json["precision"] = precisionName(setup.precision);
    json["optimizer"] = optimizerName(setup.optimizer);
    json["gradient_accumulation"] = setup.gradientAccumulation;
    json["checkpointing"] = checkpointingText(setup);
    json["checkpoint_every"]
        = setup.checkpointing == Checkpointing::EveryK ? Json(setup.checkpointEvery) : Json(nullptr);
    json["attention"] = attentionName(setup.attention);
    json["gpus_per_node"] = setup.gpusPerNode;
    json["nodes"] = setup.nodes;
    json["zero"] = setup.zeroStage;
    json["offload"] = offloadName(setup.offload);
    json["lora_rank"] = setup.loraRank;
    json["quantized_base"] = setup.quantizedBase;
    json["lora_targets"] = loraTargetsName(setup.loraTargets);
    return json;
}

Json calibrationToJson(const PlanCalibration& calibration)
{
    Json bands = Json::object();
    for (int i = 0; i < bandCount; ++i) {
        const BandCalibration& band = calibration.bands[static_cast<size_t>(i)];
        Json entry;
        entry["formula_bytes"] = band.formula;
        entry["measured_bytes"] = band.measured;
        entry["ratio"] = band.formula > 0 ? Json(band.ratio) : Json(nullptr);
        bands[std::string(bandName(static_cast<Band>(i)))] = entry;
    }
    Json json;
    json["measured_peak_allocated_bytes"] = calibration.measuredPeakBytes;
    json["measured_peak_reserved_bytes"] = calibration.measuredReservedBytes;
    json["bands"] = bands;
    json["summary"] = calibration.summary;
    return json;
}

Json intOrNull(int value)
{
    return value >= 0 ? Json(value) : Json(nullptr);
}

} // namespace

nlohmann::ordered_json planToJson(const PlanResult& result)
{
    Json plan;
    const MemoryPlan& shown = result.shown;
    plan["per_gpu_bytes"] = bandsToJson(shown.perGpu);
    plan["total_per_gpu_bytes"] = shown.totalPerGpu;
    plan["host_bytes"] = shown.hostBytes;
    plan["peak_phase"] = peakPhaseName(shown.peakPhase);
    plan["fits"] = result.fits ? Json(*result.fits) : Json(nullptr);
    plan["max_micro_batch"] = result.card ? intOrNull(result.maxMicroBatch) : Json(nullptr);
    plan["calibration"] = result.calibration ? calibrationToJson(*result.calibration) : Json(nullptr);
    plan["ds_config"] = deepSpeedConfig(result.setup);
    plan["fsdp_snippet"] = fsdpSnippet(result.model, result.setup);
    plan["accelerate_config"] = accelerateConfig(result.model, result.setup);
    plan["pageable_bytes"] = shown.pageableBytes;
    plan["fits_with_paging"] = result.fitsWithPaging ? Json(*result.fitsWithPaging) : Json(nullptr);

    plan["model"] = modelToJson(result.model, shown);
    plan["setup"] = setupToJson(result.setup);
    plan["formula_per_gpu_bytes"] = bandsToJson(result.formula.perGpu);
    plan["phases_bytes"]
        = { { "forward", bandTotal(result.formula.byPhase[0]) }, { "backward", bandTotal(result.formula.byPhase[1]) },
              { "optimizer_step", bandTotal(result.formula.byPhase[2]) } };
    plan["activations_modelled"] = shown.activationsModelled;
    if (result.card) {
        plan["card"] = { { "name", result.card->name }, { "models", result.card->models },
            { "capacity_bytes", result.card->capacityBytes } };
        plan["max_seq"] = intOrNull(result.maxSequence);
    } else {
        plan["card"] = nullptr;
        plan["max_seq"] = nullptr;
    }
    Json cards = Json::array();
    for (const CardFit& fit : result.cards) {
        cards.push_back(
            { { "name", fit.card.name }, { "models", fit.card.models }, { "capacity_bytes", fit.card.capacityBytes },
                { "fits", fit.fits }, { "max_micro_batch", intOrNull(fit.maxMicroBatch) } });
    }
    plan["cards"] = cards;
    Json ladder = Json::array();
    for (const LadderRung& rung : result.ladder) {
        const uint64_t capacity = result.card ? result.card->capacityBytes : 0;
        ladder.push_back(
            { { "id", rung.id }, { "change", rung.change }, { "alone_total_per_gpu_bytes", rung.aloneTotal },
                { "alone_fits", rung.aloneTotal <= capacity }, { "climbed_total_per_gpu_bytes", rung.climbedTotal },
                { "climbed_fits", rung.climbedTotal <= capacity }, { "changes_experiment", rung.changesExperiment } });
    }
    plan["ladder"] = ladder;
    plan["notes"] = shown.notes;

    Json document;
    document["tool"] = "oomlens";
    document["plan"] = plan;
    return document;
}

} // namespace oomlens::planner
