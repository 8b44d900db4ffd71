#pragma once

#include "core/diagnosis.h"
#include "opening/loadedcase.h"

#include <QScrollArea>

class QVBoxLayout;

namespace oomlens {

class DiagnosisCard;
struct CardReconciliation;

// The first page of a case: diagnosis cards, then the evidence the user brought in plain words
// (the OOM message number by number, memory_summary, nvidia-smi, allocator settings, inputs).
class OverviewPage : public QScrollArea
{
    Q_OBJECT
public:
    explicit OverviewPage(QWidget* parent = nullptr);
    void setCase(LoadedCasePtr loaded);
    QList<DiagnosisCard*> cards() const;

signals:
    void evidenceActivated(const oomlens::EvidenceLink& link);

private:
    void addGlance(const LoadedCase& loaded);
    void addDiagnoses(const LoadedCase& loaded);
    void addOomMessages(const LoadedCase& loaded);
    void addSummaries(const LoadedCase& loaded);
    void addProcesses(const LoadedCase& loaded);
    void addCard(const LoadedCase& loaded);
    void addServing(const LoadedCase& loaded);
    void addOomChecks(const CardReconciliation& card, QWidget* section, QVBoxLayout* layout);
    void addAllocatorSettings(const LoadedCase& loaded);
    void addSnapshots(const LoadedCase& loaded);
    void addHistory(const Snapshot& snapshot, const DeviceAnalysis& device);
    void addInputs(const LoadedCase& loaded);
    void addHeading(const QString& text);
    QWidget* addLabel(const QString& text, bool rich = false);

    QWidget* m_content = nullptr;
    QVBoxLayout* m_layout = nullptr;
    LoadedCasePtr m_case;
};

} // namespace oomlens
