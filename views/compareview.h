#pragma once

#include "views/comparecomputation.h"
#include "views/jobtracker.h"

#include <QList>
#include <QWidget>

#include <memory>

class QCheckBox;
class QComboBox;
class QDialog;
class QSortFilterProxyModel;
class QSpinBox;
class QTableView;
class QTableWidget;

namespace Ui {
class CompareView;
}

namespace oomlens {

class CompareOverlay;
class CompareSitesModel;

// Two runs side by side: two open snapshots (before and after a fix), or two step windows of one
// run (the leak check). Shows core's Comparison: the sentence, each side's peak, the category
// deltas at the peak and the OOM, both timelines on one axis, the matched sites (sortable, new
// and vanished marked, double-click for the whole stack) and, for windows, what the first window
// left alive. Computed on the thread pool so a big pair never freezes the window. The layout is
// views/compareview.ui.
class CompareView : public QWidget
{
    Q_OBJECT
public:
    enum Mode { SnapshotsMode, WindowsMode };
    enum CategoryColumn {
        CategoryNameColumn,
        CategoryAColumn,
        CategoryBColumn,
        CategoryDeltaColumn,
        CategoryOomDeltaColumn,
        CategoryColumnCount
    };

    explicit CompareView(QWidget* parent = nullptr);
    ~CompareView() override;

    // The open cases' snapshots the pickers offer; the current picks are kept where still open.
    void setCandidates(const QList<CompareCandidate>& candidates);
    const QList<CompareCandidate>& candidates() const { return m_candidates; }
    // Picks and compares (asynchronously: wait for `compared`).
    void compareSnapshots(int candidateA, int candidateB);
    void compareWindows(int candidate, const StepWindow& first, const StepWindow& second);

    bool isBusy() const { return m_busy; }
    Mode mode() const;
    std::shared_ptr<const Comparison> comparison() const { return m_computed.comparison; }
    // The case whose report carries the comparison section (File ▸ Export Report…).
    LoadedCasePtr reportCase() const { return m_computed.reportCase; }
    QString summaryText() const;
    QString peakText(bool sideB) const;

    QComboBox* modeBox() const;
    QComboBox* pickerA() const;
    QComboBox* pickerB() const;
    QCheckBox* alignSteps() const;
    QTableWidget* categoryTable() const;
    QTableView* sitesView() const;
    QSortFilterProxyModel* sitesProxy() const { return m_proxy; }
    CompareSitesModel* sitesModel() const { return m_sites; }
    CompareOverlay* overlay() const;
    QTableWidget* survivingTable() const;
    // Shows the whole stack of the site in the sites table's `row` (as sorted on screen).
    QDialog* showStack(int row);

signals:
    void compared();

private:
    void setUpSplitters();
    void setUpLists();
    void connectPickers();
    void swapPicks();
    QList<QSpinBox*> stepBoxes() const;
    void schedule();
    void run();
    void showResult(const ComputedComparison& computed);
    void showOverlay();
    void fillCategories(const Comparison& comparison);
    void fillSurviving(const Comparison& comparison);
    void updateStepRanges();
    CompareRequest request() const;

    std::unique_ptr<Ui::CompareView> m_ui;
    CompareSitesModel* m_sites = nullptr;
    QSortFilterProxyModel* m_proxy = nullptr;
    QList<CompareCandidate> m_candidates;
    ComputedComparison m_computed;
    bool m_busy = false;
    bool m_scheduled = false;
    JobTracker m_jobs; // last: destroyed first, so that no result reaches the widgets
};

} // namespace oomlens
