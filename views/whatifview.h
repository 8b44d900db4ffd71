#pragma once

#include "core/analysis/snapshotanalysis.h"
#include "core/planner/plancalibration.h"
#include "core/planner/planresult.h"

#include <QWidget>

#include <memory>
#include <optional>

namespace Ui {
class WhatIfView;
}

namespace oomlens {

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
// The form is views/whatifview.ui.
class WhatIfView : public QWidget
{
    Q_OBJECT
public:
    explicit WhatIfView(QWidget* parent = nullptr);
    ~WhatIfView() override;

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
    void fillModels();
    void fillCoreChoices();
    void fillCards();
    void styleResults();
    void connectModel();
    void connectSetup();
    void connectConfig();
    void recompute();
    void enableControls(bool haveModel);
    void showSetupProblem(const std::string& problem);
    void showVerdict(const planner::TrainingSetup& current, uint64_t capacity);
    QString detailsText(const planner::ModelSpec& spec, const planner::TrainingSetup& current, uint64_t capacity) const;
    QString servingText(const planner::TrainingSetup& current) const;
    void showCalibration();
    // No model to plan with: the measured run's bands, and the question for a model.
    void showWithoutModel();
    void showConfig();
    std::optional<planner::ModelSpec> model() const;
    // The set-up's controls, which mean nothing until there is a model.
    QList<QWidget*> setupControls() const;
    std::optional<planner::GpuCard> card() const;

    std::unique_ptr<Ui::WhatIfView> m_ui;
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
