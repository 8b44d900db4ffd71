#include "core/serving/servingview.h"

#include "core/planner/kvcache.h"
#include "core/planner/servingplan.h"
#include "core/units.h"

#include <array>
#include <cmath>

namespace oomlens {

namespace {

struct RowLabel
{
    std::string_view key;
    std::string_view label;
};

// The engine's own split, in the order it accounts for the card.
constexpr std::array<RowLabel, 9> rowLabels { {
    { "budget", "The engine's share (utilization x card)" },
    { "weights", "Model weights" },
    { "activation_peak", "Activation peak of the profile run" },
    { "non_torch", "Memory outside PyTorch (NCCL, CUDA context)" },
    { "non_kv_total", "Everything but the KV cache" },
    { "graphs", "CUDA graphs" },
    { "kv_cache", "KV cache" },
    { "free_after_weights", "Free on the card after the weights" },
    { "left", "Left on the card" },
} };

void addRow(ServingView& view, std::string_view key, std::string_view label, int64_t bytes, std::string source)
{
    view.rows.push_back({ std::string(key), std::string(label), bytes, std::move(source) });
}

void findCardTotal(const Case& input, ServingView& view)
{
    if (const ServingFigure* total = view.run.figure("card_total")) {
        view.cardTotalBytes = static_cast<uint64_t>(std::max<int64_t>(total->bytes, 0));
        view.cardTotalSource = total->source.cite();
        return;
    }
    for (auto it = input.text.oomMessages.rbegin(); it != input.text.oomMessages.rend(); ++it) {
        if (it->totalBytes) {
            view.cardTotalBytes = it->totalBytes;
            view.cardTotalSource = "the OOM message at line " + std::to_string(it->sourceLine);
            return;
        }
    }
}

void addRows(ServingView& view)
{
    if (view.cardTotalBytes)
        addRow(view, "card_total", "The card", static_cast<int64_t>(*view.cardTotalBytes), view.cardTotalSource);
    const auto utilization = view.run.settingValue("gpu_memory_utilization");
    for (const RowLabel& label : rowLabels) {
        if (const ServingFigure* figure = view.run.figure(label.key))
            addRow(view, label.key, label.label, figure->bytes, figure->source.cite());
        else if (label.key == "budget" && utilization && view.cardTotalBytes)
            addRow(view, "budget", label.label, std::llround(*utilization * static_cast<double>(*view.cardTotalBytes)),
                "derived: gpu_memory_utilization " + formatRatio(*utilization, 2) + " x the card");
    }
    // What the engine's share leaves to everything else on the card: other processes, the
    // sampler's and a step's memory beyond what the profile run saw.
    const ServingBudgetRow* share = view.row("budget");
    if (share && view.cardTotalBytes && !view.row("left"))
        addRow(view, "left", "Left outside the engine's share",
            static_cast<int64_t>(*view.cardTotalBytes) - share->bytes, "derived: the card - the engine's share");
}

// The log's own figures first (the cache it allocated over the tokens it holds), else the
// planner's arithmetic from a config.json given beside the log.
void findKvBytesPerToken(const Case& input, ServingView& view)
{
    const ServingFigure* cache = view.run.figure("kv_cache");
    const ServingSetting* tokens = view.run.setting("kv_cache_tokens");
    if (cache && tokens && cache->bytes > 0 && tokens->value > 0) {
        view.kvBytesPerToken = static_cast<double>(cache->bytes) / tokens->value;
        view.kvBytesPerTokenSource = "the KV cache's size over its tokens (lines " + std::to_string(cache->source.line)
            + " and " + std::to_string(tokens->source.line) + ")";
        return;
    }
    // vLLM V1's refusal: the cache one request of max_model_len needs, over its tokens.
    const ServingFigure* needed = view.run.figure("kv_cache_needed");
    const ServingSetting* length = view.run.setting("max_model_len");
    if (needed && length && needed->bytes > 0 && length->value > 0) {
        view.kvBytesPerToken = static_cast<double>(needed->bytes) / length->value;
        view.kvBytesPerTokenSource = "the KV cache one request of max_model_len needs, over its tokens (lines "
            + std::to_string(needed->source.line) + " and " + std::to_string(length->source.line) + ")";
        return;
    }
    for (const planner::ModelSpec& model : input.models) {
        if (!model.hasDimensions())
            continue;
        // The serving planner's shape: a 16-bit cache, the engine's tensor parallelism.
        planner::TrainingSetup setup;
        setup.parallel.tensor
            = std::max(1, static_cast<int>(view.run.settingValue("tensor_parallel_size").value_or(1)));
        const planner::KvCacheShape shape = planner::servingKvShape(model, setup);
        if (const uint64_t bytes = planner::kvBytesPerToken(shape)) {
            view.kvBytesPerToken = static_cast<double>(bytes);
            view.kvBytesPerTokenSource = (model.name.empty() ? std::string("the model") : model.name)
                + "'s config.json (a 16-bit cache, tensor parallel " + std::to_string(shape.tensorParallel) + ")";
            return;
        }
    }
}

} // namespace

std::string signedBytesText(int64_t bytes)
{
    const uint64_t magnitude = bytes < 0 ? static_cast<uint64_t>(-(bytes + 1)) + 1 : static_cast<uint64_t>(bytes);
    return (bytes < 0 ? "-" : "") + formatBytes(magnitude);
}

const ServingBudgetRow* ServingView::row(std::string_view key) const
{
    for (const ServingBudgetRow& candidate : rows) {
        if (candidate.key == key)
            return &candidate;
    }
    return nullptr;
}

std::string ServingView::engineText() const
{
    std::string text(servingEngineLabel(run.engine));
    if (!run.version.empty())
        text += " " + run.version;
    if (!run.generation.empty())
        text += " (" + run.generation + " engine)";
    return text;
}

std::optional<ServingView> servingView(const Case& input)
{
    if (!input.text.serving)
        return std::nullopt;
    ServingView view;
    view.run = *input.text.serving;
    findCardTotal(input, view);
    addRows(view);
    findKvBytesPerToken(input, view);
    return view;
}

} // namespace oomlens
