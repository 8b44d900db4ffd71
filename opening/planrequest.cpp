#include "opening/planrequest.h"

#include "core/numbertext.h"
#include "core/planner/gpucards.h"
#include "core/planner/kvcache.h"
#include "core/planner/memoryplan.h"
#include "opening/inputrequests.h"
#include "opening/modelsource.h"
#include "opening/opening.h"

#include <algorithm>
#include <cctype>

namespace oomlens {

namespace {

using namespace oomlens::planner;

struct FieldSpelling
{
    PlanField field;
    std::string_view name;
    bool isSwitch;
};

constexpr FieldSpelling spellings[] = { { PlanField::Model, "model", false }, { PlanField::Params, "params", false },
    { PlanField::Layers, "layers", false }, { PlanField::Hidden, "hidden", false },
    { PlanField::Heads, "heads", false }, { PlanField::KvHeads, "kv-heads", false },
    { PlanField::Vocab, "vocab", false }, { PlanField::Ffn, "ffn", false }, { PlanField::Experts, "experts", false },
    { PlanField::ExpertsPerToken, "experts-per-token", false }, { PlanField::ExpertFfn, "expert-ffn", false },
    { PlanField::SharedExperts, "shared-experts", false }, { PlanField::Batch, "batch", false },
    { PlanField::Seq, "seq", false }, { PlanField::Precision, "precision", false },
    { PlanField::Optimizer, "optimizer", false }, { PlanField::Accumulation, "accumulation", false },
    { PlanField::Checkpointing, "checkpointing", false }, { PlanField::Attention, "attention", false },
    { PlanField::Gpus, "gpus", false }, { PlanField::Nodes, "nodes", false }, { PlanField::Zero, "zero", false },
    { PlanField::Offload, "offload", false }, { PlanField::LoraRank, "lora-rank", false },
    { PlanField::Qlora, "qlora", true }, { PlanField::LoraTargets, "lora-targets", false },
    { PlanField::Tp, "tp", false }, { PlanField::SequenceParallel, "sequence-parallel", true },
    { PlanField::Cp, "cp", false }, { PlanField::Pp, "pp", false }, { PlanField::Vpp, "vpp", false },
    { PlanField::Microbatches, "microbatches", false }, { PlanField::Ep, "ep", false },
    { PlanField::DistributedOptimizer, "distributed-optimizer", true }, { PlanField::Inference, "inference", true },
    { PlanField::KvDtype, "kv-dtype", false }, { PlanField::WeightDtype, "weight-dtype", false },
    { PlanField::GpuMemoryUtilization, "gpu-memory-utilization", false }, { PlanField::Card, "card", false },
    { PlanField::Snapshot, "snapshot", false }, { PlanField::Device, "device", false } };

const FieldSpelling& spellingOf(PlanField field)
{
    return *std::find_if(
        std::begin(spellings), std::end(spellings), [field](const auto& s) { return s.field == field; });
}

// The request read field by field; the first problem found stops the reading.
class Reader
{
public:
    Reader(const PlanRequest& request, const PlanWording& wording)
        : m_request(request)
        , m_wording(wording)
    { }

    bool count(PlanField field, uint64_t& into, uint64_t minimum = 1);
    bool integer(PlanField field, int& into, int minimum = 1);
    template <typename Enum, typename FromName> bool choice(PlanField field, Enum& into, FromName fromName);
    bool fail(std::string problem)
    {
        m_problem = std::move(problem);
        return false;
    }
    // A text of the planner's own, which names settings by their flags ("--zero 1, 2 or 3"), in
    // the surface's words.
    std::string inWording(std::string text) const;
    std::string name(PlanField field) const { return m_wording.name(field); }
    const PlanRequest& request() const { return m_request; }
    std::optional<std::string> problem() const { return m_problem; }

private:
    const PlanRequest& m_request;
    const PlanWording& m_wording;
    std::optional<std::string> m_problem;
};

bool Reader::count(PlanField field, uint64_t& into, uint64_t minimum)
{
    if (!m_request.has(field))
        return true;
    const std::string text = m_request.value(field);
    const std::optional<double> value = doubleFromText(text);
    // Written so that "nan" fails too: no comparison with it holds.
    if (!value || !(*value >= static_cast<double>(minimum)) || !(*value <= 1e15))
        return fail(name(field) + " needs a number, got '" + text + "'");
    into = static_cast<uint64_t>(*value);
    return true;
}

bool Reader::integer(PlanField field, int& into, int minimum)
{
    uint64_t value = static_cast<uint64_t>(into);
    if (!count(field, value, static_cast<uint64_t>(minimum)))
        return false;
    if (value > (1u << 30))
        return fail(name(field) + " is too large");
    into = static_cast<int>(value);
    return true;
}

template <typename Enum, typename FromName> bool Reader::choice(PlanField field, Enum& into, FromName fromName)
{
    if (!m_request.has(field))
        return true;
    const std::string text = m_request.value(field);
    const auto value = fromName(text);
    if (!value)
        return fail(name(field) + " does not know '" + text + "' (" + m_wording.help + ")");
    into = *value;
    return true;
}

std::string Reader::inWording(std::string text) const
{
    // Longest first: --experts-per-token before --experts.
    std::vector<FieldSpelling> byLength(std::begin(spellings), std::end(spellings));
    std::sort(
        byLength.begin(), byLength.end(), [](const auto& a, const auto& b) { return a.name.size() > b.name.size(); });
    for (const FieldSpelling& spelling : byLength) {
        const std::string flag = "--" + std::string(spelling.name);
        const std::string named = name(spelling.field);
        for (size_t at = text.find(flag); at != std::string::npos; at = text.find(flag, at + 1)) {
            const size_t end = at + flag.size();
            const bool wholeWord
                = end == text.size() || !(std::isalnum(static_cast<unsigned char>(text[end])) || text[end] == '-');
            if (wholeWord)
                text.replace(at, flag.size(), named);
        }
    }
    return text;
}

// The model's dimensions given beside or instead of a model.
bool readDimensions(Reader& reader, ModelSpec& model)
{
    uint64_t parameters = model.parameters;
    if (!reader.count(PlanField::Params, parameters))
        return false;
    model.parameters = parameters;
    for (const auto& [field, into] : { std::pair { PlanField::Layers, &model.layers },
             std::pair { PlanField::Hidden, &model.hidden }, std::pair { PlanField::Heads, &model.heads },
             std::pair { PlanField::KvHeads, &model.kvHeads }, std::pair { PlanField::Vocab, &model.vocab },
             std::pair { PlanField::Ffn, &model.ffn }, std::pair { PlanField::Experts, &model.experts },
             std::pair { PlanField::ExpertsPerToken, &model.expertsPerToken },
             std::pair { PlanField::ExpertFfn, &model.expertFfn },
             std::pair { PlanField::SharedExperts, &model.sharedExperts } }) {
        if (!reader.integer(field, *into))
            return false;
    }
    if (const std::string problem = model.sizeProblem(); !problem.empty())
        return reader.fail("the model: " + reader.inWording(problem));
    if (model.totalParameters() == 0)
        return reader.fail(reader.name(PlanField::Params) + " is needed unless " + reader.name(PlanField::Layers) + ", "
            + reader.name(PlanField::Hidden) + ", " + reader.name(PlanField::Heads) + " and "
            + reader.name(PlanField::Vocab) + " give the whole model");
    return true;
}

// The model from a preset or a config.json, or from its dimensions. False with a problem or a
// failure to read the file.
bool readModel(Reader& reader, ModelSpec& model, std::vector<InputFailure>& failures)
{
    const PlanRequest& request = reader.request();
    if (request.has(PlanField::Model)) {
        ModelRead read = readModelSource(request.value(PlanField::Model));
        if (!read.model) {
            failures.push_back(*read.failure);
            return false;
        }
        model = std::move(*read.model);
    } else if (!request.has(PlanField::Params) && !request.has(PlanField::Layers)) {
        return reader.fail("give a model: " + reader.name(PlanField::Model) + " FILE|PRESET or "
            + reader.name(PlanField::Params) + " N");
    } else {
        model.name = "custom";
    }
    return readDimensions(reader, model);
}

bool readTraining(Reader& reader, TrainingSetup& setup)
{
    Parallelism& parallel = setup.parallel;
    return reader.integer(PlanField::Batch, setup.microBatch) && reader.integer(PlanField::Seq, setup.sequence)
        && reader.integer(PlanField::Accumulation, setup.gradientAccumulation)
        && reader.integer(PlanField::Gpus, setup.gpusPerNode) && reader.integer(PlanField::Nodes, setup.nodes)
        && reader.integer(PlanField::Zero, setup.zeroStage, 0) && reader.integer(PlanField::LoraRank, setup.loraRank, 0)
        && reader.choice(PlanField::Precision, setup.precision, precisionFromName)
        && reader.choice(PlanField::Optimizer, setup.optimizer, optimizerFromName)
        && reader.choice(PlanField::Attention, setup.attention, attentionFromName)
        && reader.choice(PlanField::Offload, setup.offload, offloadFromName)
        && reader.choice(PlanField::LoraTargets, setup.loraTargets, loraTargetsFromName)
        && reader.integer(PlanField::Tp, parallel.tensor) && reader.integer(PlanField::Cp, parallel.context)
        && reader.integer(PlanField::Pp, parallel.pipeline) && reader.integer(PlanField::Vpp, parallel.virtualStages)
        && reader.integer(PlanField::Microbatches, parallel.microbatches)
        && reader.integer(PlanField::Ep, parallel.expert);
}

bool readServing(Reader& reader, TrainingSetup& setup)
{
    const PlanRequest& request = reader.request();
    if (!setup.inference
        && (request.has(PlanField::KvDtype) || request.has(PlanField::WeightDtype)
            || request.has(PlanField::GpuMemoryUtilization)))
        return reader.fail(reader.name(PlanField::KvDtype) + ", " + reader.name(PlanField::WeightDtype) + " and "
            + reader.name(PlanField::GpuMemoryUtilization) + " plan serving: add " + reader.name(PlanField::Inference));
    if (!reader.choice(PlanField::KvDtype, setup.kvDtype, kvDtypeFromName)
        || !reader.choice(PlanField::WeightDtype, setup.weights, weightFormatFromName))
        return false;
    if (request.has(PlanField::GpuMemoryUtilization)) {
        const std::optional<double> share = doubleFromText(request.value(PlanField::GpuMemoryUtilization));
        if (!share)
            return reader.fail(reader.name(PlanField::GpuMemoryUtilization) + " needs a number such as 0.9");
        setup.gpuMemoryUtilization = *share;
    }
    return true;
}

bool readSetup(Reader& reader, TrainingSetup& setup)
{
    const PlanRequest& request = reader.request();
    if (!readTraining(reader, setup))
        return false;
    setup.parallel.sequenceParallel = request.switches.count(PlanField::SequenceParallel) > 0;
    setup.parallel.distributedOptimizer = request.switches.count(PlanField::DistributedOptimizer) > 0;
    setup.inference = request.switches.count(PlanField::Inference) > 0;
    if (!readServing(reader, setup))
        return false;
    if (request.has(PlanField::Checkpointing) && !readCheckpointing(request.value(PlanField::Checkpointing), setup))
        return reader.fail(reader.name(PlanField::Checkpointing) + " does not know '"
            + request.value(PlanField::Checkpointing) + "' (none, full, selective or every:K)");
    setup.quantizedBase = request.switches.count(PlanField::Qlora) > 0;
    if (const std::string problem = setupProblem(setup); !problem.empty())
        return reader.fail(reader.inWording(problem));
    return true;
}

bool readCard(Reader& reader, std::optional<GpuCard>& card)
{
    const PlanRequest& request = reader.request();
    if (!request.has(PlanField::Card))
        return true;
    card = cardFromText(request.value(PlanField::Card));
    if (!card)
        return reader.fail(reader.name(PlanField::Card) + " does not know '" + request.value(PlanField::Card)
            + "' (16GB, 24GB, 40GB, 48GB, 80GB, 94GB, 141GB, a card name or a size)");
    return true;
}

bool readDevice(Reader& reader, std::optional<int32_t>& device)
{
    const PlanRequest& request = reader.request();
    if (!request.has(PlanField::Device))
        return true;
    const std::string value = request.value(PlanField::Device);
    const std::optional<int> ordinal = intFromText(value);
    if (!ordinal || *ordinal < 0)
        return reader.fail(reader.name(PlanField::Device) + " needs a device ordinal (0, 1, ...), got '" + value + "'");
    device = *ordinal;
    return true;
}

} // namespace

const std::vector<PlanField>& planFields()
{
    static const std::vector<PlanField> fields = [] {
        std::vector<PlanField> all;
        for (const FieldSpelling& spelling : spellings)
            all.push_back(spelling.field);
        return all;
    }();
    return fields;
}

std::string_view planFieldName(PlanField field)
{
    return spellingOf(field).name;
}

bool isPlanSwitch(PlanField field)
{
    return spellingOf(field).isSwitch;
}

std::string PlanRequest::value(PlanField field) const
{
    const auto found = values.find(field);
    return found == values.end() ? std::string() : found->second;
}

int PlanReading::failedInputs() const
{
    return int(std::count_if(failures.begin(), failures.end(), [](const InputFailure& f) { return !f.warningOnly; }));
}

PlanReading readPlanRequest(const PlanRequest& request, const PlanWording& wording)
{
    PlanReading reading;
    Reader reader(request, wording);
    ModelSpec model;
    TrainingSetup setup;
    std::optional<GpuCard> card;
    if (!readModel(reader, model, reading.failures) || !readSetup(reader, setup) || !readCard(reader, card)
        || !readDevice(reader, reading.analysisOptions.device)) {
        reading.problem = reader.problem();
        return reading;
    }
    std::optional<SnapshotAnalysis> analysis;
    if (request.has(PlanField::Snapshot)) {
        OpenedSnapshot snapshot = openSnapshot(requestFor(request.value(PlanField::Snapshot)), reading.analysisOptions);
        reading.failures = std::move(snapshot.failures);
        if (!snapshot.analysis)
            return reading;
        reading.input = std::move(snapshot.input);
        analysis = std::move(snapshot.analysis);
    }
    reading.result = makePlan(model, setup, card, analysis ? analysis->primary() : nullptr);
    return reading;
}

} // namespace oomlens
