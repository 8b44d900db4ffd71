#pragma once

#include "core/analysis/snapshotanalysis.h"
#include "core/planner/plancalibration.h"
#include "core/planner/planresult.h"

#include <QWidget>

#include <optional>

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QLineEdit;
class QPlainTextEdit;
class QPushButton;
class QSpinBox;

namespace oomlens {

class WhatIfBars;

// "What if": a training set-up as controls and its memory per GPU as stacked bars in the
// timeline's band colours, with the card's capacity across them and the verdict in words. With
// pipeline parallelism the bars are the stages (a GPU of each); with serving checked, the KV
// cache is a band and the verdict is vLLM's (the tokens of cache that fit).
// Every change recomputes the plan on the spot (microseconds: no thread). With a measured run
// (a snapshot's device), the bars start from the measured bands and every change is projected
// from them (measured x formula(what-if) / formula(run)).
// There is no default model: until one is given (a config.json opened in the case, a known
// model picked, or a parameter count typed) the bars are the run's own measured bands and the
// set-up waits; a model whose parameters cannot be the run's is planned but not calibrated.
class WhatIfView : public QWidget
{
    Q_OBJECT
public:
    explicit WhatIfView(QWidget* parent = nullptr);

    // The snapshot's device whose peak the current controls describe; nullptr forgets it.
    void setMeasured(std::shared_ptr<const SnapshotAnalysis> analysis, int32_t device);
    // Takes the current controls as the measured run's set-up (recalibrates).
    void useControlsAsMeasuredRun();

    void setModel(const QString& preset);
    // "7B", "350M", "1.3e9": a model known by its parameter count (model states, no activations).
    void setParameterCount(const QString& text);
    // A model is chosen: there is a plan to show (else the bars are the measured run's own).
    bool hasModel() const { return model().has_value(); }
    // Models read from config.json files (each with its file's name), listed above the presets in
    // place of the previous ones; the first is chosen and the measured run, if any, recalibrated.
    void setConfigModels(const std::vector<std::pair<planner::ModelSpec, QString>>& models);
    void setSetup(const planner::TrainingSetup& setup);
    void setCard(const QString& name);

    planner::TrainingSetup setup() const;
    const planner::PlanResult& result() const { return m_result; }
    const std::optional<planner::PlanCalibration>& calibration() const { return m_calibration; }
    // Why the chosen model was not calibrated against the measured run (modelMismatch); empty if it was.
    QString mismatch() const { return m_mismatch; }
    QString verdict() const;
    // The configuration shown in the config pane for the current set-up: ds_config.json, the FSDP
    // snippet or the accelerate YAML, as the pane's chooser says. "Copy config" copies it.
    QString configText() const;
    // The user changed a control since the view was made: the exported report then carries this
    // plan (the set-up chosen from a measured run, not calibrating defaults, is what is worth sending).
    bool edited() const { return m_edited; }

signals:
    void planChanged();

private:
    void recompute();
    // No model to plan with: the measured run's bands, and the question for a model.
    void showWithoutModel();
    void showConfig();
    std::optional<planner::ModelSpec> model() const;
    // The set-up's controls, which mean nothing until there is a model.
    QList<QWidget*> setupControls() const;
    std::optional<planner::GpuCard> card() const;

    QComboBox* m_model = nullptr;
    QLineEdit* m_parameters = nullptr;
    QSpinBox* m_batch = nullptr;
    QSpinBox* m_sequence = nullptr;
    QComboBox* m_precision = nullptr;
    QComboBox* m_optimizer = nullptr;
    QSpinBox* m_accumulation = nullptr;
    QComboBox* m_checkpointing = nullptr;
    QSpinBox* m_checkpointEvery = nullptr; // K of "every K-th block"
    QComboBox* m_attention = nullptr;
    QSpinBox* m_gpus = nullptr;
    QSpinBox* m_nodes = nullptr;
    QComboBox* m_zero = nullptr;
    QComboBox* m_offload = nullptr;
    QSpinBox* m_loraRank = nullptr;
    QCheckBox* m_qlora = nullptr;
    QComboBox* m_loraTargets = nullptr;
    // Model parallelism (Megatron's layout) and serving.
    QSpinBox* m_tp = nullptr;
    QCheckBox* m_sequenceParallel = nullptr;
    QSpinBox* m_cp = nullptr;
    QSpinBox* m_pp = nullptr;
    QSpinBox* m_vpp = nullptr;
    QSpinBox* m_microbatches = nullptr;
    QSpinBox* m_ep = nullptr;
    QCheckBox* m_distributedOptimizer = nullptr;
    QCheckBox* m_inference = nullptr;
    QComboBox* m_kvDtype = nullptr;
    QComboBox* m_weights = nullptr;
    QDoubleSpinBox* m_gpuUtilization = nullptr;
    QComboBox* m_card = nullptr;
    QLabel* m_verdict = nullptr;
    QLabel* m_details = nullptr;
    QLabel* m_calibrationLabel = nullptr;
    QComboBox* m_configKind = nullptr;
    QPushButton* m_measuredRun = nullptr;
    QPlainTextEdit* m_config = nullptr;
    WhatIfBars* m_bars = nullptr;

    std::shared_ptr<const SnapshotAnalysis> m_analysis;
    const DeviceAnalysis* m_device = nullptr;
    std::optional<planner::PlanCalibration> m_calibration;
    QString m_mismatch;
    std::vector<planner::ModelSpec> m_configModels;
    planner::PlanResult m_result;
    bool m_updating = false;
    bool m_edited = false;
};

} // namespace oomlens
