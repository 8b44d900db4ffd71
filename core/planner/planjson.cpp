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
    json["experts"] = model.experts;
    json["experts_per_token"] = model.moe() ? Json(model.topK()) : Json(nullptr);
    json["shared_experts"] = model.sharedExperts;
    json["expert_ffn"] = model.moe() ? Json(model.expertFfnOrDefault()) : Json(nullptr);
    json["dense_layers"] = model.denseLayers;
    json["active_parameters"] = model.activeParameters();
    json["kv_lora_rank"] = model.kvLoraRank;
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
    const Parallelism& p = setup.parallel;
    json["tp"] = p.tensor;
    json["sequence_parallel"] = p.sequenceParallel;
    json["cp"] = p.context;
    json["pp"] = p.pipeline;
    json["vpp"] = p.virtualStages > 1 ? Json(p.virtualStages) : Json(nullptr);
    json["microbatches"] = p.microbatches > 0 ? Json(p.microbatches) : Json(nullptr);
    json["ep"] = p.expert;
    json["distributed_optimizer"] = p.distributedOptimizer;
    json["data_parallel"] = p.dataParallel(setup.totalGpus());
    json["inference"] = setup.inference;
    json["kv_dtype"] = setup.inference ? Json(kvDtypeName(setup.kvDtype)) : Json(nullptr);
    json["weight_dtype"] = setup.inference ? Json(weightFormatName(setup.weights)) : Json(nullptr);
    json["gpu_memory_utilization"] = setup.inference ? Json(setup.gpuMemoryUtilization) : Json(nullptr);
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

Json phaseBandsToJson(const std::array<BandBytes, 3>& byPhase)
{
    Json json;
    for (const PeakPhase phase : { PeakPhase::Forward, PeakPhase::Backward, PeakPhase::OptimizerStep })
        json[std::string(peakPhaseName(phase))] = bandsToJson(byPhase[static_cast<size_t>(phase)]);
    return json;
}

Json parallelToJson(const MemoryPlan& plan)
{
    if (plan.stages.empty())
        return nullptr;
    Json stages = Json::array();
    for (const StageMemory& stage : plan.stages) {
        stages.push_back({ { "stage", stage.stage }, { "first_layer", stage.firstLayer }, { "layers", stage.layers },
            { "embedding", stage.embedding }, { "output_layer", stage.outputLayer }, { "parameters", stage.parameters },
            { "in_flight", stage.inFlight }, { "in_flight_layers", stage.inFlightLayers },
            { "per_gpu_bytes", bandsToJson(stage.perGpu) }, { "total_per_gpu_bytes", stage.totalPerGpu },
            { "peak_phase", peakPhaseName(stage.peakPhase) }, { "phase_bands", phaseBandsToJson(stage.byPhase) } });
    }
    Json json;
    json["data_parallel"] = plan.dataParallel;
    json["expert_data_parallel"] = plan.expertDataParallel;
    json["parameters_per_gpu"] = plan.parametersPerGpu;
    json["busiest_stage"] = plan.busiestStage;
    json["stages"] = stages;
    return json;
}

Json estimatorsToJson(const MemoryPlan& plan)
{
    Json json = Json::array();
    for (const EstimatorFigure& figure : plan.estimators) {
        json.push_back({ { "id", figure.id }, { "source", figure.source }, { "scope", figure.scope },
            { "bytes", figure.bytes }, { "planner_bytes", figure.plannerBytes }, { "reason", figure.reason } });
    }
    return json;
}

Json inferenceToJson(const PlanResult& result)
{
    if (!result.shown.serving)
        return nullptr;
    const ServingMemory& serving = result.shown.servingMemory;
    Json json;
    json["weight_bytes"] = serving.weightBytes;
    json["parameters_per_gpu"] = result.shown.parametersPerGpu;
    json["kv_bytes_per_token"] = serving.kvBytesPerToken;
    json["kv_cache_bytes"] = serving.kvCacheBytes;
    json["activation_bytes"] = serving.activationBytes;
    json["max_batched_tokens"] = vllmMaxBatchedTokens;
    json["vllm_command"] = vllmCommand(result.model, result.setup);
    if (result.serving) {
        const ServingFit& fit = *result.serving;
        json["vllm"] = { { "gpu_memory_utilization", fit.gpuMemoryUtilization }, { "budget_bytes", fit.budgetBytes },
            { "kv_budget_bytes", fit.kvBudgetBytes }, { "kv_tokens", fit.kvTokens },
            { "max_sequences", fit.maxSequences }, { "max_context", fit.maxContext },
            { "needed_gpu_memory_utilization", fit.neededUtilization }, { "fits", fit.fits } };
    } else {
        json["vllm"] = nullptr;
    }
    return json;
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
    plan["phase_bands"] = phaseBandsToJson(shown.byPhase);
    plan["parallel"] = parallelToJson(shown);
    plan["estimators"] = estimatorsToJson(shown);
    plan["inference"] = inferenceToJson(result);
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
        const uint64_t capacity = result.card ? usableBytes(result.setup, result.card->capacityBytes) : 0;
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
