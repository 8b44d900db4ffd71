#pragma once

#include "core/analysis/cardreconciliation.h"
#include "core/diagnosis.h"
#include "opening/analyzedcase.h"

#include <QEvent>
#include <QScrollArea>

#include <memory>
#include <optional>

class QVBoxLayout;

namespace oomlens {

class DiagnosisCard;
class TimelineData;
class TimelineThumbnail;

// The first page of a case: the failure at a glance, the memory picture of a snapshot (its
// timeline, what each device held, the call sites holding the peak), diagnosis cards, then the
// evidence the user brought in plain words (the OOM message number by number, memory_summary,
// nvidia-smi, allocator settings, inputs).
class OverviewPage : public QScrollArea
{
    Q_OBJECT
public:
    explicit OverviewPage(QWidget* parent = nullptr);
    void setCase(AnalyzedCasePtr loaded);
    // On screen, the page shows the glance and the memory picture first and adds the rest (the
    // diagnosis cards, the messages, the card, the inputs: word-wrapped rich text, slow to lay
    // out) once that has been painted; off screen it is whole as soon as setCase returns. This
    // completes it now.
    void ensureFilled();
    bool isFilled() const { return m_filled; }
    QList<DiagnosisCard*> cards();
    // The timeline of the device the memory picture is about, once the case widget has built it
    // (the same data as the Timeline tab's); a timeline of another device is ignored.
    void showTimeline(std::shared_ptr<const TimelineData> data);
    TimelineThumbnail* thumbnail() const { return m_thumbnail; }

signals:
    void evidenceActivated(const oomlens::EvidenceLink& link);
    // The picture was clicked: show the timeline itself.
    void timelineRequested();
    // Every section is on the page (ensureFilled).
    void filled();

protected:
    bool event(QEvent* event) override;

private:
    void addGlance(const AnalyzedCase& loaded);
    // The memory picture (memory over the run, each device's holding, the top call sites): kept
    // apart from the text sections so it can move as a block.
    void addMemoryPicture(const AnalyzedCase& loaded);
    void addDeviceHoldings(const SnapshotAnalysis& analysis);
    void addTopSites(const Snapshot& snapshot, const DeviceAnalysis& device);
    void addDiagnoses(const AnalyzedCase& loaded);
    void addOomMessages(const AnalyzedCase& loaded);
    void addMessageTitle(const OomMessage& message);
    void addMessageNumbers(const OomMessage& message);
    void addMessageTraceback(const TracebackInfo& traceback);
    void addSummaries(const AnalyzedCase& loaded);
    void addProcesses(const AnalyzedCase& loaded);
    void addCard(const AnalyzedCase& loaded);
    void addServing(const AnalyzedCase& loaded);
    void addOomChecks(const CardReconciliation& card, QWidget* section, QVBoxLayout* layout);
    void addAllocatorSettings(const AnalyzedCase& loaded);
    void addSnapshots(const AnalyzedCase& loaded);
    void addHistory(const Snapshot& snapshot, const DeviceAnalysis& device);
    void addInputs(const AnalyzedCase& loaded);
    void addHeading(const QString& text);
    QWidget* addLabel(const QString& text, bool rich = false);
    static QEvent::Type fillEvent();

    QWidget* m_content = nullptr;
    QVBoxLayout* m_layout = nullptr;
    AnalyzedCasePtr m_case;
    bool m_filled = true;
    TimelineThumbnail* m_thumbnail = nullptr;
    const DeviceAnalysis* m_pictureDevice = nullptr; // the device the picture is about
};

} // namespace oomlens
