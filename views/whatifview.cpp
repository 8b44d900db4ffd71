#include "views/whatifview.h"

#include "core/planner/dsconfig.h"
#include "core/planner/fsdpconfig.h"
#include "core/planner/plantext.h"
#include "core/units.h"
#include "views/whatifbars.h"

#include "ui_whatifview.h"

#include <QCheckBox>
#include <QClipboard>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFontDatabase>
#include <QGuiApplication>
#include <QLineEdit>
#include <QPlainTextEdit>
#include <QPushButton>
#include <QSpinBox>

namespace oomlens {

using namespace planner;

namespace {

QString text(std::string_view view)
{
    return QString::fromUtf8(view.data(), static_cast<qsizetype>(view.size()));
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

} // namespace

WhatIfView::WhatIfView(QWidget* parent)
    : QWidget(parent)
    , m_ui(std::make_unique<Ui::WhatIfView>())
{
    m_ui->setupUi(this);
    fillModels();
    fillCoreChoices();
    fillCards();
    styleResults();
    connectModel();
    connectSetup();
    connectConfig();
    recompute();
}

WhatIfView::~WhatIfView() = default;

void WhatIfView::fillModels()
{
    // No default model: planning a run with the wrong model answers another question.
    m_ui->model->addItem(QStringLiteral("(none chosen)"), noModel);
    for (const std::string& name : modelPresetNames())
        m_ui->model->addItem(QString::fromStdString(name), presetModel);
}

// The choices whose words are core's own names, in the order of core's enums (setup() casts the index).
void WhatIfView::fillCoreChoices()
{
    m_ui->precision->addItems({ text(precisionName(Precision::Fp32)), text(precisionName(Precision::MixedFp16)),
        text(precisionName(Precision::MixedBf16)), text(precisionName(Precision::Bf16)) });
    m_ui->precision->setCurrentIndex(2);
    m_ui->optimizer->addItems(
        { text(optimizerName(OptimizerKind::AdamW)), text(optimizerName(OptimizerKind::AdamW8bit)),
            text(optimizerName(OptimizerKind::Sgd)), text(optimizerName(OptimizerKind::Adafactor)),
            text(optimizerName(OptimizerKind::AdamWFused)), text(optimizerName(OptimizerKind::AdamW8bitPaged)) });
    m_ui->kvDtype->addItems({ text(kvDtypeName(KvDtype::Fp16)), text(kvDtypeName(KvDtype::Bf16)),
        text(kvDtypeName(KvDtype::Fp8)), text(kvDtypeName(KvDtype::Fp32)) });
    m_ui->kvDtype->setCurrentIndex(1);
    m_ui->weights->addItems({ text(weightFormatName(WeightFormat::Auto)), text(weightFormatName(WeightFormat::Bf16)),
        text(weightFormatName(WeightFormat::Fp8)), text(weightFormatName(WeightFormat::Int8)),
        text(weightFormatName(WeightFormat::Int4)) });
}

void WhatIfView::fillCards()
{
    for (const GpuCard& card : commonCards())
        m_ui->card->addItem(
            QStringLiteral("%1 (%2)").arg(QString::fromStdString(card.name), QString::fromStdString(card.models)),
            QString::fromStdString(card.name));
    m_ui->card->setCurrentIndex(4); // 80 GB
}

void WhatIfView::styleResults()
{
    QFont big = m_ui->verdict->font();
    big.setPointSizeF(big.pointSizeF() * 1.3);
    big.setBold(true);
    m_ui->verdict->setFont(big);
    m_ui->config->setFont(QFontDatabase::systemFont(QFontDatabase::FixedFont));
}

// The model is the run's, not a what-if: a new one is calibrated again.
void WhatIfView::connectModel()
{
    connect(m_ui->model, &QComboBox::currentIndexChanged, this, [this] {
        if (m_updating)
            return;
        m_edited = true;
        if (m_ui->model->currentData().toInt() != noModel) {
            m_updating = true;
            m_ui->parameters->clear();
            m_updating = false;
        }
        useControlsAsMeasuredRun();
    });
    connect(m_ui->parameters, &QLineEdit::textEdited, this, &WhatIfView::setParameterCount);
    connect(m_ui->measuredRun, &QPushButton::clicked, this, &WhatIfView::useControlsAsMeasuredRun);
}

void WhatIfView::connectSetup()
{
    const auto changed = [this] {
        if (!m_updating)
            m_edited = true;
        recompute();
    };
    for (QComboBox* box : { m_ui->precision, m_ui->optimizer, m_ui->checkpointing, m_ui->attention, m_ui->zero,
             m_ui->offload, m_ui->card, m_ui->loraTargets, m_ui->kvDtype, m_ui->weights })
        connect(box, &QComboBox::currentIndexChanged, this, changed);
    for (QSpinBox* box : { m_ui->batch, m_ui->seq, m_ui->accumulation, m_ui->checkpointEvery, m_ui->gpus, m_ui->nodes,
             m_ui->loraRank, m_ui->tp, m_ui->cp, m_ui->pp, m_ui->vpp, m_ui->microbatches, m_ui->ep })
        connect(box, &QSpinBox::valueChanged, this, changed);
    for (QCheckBox* box : { m_ui->qlora, m_ui->sequenceParallel, m_ui->distributedOptimizer, m_ui->inference })
        connect(box, &QCheckBox::toggled, this, changed);
    connect(m_ui->gpuMemoryUtilization, &QDoubleSpinBox::valueChanged, this, changed);
}

// The chosen set-up as configuration to paste: DeepSpeed, PyTorch FSDP or accelerate.
void WhatIfView::connectConfig()
{
    connect(m_ui->configKind, &QComboBox::currentIndexChanged, this, &WhatIfView::showConfig);
    connect(m_ui->copyConfig, &QPushButton::clicked, this,
        [this] { QGuiApplication::clipboard()->setText(m_ui->config->toPlainText()); });
}

std::optional<ModelSpec> WhatIfView::model() const
{
    const int kind = m_ui->model->currentData().toInt();
    if (kind >= 0 && kind < int(m_configModels.size()))
        return m_configModels[static_cast<size_t>(kind)];
    if (kind == presetModel)
        return modelPreset(m_ui->model->currentText().toStdString());
    if (const std::optional<uint64_t> count = parameterCount(m_ui->parameters->text())) {
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
    if (m_ui->parameters->text() != text)
        m_ui->parameters->setText(text);
    if (parameterCount(text))
        m_ui->model->setCurrentIndex(m_ui->model->findData(noModel));
    m_updating = false;
    m_edited = true;
    useControlsAsMeasuredRun();
}

QList<QWidget*> WhatIfView::setupControls() const
{
    return { m_ui->batch, m_ui->seq, m_ui->precision, m_ui->optimizer, m_ui->accumulation, m_ui->checkpointing,
        m_ui->checkpointEvery, m_ui->attention, m_ui->gpus, m_ui->nodes, m_ui->zero, m_ui->offload, m_ui->loraRank,
        m_ui->qlora, m_ui->loraTargets, m_ui->tp, m_ui->sequenceParallel, m_ui->cp, m_ui->pp, m_ui->vpp,
        m_ui->microbatches, m_ui->ep, m_ui->distributedOptimizer, m_ui->inference, m_ui->kvDtype, m_ui->weights,
        m_ui->gpuMemoryUtilization, m_ui->configKind, m_ui->measuredRun };
}

void WhatIfView::setConfigModels(const std::vector<std::pair<ModelSpec, QString>>& models)
{
    m_updating = true;
    for (int i = m_ui->model->count() - 1; i >= 0; --i) {
        if (m_ui->model->itemData(i).toInt() >= 0)
            m_ui->model->removeItem(i);
    }
    m_configModels.clear();
    // Below "(none chosen)", above the presets.
    for (const auto& [model, source] : models) {
        m_ui->model->insertItem(1 + int(m_configModels.size()),
            QString::fromStdString(model.name) + QStringLiteral(" (") + source + QLatin1Char(')'),
            int(m_configModels.size()));
        m_configModels.push_back(model);
    }
    if (!m_configModels.empty()) {
        m_ui->model->setCurrentIndex(1);
        m_ui->parameters->clear();
    }
    m_updating = false;
    useControlsAsMeasuredRun();
}

std::optional<GpuCard> WhatIfView::card() const
{
    return cardFromText(m_ui->card->currentData().toString().toStdString());
}

TrainingSetup WhatIfView::setup() const
{
    TrainingSetup setup;
    setup.microBatch = m_ui->batch->value();
    setup.sequence = m_ui->seq->value();
    setup.precision = static_cast<Precision>(m_ui->precision->currentIndex());
    setup.optimizer = static_cast<OptimizerKind>(m_ui->optimizer->currentIndex());
    setup.gradientAccumulation = m_ui->accumulation->value();
    setup.checkpointing = static_cast<Checkpointing>(m_ui->checkpointing->currentIndex());
    if (setup.checkpointing == Checkpointing::EveryK)
        setup.checkpointEvery = m_ui->checkpointEvery->value();
    setup.attention = static_cast<Attention>(m_ui->attention->currentIndex());
    setup.gpusPerNode = m_ui->gpus->value();
    setup.nodes = m_ui->nodes->value();
    setup.zeroStage = m_ui->zero->currentIndex();
    setup.offload = static_cast<Offload>(m_ui->offload->currentIndex());
    setup.loraRank = m_ui->loraRank->value();
    setup.quantizedBase = m_ui->qlora->isChecked();
    // Targets mean nothing without adapters: full fine-tuning keeps the default.
    setup.loraTargets
        = setup.loraRank > 0 ? static_cast<LoraTargets>(m_ui->loraTargets->currentIndex()) : LoraTargets::AllLinear;
    setup.parallel.tensor = m_ui->tp->value();
    setup.parallel.sequenceParallel = m_ui->sequenceParallel->isChecked();
    setup.parallel.context = m_ui->cp->value();
    setup.parallel.pipeline = m_ui->pp->value();
    setup.parallel.virtualStages = m_ui->vpp->value();
    setup.parallel.microbatches = m_ui->microbatches->value();
    setup.parallel.expert = m_ui->ep->value();
    setup.parallel.distributedOptimizer = m_ui->distributedOptimizer->isChecked();
    setup.inference = m_ui->inference->isChecked();
    setup.kvDtype = static_cast<KvDtype>(m_ui->kvDtype->currentIndex());
    setup.weights = static_cast<WeightFormat>(m_ui->weights->currentIndex());
    setup.gpuMemoryUtilization = m_ui->gpuMemoryUtilization->value();
    return setup;
}

void WhatIfView::setSetup(const TrainingSetup& setup)
{
    m_updating = true;
    m_ui->batch->setValue(setup.microBatch);
    m_ui->seq->setValue(setup.sequence);
    m_ui->precision->setCurrentIndex(static_cast<int>(setup.precision));
    m_ui->optimizer->setCurrentIndex(static_cast<int>(setup.optimizer));
    m_ui->accumulation->setValue(setup.gradientAccumulation);
    m_ui->checkpointing->setCurrentIndex(static_cast<int>(setup.checkpointing));
    if (setup.checkpointing == Checkpointing::EveryK)
        m_ui->checkpointEvery->setValue(setup.checkpointEvery);
    m_ui->attention->setCurrentIndex(static_cast<int>(setup.attention));
    m_ui->gpus->setValue(setup.gpusPerNode);
    m_ui->nodes->setValue(setup.nodes);
    m_ui->zero->setCurrentIndex(setup.zeroStage);
    m_ui->offload->setCurrentIndex(static_cast<int>(setup.offload));
    m_ui->loraRank->setValue(setup.loraRank);
    m_ui->qlora->setChecked(setup.quantizedBase);
    m_ui->loraTargets->setCurrentIndex(static_cast<int>(setup.loraTargets));
    m_ui->tp->setValue(setup.parallel.tensor);
    m_ui->sequenceParallel->setChecked(setup.parallel.sequenceParallel);
    m_ui->cp->setValue(setup.parallel.context);
    m_ui->pp->setValue(setup.parallel.pipeline);
    m_ui->vpp->setValue(setup.parallel.virtualStages);
    m_ui->microbatches->setValue(setup.parallel.microbatches);
    m_ui->ep->setValue(setup.parallel.expert);
    m_ui->distributedOptimizer->setChecked(setup.parallel.distributedOptimizer);
    m_ui->inference->setChecked(setup.inference);
    m_ui->kvDtype->setCurrentIndex(static_cast<int>(setup.kvDtype));
    m_ui->weights->setCurrentIndex(static_cast<int>(setup.weights));
    m_ui->gpuMemoryUtilization->setValue(setup.gpuMemoryUtilization);
    m_updating = false;
    recompute();
}

void WhatIfView::setModel(const QString& preset)
{
    m_ui->model->setCurrentText(preset);
}

void WhatIfView::setCard(const QString& name)
{
    const int index = m_ui->card->findData(name);
    if (index >= 0)
        m_ui->card->setCurrentIndex(index);
}

void WhatIfView::setMeasured(std::shared_ptr<const SnapshotAnalysis> analysis, int32_t device)
{
    m_analysis = std::move(analysis);
    m_device = m_analysis ? m_analysis->device(device) : nullptr;
    if (m_device) {
        // The smallest common card that held the run's reserve.
        for (int i = 0; i < m_ui->card->count(); ++i) {
            const auto candidate = cardFromText(m_ui->card->itemData(i).toString().toStdString());
            if (candidate && candidate->capacityBytes >= m_device->peakReservedBytes) {
                m_updating = true;
                m_ui->card->setCurrentIndex(i);
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
    return m_ui->verdict->text();
}

QString WhatIfView::configText() const
{
    return m_ui->config->toPlainText();
}

void WhatIfView::showConfig()
{
    const std::optional<ModelSpec> chosen = model();
    if (!m_result.setupProblem.empty() || !chosen) {
        m_ui->config->clear();
        return;
    }
    const ModelSpec& spec = *chosen;
    const TrainingSetup current = setup();
    if (current.inference) {
        // Serving has no training configuration: the vLLM command line takes its place.
        m_ui->config->setPlainText(QString::fromStdString(vllmCommand(spec, current)));
        return;
    }
    switch (m_ui->configKind->currentIndex()) {
    case 1:
        m_ui->config->setPlainText(QString::fromStdString(fsdpSnippet(spec, current)));
        break;
    case 2:
        m_ui->config->setPlainText(QString::fromStdString(accelerateConfig(spec, current)));
        break;
    default:
        m_ui->config->setPlainText(QString::fromStdString(deepSpeedConfig(current).dump(2)));
        break;
    }
}

void WhatIfView::recompute()
{
    if (m_updating)
        return;
    const std::optional<ModelSpec> spec = model();
    enableControls(spec.has_value());
    if (!spec) {
        showWithoutModel();
        return;
    }
    const TrainingSetup current = setup();
    if (const std::string problem = setupProblem(current); !problem.empty()) {
        showSetupProblem(problem);
        return;
    }
    const std::optional<GpuCard> chosen = card();
    // Calibrated against the measured run's set-up, projected to this one.
    m_result = makeProjectedPlan(*spec, current, chosen, m_calibration);
    const uint64_t capacity = chosen ? chosen->capacityBytes : 0;
    showVerdict(current, capacity);
    m_ui->details->setText(detailsText(*spec, current, capacity));
    showCalibration();
    showConfig();
    emit planChanged();
}

void WhatIfView::enableControls(bool haveModel)
{
    for (QWidget* control : setupControls())
        control->setEnabled(haveModel);
    m_ui->measuredRun->setEnabled(haveModel && m_device);
    if (!haveModel)
        return;
    m_ui->checkpointEvery->setEnabled(m_ui->checkpointing->currentIndex() == static_cast<int>(Checkpointing::EveryK));
    for (QWidget* serving :
        std::initializer_list<QWidget*> { m_ui->kvDtype, m_ui->weights, m_ui->gpuMemoryUtilization })
        serving->setEnabled(m_ui->inference->isChecked());
}

void WhatIfView::showSetupProblem(const std::string& problem)
{
    m_ui->verdict->setText(QString::fromStdString(problem));
    m_ui->details->clear();
    m_result = PlanResult {};
    m_result.setupProblem = problem;
    showConfig();
    emit planChanged();
}

// The bars (a GPU of each pipeline stage when there are several) and the verdict above them.
void WhatIfView::showVerdict(const TrainingSetup& current, uint64_t capacity)
{
    m_ui->bars->setPlan(m_result.shown.perGpu, capacity, current.totalGpus());
    std::vector<BandBytes> stages;
    if (m_result.shown.stages.size() > 1) {
        for (const StageMemory& stage : m_result.shown.stages)
            stages.push_back(stage.perGpu);
    }
    m_ui->bars->setStages(std::move(stages));
    const uint64_t total = m_result.shown.totalPerGpu;
    // Serving is held to vLLM's share of the card.
    QString words = QString::fromStdString(fitWords(total, usableBytes(current, capacity)));
    words[0] = words[0].toUpper();
    m_ui->verdict->setText(QStringLiteral("%1 per GPU%2: %3.")
                               .arg(QString::fromStdString(formatBytes(total)),
                                   m_result.shown.stages.size() > 1
                                       ? QStringLiteral(" (stage %1, the busiest)").arg(m_result.shown.busiestStage)
                                       : QString(),
                                   words));
}

QString WhatIfView::detailsText(const ModelSpec& spec, const TrainingSetup& current, uint64_t capacity) const
{
    QString details = QStringLiteral("Peak in %1; host memory per node %2.")
                          .arg(text(peakPhaseName(m_result.shown.peakPhase)),
                              QString::fromStdString(formatBytes(m_result.shown.hostBytes)));
    if (m_result.serving)
        details = servingText(current);
    else if (m_result.maxMicroBatch > 0)
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
    if (!spec.hasDimensions() && m_calibration)
        details += QStringLiteral(" A parameter count gives no layer sizes: the activations stay as the run measured "
                                  "them; open the model's config.json to see batch and sequence changes.");
    return details;
}

// vLLM's answer: the tokens of KV cache that fit, as sequences of this length or one context each.
QString WhatIfView::servingText(const TrainingSetup& current) const
{
    const ServingFit& fit = *m_result.serving;
    return QStringLiteral("vLLM at %1 of the card: %2 tokens of KV cache (%3 per token per GPU), %4 sequences "
                          "of %5 tokens, or %6 tokens each for %7; this batch needs %8.")
        .arg(fit.gpuMemoryUtilization, 0, 'f', 2)
        .arg(fit.kvTokens)
        .arg(QString::fromStdString(formatBytes(m_result.shown.servingMemory.kvBytesPerToken)))
        .arg(fit.maxSequences)
        .arg(current.sequence)
        .arg(fit.maxContext)
        .arg(current.microBatch)
        .arg(fit.neededUtilization, 0, 'f', 2);
}

void WhatIfView::showCalibration()
{
    m_ui->calibration->setVisible(m_calibration || !m_mismatch.isEmpty());
    if (m_calibration)
        m_ui->calibration->setText(QStringLiteral("Measured run: %1. Changes are projected from the measurement.")
                                       .arg(QString::fromStdString(m_calibration->summary)));
    else
        m_ui->calibration->setText(m_mismatch);
    m_ui->bars->setCalibration(m_calibration);
}

void WhatIfView::showWithoutModel()
{
    m_result = PlanResult {};
    m_ui->calibration->hide();
    m_ui->bars->setCalibration(std::nullopt);
    m_ui->bars->setStages({});
    const std::optional<GpuCard> chosen = card();
    const uint64_t capacity = chosen ? chosen->capacityBytes : 0;
    const QString ask
        = QStringLiteral("To see what a change would do, tell the planner the model: open its config.json "
                         "(drop it on the window), pick it above, or type its parameter count.");
    if (!m_device) {
        m_ui->bars->setPlan(BandBytes {}, capacity, 1);
        m_ui->verdict->setText(QStringLiteral("Which model?"));
        m_ui->details->setText(ask);
    } else {
        // The run's own bands at its peak: the starting point every what-if is projected from.
        const BandBytes bands = measuredBands(*m_device);
        m_ui->bars->setPlan(bands, capacity, 1);
        const uint64_t total = bandTotal(bands);
        m_ui->verdict->setText(
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
        m_ui->details->setText(details);
    }
    m_ui->config->clear();
    emit planChanged();
}

} // namespace oomlens
