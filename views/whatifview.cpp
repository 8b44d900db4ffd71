#include "views/whatifview.h"

#include "core/planner/dsconfig.h"
#include "core/planner/fsdpconfig.h"
#include "core/planner/plantext.h"
#include "core/units.h"
#include "views/whatifbars.h"

#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFontDatabase>
#include <QFormLayout>
#include <QGuiApplication>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>
#include <QVBoxLayout>

namespace oomlens {

using namespace planner;

namespace {

QString text(std::string_view view)
{
    return QString::fromUtf8(view.data(), static_cast<qsizetype>(view.size()));
}

QComboBox* choices(QWidget* parent, const char* objectName, const QStringList& items)
{
    auto* box = new QComboBox(parent);
    box->setObjectName(QString::fromLatin1(objectName));
    box->addItems(items);
    return box;
}

// The model chooser's item data: which kind of model an entry stands for (config models carry
// their index into m_configModels, 0 and up).
constexpr int noModel = -1;
constexpr int presetModel = -2;

// "7B", "350m", "1.3e9", "774000000": a parameter count; nothing for anything else.
std::optional<uint64_t> parameterCount(QString text)
{
    text = text.trimmed().toLower();
    double scale = 1;
    if (text.endsWith(QLatin1Char('k')) || text.endsWith(QLatin1Char('m')) || text.endsWith(QLatin1Char('b'))
        || text.endsWith(QLatin1Char('t'))) {
        const QChar unit = text.back();
        scale = unit == QLatin1Char('k') ? 1e3 : unit == QLatin1Char('m') ? 1e6 : unit == QLatin1Char('b') ? 1e9 : 1e12;
        text.chop(1);
    }
    bool ok = false;
    const double value = text.trimmed().toDouble(&ok) * scale;
    // The planner's own bound on a model (modelspec: beyond 10^15 parameters is an error).
    if (!ok || !(value >= 1) || value > 1e15)
        return std::nullopt;
    return static_cast<uint64_t>(value);
}

// 31M, 1.3B: a parameter count as people say it.
QString countWords(double count)
{
    if (count >= 1e9)
        return QString::number(count / 1e9, 'g', 3) + QLatin1Char('B');
    if (count >= 1e6)
        return QString::number(count / 1e6, 'g', 3) + QLatin1Char('M');
    return QString::number(count / 1e3, 'g', 3) + QLatin1Char('k');
}

QSpinBox* number(QWidget* parent, const char* objectName, int minimum, int maximum, int value)
{
    auto* box = new QSpinBox(parent);
    box->setObjectName(QString::fromLatin1(objectName));
    box->setRange(minimum, maximum);
    box->setValue(value);
    box->setKeyboardTracking(false);
    return box;
}

} // namespace

WhatIfView::WhatIfView(QWidget* parent)
    : QWidget(parent)
{
    auto* layout = new QHBoxLayout(this);
    auto* form = new QFormLayout;
    QStringList presets;
    for (const std::string& name : modelPresetNames())
        presets << QString::fromStdString(name);
    // No default model: planning a run with the wrong model answers another question.
    m_model = choices(this, "model", {});
    m_model->addItem(QStringLiteral("(none chosen)"), noModel);
    for (const QString& preset : presets)
        m_model->addItem(preset, presetModel);
    m_parameters = new QLineEdit(this);
    m_parameters->setObjectName(QStringLiteral("parameters"));
    m_parameters->setPlaceholderText(QStringLiteral("or its parameter count: 7B, 350M, 1.3e9"));
    m_parameters->setToolTip(QStringLiteral("A model known by its parameter count: weights, gradients and optimizer "
                                            "state are planned; the measured activations stay as they are"));
    m_batch = number(this, "batch", 1, 4096, 1);
    m_sequence = number(this, "seq", 1, 1 << 20, 2048);
    m_sequence->setSingleStep(128);
    m_precision = choices(this, "precision",
        { text(precisionName(Precision::Fp32)), text(precisionName(Precision::MixedFp16)),
            text(precisionName(Precision::MixedBf16)), text(precisionName(Precision::Bf16)) });
    m_precision->setCurrentIndex(2);
    m_optimizer = choices(this, "optimizer",
        { text(optimizerName(OptimizerKind::AdamW)), text(optimizerName(OptimizerKind::AdamW8bit)),
            text(optimizerName(OptimizerKind::Sgd)), text(optimizerName(OptimizerKind::Adafactor)),
            text(optimizerName(OptimizerKind::AdamWFused)), text(optimizerName(OptimizerKind::AdamW8bitPaged)) });
    m_accumulation = number(this, "accumulation", 1, 4096, 1);
    // In Checkpointing's order: none, full, every K-th block (K beside it).
    m_checkpointing = choices(this, "checkpointing",
        { QStringLiteral("none"), QStringLiteral("full"), QStringLiteral("every K-th block"),
            QStringLiteral("selective (attention core)") });
    m_checkpointEvery = number(this, "checkpointEvery", 2, 1024, 2);
    m_checkpointEvery->setPrefix(QStringLiteral("K = "));
    m_checkpointEvery->setEnabled(false);
    m_attention = choices(this, "attention", { QStringLiteral("eager"), QStringLiteral("sdpa") });
    m_attention->setCurrentIndex(1);
    m_gpus = number(this, "gpus", 1, 64, 1);
    m_nodes = number(this, "nodes", 1, 1024, 1);
    m_zero = choices(this, "zero",
        { QStringLiteral("0 (DDP)"), QStringLiteral("1"), QStringLiteral("2"), QStringLiteral("3 (FSDP full shard)") });
    m_offload
        = choices(this, "offload", { QStringLiteral("none"), QStringLiteral("optimizer"), QStringLiteral("all") });
    m_loraRank = number(this, "loraRank", 0, 1024, 0);
    m_loraRank->setSpecialValueText(QStringLiteral("off (full fine-tuning)"));
    m_qlora = new QCheckBox(QStringLiteral("4-bit base (QLoRA)"), this);
    m_qlora->setObjectName(QStringLiteral("qlora"));
    m_tp = number(this, "tp", 1, 64, 1);
    m_sequenceParallel = new QCheckBox(QStringLiteral("SP"), this);
    m_sequenceParallel->setObjectName(QStringLiteral("sequenceParallel"));
    m_sequenceParallel->setToolTip(
        QStringLiteral("Sequence parallelism: the norms' and dropouts' activations split over TP too"));
    m_cp = number(this, "cp", 1, 64, 1);
    m_pp = number(this, "pp", 1, 128, 1);
    m_vpp = number(this, "vpp", 1, 64, 1);
    m_vpp->setToolTip(QStringLiteral("Model chunks per pipeline rank (interleaved 1F1B); 1: not interleaved"));
    m_microbatches = number(this, "microbatches", 0, 4096, 0);
    m_microbatches->setSpecialValueText(QStringLiteral("fill"));
    m_microbatches->setToolTip(
        QStringLiteral("Microbatches per pipeline per step; 'fill': enough to fill the pipeline"));
    m_ep = number(this, "ep", 1, 256, 1);
    m_distributedOptimizer = new QCheckBox(QStringLiteral("distributed optimizer (Megatron)"), this);
    m_distributedOptimizer->setObjectName(QStringLiteral("distributedOptimizer"));
    m_inference = new QCheckBox(QStringLiteral("serve (inference): micro-batch = concurrent sequences"), this);
    m_inference->setObjectName(QStringLiteral("inference"));
    m_kvDtype = choices(this, "kvDtype",
        { text(kvDtypeName(KvDtype::Fp16)), text(kvDtypeName(KvDtype::Bf16)), text(kvDtypeName(KvDtype::Fp8)),
            text(kvDtypeName(KvDtype::Fp32)) });
    m_kvDtype->setCurrentIndex(1);
    m_weights = choices(this, "weights",
        { text(weightFormatName(WeightFormat::Auto)), text(weightFormatName(WeightFormat::Bf16)),
            text(weightFormatName(WeightFormat::Fp8)), text(weightFormatName(WeightFormat::Int8)),
            text(weightFormatName(WeightFormat::Int4)) });
    m_gpuUtilization = new QDoubleSpinBox(this);
    m_gpuUtilization->setObjectName(QStringLiteral("gpuMemoryUtilization"));
    m_gpuUtilization->setRange(0.05, 1.0);
    m_gpuUtilization->setSingleStep(0.05);
    m_gpuUtilization->setValue(0.9);
    m_gpuUtilization->setToolTip(QStringLiteral("vLLM's gpu_memory_utilization: the share of the card it may use"));
    m_card = new QComboBox(this);
    m_card->setObjectName(QStringLiteral("card"));
    for (const GpuCard& card : commonCards())
        m_card->addItem(
            QStringLiteral("%1 (%2)").arg(QString::fromStdString(card.name), QString::fromStdString(card.models)),
            QString::fromStdString(card.name));
    m_card->setCurrentIndex(4); // 80 GB

    form->addRow(QStringLiteral("Model"), m_model);
    form->addRow(QStringLiteral("Parameters"), m_parameters);
    form->addRow(QStringLiteral("Micro-batch"), m_batch);
    form->addRow(QStringLiteral("Sequence"), m_sequence);
    form->addRow(QStringLiteral("Precision"), m_precision);
    form->addRow(QStringLiteral("Optimizer"), m_optimizer);
    form->addRow(QStringLiteral("Accumulation"), m_accumulation);
    auto* checkpointingRow = new QHBoxLayout;
    checkpointingRow->addWidget(m_checkpointing, 1);
    checkpointingRow->addWidget(m_checkpointEvery);
    form->addRow(QStringLiteral("Checkpointing"), checkpointingRow);
    form->addRow(QStringLiteral("Attention"), m_attention);
    form->addRow(QStringLiteral("GPUs per node"), m_gpus);
    form->addRow(QStringLiteral("Nodes"), m_nodes);
    form->addRow(QStringLiteral("ZeRO stage"), m_zero);
    form->addRow(QStringLiteral("Offload"), m_offload);
    form->addRow(QStringLiteral("LoRA rank"), m_loraRank);
    form->addRow(QString(), m_qlora);
    m_loraTargets = choices(this, "loraTargets",
        { QStringLiteral("all linear layers"), QStringLiteral("attention (q, k, v, o)"), QStringLiteral("q and v") });
    form->addRow(QStringLiteral("LoRA targets"), m_loraTargets);
    const auto row = [this](std::initializer_list<std::pair<const char*, QWidget*>> widgets) {
        auto* line = new QHBoxLayout;
        for (const auto& [label, widget] : widgets) {
            if (label[0] != '\0')
                line->addWidget(new QLabel(QString::fromLatin1(label), this));
            line->addWidget(widget);
        }
        line->addStretch(1);
        return line;
    };
    form->addRow(QStringLiteral("Tensor parallel"), row({ { "", m_tp }, { "", m_sequenceParallel }, { "CP", m_cp } }));
    form->addRow(
        QStringLiteral("Pipeline"), row({ { "", m_pp }, { "VPP", m_vpp }, { "microbatches", m_microbatches } }));
    form->addRow(QStringLiteral("Expert parallel"), row({ { "", m_ep } }));
    form->addRow(QString(), m_distributedOptimizer);
    form->addRow(QString(), m_inference);
    form->addRow(QStringLiteral("Serving"),
        row({ { "KV", m_kvDtype }, { "weights", m_weights }, { "GPU share", m_gpuUtilization } }));
    form->addRow(QStringLiteral("Card"), m_card);
    auto* measuredRun = new QPushButton(QStringLiteral("These settings are the measured run"), this);
    measuredRun->setObjectName(QStringLiteral("measuredRun"));
    m_measuredRun = measuredRun;
    measuredRun->setToolTip(QStringLiteral("Calibrate against the snapshot with the settings above as its run"));
    form->addRow(QString(), measuredRun);
    layout->addLayout(form);

    auto* right = new QVBoxLayout;
    m_verdict = new QLabel(this);
    m_verdict->setObjectName(QStringLiteral("verdict"));
    QFont big = m_verdict->font();
    big.setPointSizeF(big.pointSizeF() * 1.3);
    big.setBold(true);
    m_verdict->setFont(big);
    m_verdict->setWordWrap(true);
    m_bars = new WhatIfBars(this);
    m_details = new QLabel(this);
    m_details->setObjectName(QStringLiteral("details"));
    m_details->setWordWrap(true);
    m_details->setTextInteractionFlags(Qt::TextSelectableByMouse);
    m_calibrationLabel = new QLabel(this);
    m_calibrationLabel->setObjectName(QStringLiteral("calibration"));
    m_calibrationLabel->setWordWrap(true);
    right->addWidget(m_verdict);
    right->addWidget(m_bars, 1);
    right->addWidget(m_calibrationLabel);
    right->addWidget(m_details);

    // The chosen set-up as configuration to paste: DeepSpeed, PyTorch FSDP or accelerate.
    auto* configRow = new QHBoxLayout;
    m_configKind = choices(this, "configKind",
        { QStringLiteral("ds_config.json"), QStringLiteral("FSDP snippet"), QStringLiteral("accelerate config") });
    auto* copyConfig = new QPushButton(QStringLiteral("Copy config"), this);
    copyConfig->setObjectName(QStringLiteral("copyConfig"));
    configRow->addWidget(m_configKind);
    configRow->addWidget(copyConfig);
    configRow->addStretch(1);
    right->addLayout(configRow);
    m_config = new QPlainTextEdit(this);
    m_config->setObjectName(QStringLiteral("config"));
    m_config->setReadOnly(true);
    m_config->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
    m_config->setMaximumHeight(220);
    right->addWidget(m_config);
    layout->addLayout(right, 1);
    connect(m_configKind, &QComboBox::currentIndexChanged, this, &WhatIfView::showConfig);
    connect(copyConfig, &QPushButton::clicked, this,
        [this] { QGuiApplication::clipboard()->setText(m_config->toPlainText()); });

    const auto changed = [this] {
        if (!m_updating)
            m_edited = true;
        recompute();
    };
    // The model is the run's, not a what-if: a new one is calibrated again.
    connect(m_model, &QComboBox::currentIndexChanged, this, [this] {
        if (m_updating)
            return;
        m_edited = true;
        if (m_model->currentData().toInt() != noModel) {
            m_updating = true;
            m_parameters->clear();
            m_updating = false;
        }
        useControlsAsMeasuredRun();
    });
    connect(m_parameters, &QLineEdit::textEdited, this, &WhatIfView::setParameterCount);
    for (QComboBox* box : { m_precision, m_optimizer, m_checkpointing, m_attention, m_zero, m_offload, m_card,
             m_loraTargets, m_kvDtype, m_weights })
        connect(box, &QComboBox::currentIndexChanged, this, changed);
    for (QSpinBox* box : { m_batch, m_sequence, m_accumulation, m_checkpointEvery, m_gpus, m_nodes, m_loraRank, m_tp,
             m_cp, m_pp, m_vpp, m_microbatches, m_ep })
        connect(box, &QSpinBox::valueChanged, this, changed);
    for (QCheckBox* box : { m_qlora, m_sequenceParallel, m_distributedOptimizer, m_inference })
        connect(box, &QCheckBox::toggled, this, changed);
    connect(m_gpuUtilization, &QDoubleSpinBox::valueChanged, this, changed);
    connect(measuredRun, &QPushButton::clicked, this, &WhatIfView::useControlsAsMeasuredRun);
    recompute();
}

std::optional<ModelSpec> WhatIfView::model() const
{
    const int kind = m_model->currentData().toInt();
    if (kind >= 0 && kind < int(m_configModels.size()))
        return m_configModels[static_cast<size_t>(kind)];
    if (kind == presetModel)
        return modelPreset(m_model->currentText().toStdString());
    if (const std::optional<uint64_t> count = parameterCount(m_parameters->text())) {
        ModelSpec spec;
        spec.name = QStringLiteral("a model of %1 parameters").arg(countWords(double(*count))).toStdString();
        spec.parameters = *count;
        return spec;
    }
    return std::nullopt;
}

void WhatIfView::setParameterCount(const QString& text)
{
    m_updating = true;
    if (m_parameters->text() != text)
        m_parameters->setText(text);
    if (parameterCount(text))
        m_model->setCurrentIndex(m_model->findData(noModel));
    m_updating = false;
    m_edited = true;
    useControlsAsMeasuredRun();
}

QList<QWidget*> WhatIfView::setupControls() const
{
    return { m_batch, m_sequence, m_precision, m_optimizer, m_accumulation, m_checkpointing, m_checkpointEvery,
        m_attention, m_gpus, m_nodes, m_zero, m_offload, m_loraRank, m_qlora, m_loraTargets, m_tp, m_sequenceParallel,
        m_cp, m_pp, m_vpp, m_microbatches, m_ep, m_distributedOptimizer, m_inference, m_kvDtype, m_weights,
        m_gpuUtilization, m_configKind, m_measuredRun };
}

void WhatIfView::setConfigModels(const std::vector<std::pair<ModelSpec, QString>>& models)
{
    m_updating = true;
    for (int i = m_model->count() - 1; i >= 0; --i) {
        if (m_model->itemData(i).toInt() >= 0)
            m_model->removeItem(i);
    }
    m_configModels.clear();
    // Below "(none chosen)", above the presets.
    for (const auto& [model, source] : models) {
        m_model->insertItem(1 + int(m_configModels.size()),
            QString::fromStdString(model.name) + QStringLiteral(" (") + source + QLatin1Char(')'),
            int(m_configModels.size()));
        m_configModels.push_back(model);
    }
    if (!m_configModels.empty()) {
        m_model->setCurrentIndex(1);
        m_parameters->clear();
    }
    m_updating = false;
    useControlsAsMeasuredRun();
}

std::optional<GpuCard> WhatIfView::card() const
{
    return cardFromText(m_card->currentData().toString().toStdString());
}

TrainingSetup WhatIfView::setup() const
{
    TrainingSetup setup;
    setup.microBatch = m_batch->value();
    setup.sequence = m_sequence->value();
    setup.precision = static_cast<Precision>(m_precision->currentIndex());
    setup.optimizer = static_cast<OptimizerKind>(m_optimizer->currentIndex());
    setup.gradientAccumulation = m_accumulation->value();
    setup.checkpointing = static_cast<Checkpointing>(m_checkpointing->currentIndex());
    if (setup.checkpointing == Checkpointing::EveryK)
        setup.checkpointEvery = m_checkpointEvery->value();
    setup.attention = static_cast<Attention>(m_attention->currentIndex());
    setup.gpusPerNode = m_gpus->value();
    setup.nodes = m_nodes->value();
    setup.zeroStage = m_zero->currentIndex();
    setup.offload = static_cast<Offload>(m_offload->currentIndex());
    setup.loraRank = m_loraRank->value();
    setup.quantizedBase = m_qlora->isChecked();
    // Targets mean nothing without adapters: full fine-tuning keeps the default.
    setup.loraTargets
        = setup.loraRank > 0 ? static_cast<LoraTargets>(m_loraTargets->currentIndex()) : LoraTargets::AllLinear;
    setup.parallel.tensor = m_tp->value();
    setup.parallel.sequenceParallel = m_sequenceParallel->isChecked();
    setup.parallel.context = m_cp->value();
    setup.parallel.pipeline = m_pp->value();
    setup.parallel.virtualStages = m_vpp->value();
    setup.parallel.microbatches = m_microbatches->value();
    setup.parallel.expert = m_ep->value();
    setup.parallel.distributedOptimizer = m_distributedOptimizer->isChecked();
    setup.inference = m_inference->isChecked();
    setup.kvDtype = static_cast<KvDtype>(m_kvDtype->currentIndex());
    setup.weights = static_cast<WeightFormat>(m_weights->currentIndex());
    setup.gpuMemoryUtilization = m_gpuUtilization->value();
    return setup;
}

void WhatIfView::setSetup(const TrainingSetup& setup)
{
    m_updating = true;
    m_batch->setValue(setup.microBatch);
    m_sequence->setValue(setup.sequence);
    m_precision->setCurrentIndex(static_cast<int>(setup.precision));
    m_optimizer->setCurrentIndex(static_cast<int>(setup.optimizer));
    m_accumulation->setValue(setup.gradientAccumulation);
    m_checkpointing->setCurrentIndex(static_cast<int>(setup.checkpointing));
    if (setup.checkpointing == Checkpointing::EveryK)
        m_checkpointEvery->setValue(setup.checkpointEvery);
    m_attention->setCurrentIndex(static_cast<int>(setup.attention));
    m_gpus->setValue(setup.gpusPerNode);
    m_nodes->setValue(setup.nodes);
    m_zero->setCurrentIndex(setup.zeroStage);
    m_offload->setCurrentIndex(static_cast<int>(setup.offload));
    m_loraRank->setValue(setup.loraRank);
    m_qlora->setChecked(setup.quantizedBase);
    m_loraTargets->setCurrentIndex(static_cast<int>(setup.loraTargets));
    m_tp->setValue(setup.parallel.tensor);
    m_sequenceParallel->setChecked(setup.parallel.sequenceParallel);
    m_cp->setValue(setup.parallel.context);
    m_pp->setValue(setup.parallel.pipeline);
    m_vpp->setValue(setup.parallel.virtualStages);
    m_microbatches->setValue(setup.parallel.microbatches);
    m_ep->setValue(setup.parallel.expert);
    m_distributedOptimizer->setChecked(setup.parallel.distributedOptimizer);
    m_inference->setChecked(setup.inference);
    m_kvDtype->setCurrentIndex(static_cast<int>(setup.kvDtype));
    m_weights->setCurrentIndex(static_cast<int>(setup.weights));
    m_gpuUtilization->setValue(setup.gpuMemoryUtilization);
    m_updating = false;
    recompute();
}

void WhatIfView::setModel(const QString& preset)
{
    m_model->setCurrentText(preset);
}

void WhatIfView::setCard(const QString& name)
{
    const int index = m_card->findData(name);
    if (index >= 0)
        m_card->setCurrentIndex(index);
}

void WhatIfView::setMeasured(std::shared_ptr<const SnapshotAnalysis> analysis, int32_t device)
{
    m_analysis = std::move(analysis);
    m_device = m_analysis ? m_analysis->device(device) : nullptr;
    if (m_device) {
        // The smallest common card that held the run's reserve.
        for (int i = 0; i < m_card->count(); ++i) {
            const auto candidate = cardFromText(m_card->itemData(i).toString().toStdString());
            if (candidate && candidate->capacityBytes >= m_device->peakReservedBytes) {
                m_updating = true;
                m_card->setCurrentIndex(i);
                m_updating = false;
                break;
            }
        }
    }
    useControlsAsMeasuredRun();
}

void WhatIfView::useControlsAsMeasuredRun()
{
    m_calibration.reset();
    m_mismatch.clear();
    const std::optional<ModelSpec> spec = model();
    if (m_device && spec) {
        const TrainingSetup run = setup();
        if (setupProblem(run).empty()) {
            const MemoryPlan formula = planMemory(*spec, run);
            if (const std::string why = modelMismatch(formula, *m_device); !why.empty())
                m_mismatch = QStringLiteral("Not calibrated against this run: %1 — %2. Open the run's config.json or "
                                            "type its parameter count.")
                                 .arg(QString::fromStdString(spec->name), QString::fromStdString(why));
            else
                m_calibration = calibratePlan(formula, *m_device);
        }
    }
    recompute();
}

QString WhatIfView::verdict() const
{
    return m_verdict->text();
}

QString WhatIfView::configText() const
{
    return m_config->toPlainText();
}

void WhatIfView::showConfig()
{
    const std::optional<ModelSpec> chosen = model();
    if (!m_result.setupProblem.empty() || !chosen) {
        m_config->clear();
        return;
    }
    const ModelSpec& spec = *chosen;
    const TrainingSetup current = setup();
    if (current.inference) {
        // Serving has no training configuration: the vLLM command line takes its place.
        m_config->setPlainText(QString::fromStdString(vllmCommand(spec, current)));
        return;
    }
    switch (m_configKind->currentIndex()) {
    case 1:
        m_config->setPlainText(QString::fromStdString(fsdpSnippet(spec, current)));
        break;
    case 2:
        m_config->setPlainText(QString::fromStdString(accelerateConfig(spec, current)));
        break;
    default:
        m_config->setPlainText(QString::fromStdString(deepSpeedConfig(current).dump(2)));
        break;
    }
}

void WhatIfView::recompute()
{
    if (m_updating)
        return;
    const std::optional<ModelSpec> spec = model();
    for (QWidget* control : setupControls())
        control->setEnabled(spec.has_value());
    m_measuredRun->setEnabled(spec && m_device);
    if (!spec) {
        showWithoutModel();
        return;
    }
    m_checkpointEvery->setEnabled(m_checkpointing->currentIndex() == static_cast<int>(Checkpointing::EveryK));
    for (QWidget* serving : std::initializer_list<QWidget*> { m_kvDtype, m_weights, m_gpuUtilization })
        serving->setEnabled(m_inference->isChecked());
    const TrainingSetup current = setup();
    const std::string problem = setupProblem(current);
    if (!problem.empty()) {
        m_verdict->setText(QString::fromStdString(problem));
        m_details->clear();
        m_result = PlanResult {};
        m_result.setupProblem = problem;
        showConfig();
        emit planChanged();
        return;
    }
    const std::optional<GpuCard> chosen = card();
    // Calibrated against the measured run's set-up, projected to this one.
    m_result = makeProjectedPlan(*spec, current, chosen, m_calibration);
    const uint64_t capacity = chosen ? chosen->capacityBytes : 0;
    m_bars->setPlan(m_result.shown.perGpu, capacity, current.totalGpus());
    std::vector<BandBytes> stages;
    if (m_result.shown.stages.size() > 1) {
        for (const StageMemory& stage : m_result.shown.stages)
            stages.push_back(stage.perGpu);
    }
    m_bars->setStages(std::move(stages));
    const uint64_t total = m_result.shown.totalPerGpu;
    // Serving is held to vLLM's share of the card.
    QString words = QString::fromStdString(fitWords(total, usableBytes(current, capacity)));
    words[0] = words[0].toUpper();
    m_verdict->setText(QStringLiteral("%1 per GPU%2: %3.")
                           .arg(QString::fromStdString(formatBytes(total)),
                               m_result.shown.stages.size() > 1
                                   ? QStringLiteral(" (stage %1, the busiest)").arg(m_result.shown.busiestStage)
                                   : QString(),
                               words));
    QString details = QStringLiteral("Peak in %1; host memory per node %2.")
                          .arg(text(peakPhaseName(m_result.shown.peakPhase)),
                              QString::fromStdString(formatBytes(m_result.shown.hostBytes)));
    if (m_result.serving) {
        const ServingFit& fit = *m_result.serving;
        details = QStringLiteral("vLLM at %1 of the card: %2 tokens of KV cache (%3 per token per GPU), %4 sequences "
                                 "of %5 tokens, or %6 tokens each for %7; this batch needs %8.")
                      .arg(fit.gpuMemoryUtilization, 0, 'f', 2)
                      .arg(fit.kvTokens)
                      .arg(QString::fromStdString(formatBytes(m_result.shown.servingMemory.kvBytesPerToken)))
                      .arg(fit.maxSequences)
                      .arg(current.sequence)
                      .arg(fit.maxContext)
                      .arg(current.microBatch)
                      .arg(fit.neededUtilization, 0, 'f', 2);
    } else if (m_result.maxMicroBatch > 0)
        details += QStringLiteral(" Largest micro-batch on this card: %1.").arg(m_result.maxMicroBatch);
    else if (m_result.maxMicroBatch == 0)
        details += QStringLiteral(" Not even a micro-batch of 1 fits this card.");
    if (!m_result.ladder.empty() && m_result.ladder.back().climbedTotal <= capacity)
        details += QStringLiteral(" The ladder fits from '%1' on (%2).")
                       .arg(QString::fromStdString(m_result.ladder.back().id),
                           QString::fromStdString(m_result.ladder.back().change));
    if (m_result.fitsWithPaging && !m_result.fits.value_or(true))
        details += *m_result.fitsWithPaging
            ? QStringLiteral(" With the paged optimizer state moved to host memory it runs, slower.")
            : QStringLiteral(" Even with the paged optimizer state on the host it does not fit.");
    for (const std::string& note : m_result.shown.notes)
        details += QLatin1Char(' ') + QString::fromStdString(note);
    for (const EstimatorFigure& figure : m_result.shown.estimators)
        details += QStringLiteral(" %1: %2 (ours %3).")
                       .arg(QString::fromStdString(figure.source), QString::fromStdString(formatBytes(figure.bytes)),
                           QString::fromStdString(formatBytes(figure.plannerBytes)));
    if (!spec->hasDimensions() && m_calibration)
        details += QStringLiteral(" A parameter count gives no layer sizes: the activations stay as the run measured "
                                  "them; open the model's config.json to see batch and sequence changes.");
    m_details->setText(details);
    m_calibrationLabel->setVisible(m_calibration || !m_mismatch.isEmpty());
    if (m_calibration)
        m_calibrationLabel->setText(QStringLiteral("Measured run: %1. Changes are projected from the measurement.")
                                        .arg(QString::fromStdString(m_calibration->summary)));
    else
        m_calibrationLabel->setText(m_mismatch);
    m_bars->setCalibration(m_calibration);
    showConfig();
    emit planChanged();
}

void WhatIfView::showWithoutModel()
{
    m_result = PlanResult {};
    m_calibrationLabel->hide();
    m_bars->setCalibration(std::nullopt);
    m_bars->setStages({});
    const std::optional<GpuCard> chosen = card();
    const uint64_t capacity = chosen ? chosen->capacityBytes : 0;
    const QString ask
        = QStringLiteral("To see what a change would do, tell the planner the model: open its config.json "
                         "(drop it on the window), pick it above, or type its parameter count.");
    if (!m_device) {
        m_bars->setPlan(BandBytes {}, capacity, 1);
        m_verdict->setText(QStringLiteral("Which model?"));
        m_details->setText(ask);
    } else {
        // The run's own bands at its peak: the starting point every what-if is projected from.
        const BandBytes bands = measuredBands(*m_device);
        m_bars->setPlan(bands, capacity, 1);
        const uint64_t total = bandTotal(bands);
        m_verdict->setText(
            QStringLiteral("This run at its peak: %1 per GPU; it %2.")
                .arg(QString::fromStdString(formatBytes(total)), QString::fromStdString(fitWords(total, capacity))));
        QString details = QStringLiteral("The bars are the snapshot's own: its tensors by category at the peak, the "
                                         "allocator's slack and the CUDA context. ")
            + ask;
        // What the parameters band says of the model's size, at the two common widths.
        const uint64_t parameters = m_device->categoriesAtPeak[static_cast<size_t>(Category::Parameters)];
        if (parameters > 0)
            details += QStringLiteral(" The run held %1 of parameters: about %2 parameters in fp32, %3 in 16-bit.")
                           .arg(QString::fromStdString(formatBytes(parameters)), countWords(double(parameters) / 4),
                               countWords(double(parameters) / 2));
        m_details->setText(details);
    }
    m_config->clear();
    emit planChanged();
}

} // namespace oomlens
