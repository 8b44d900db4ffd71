#pragma once

#include "views/comparecomputation.h"

#include <QFutureWatcher>
#include <QList>
#include <QWidget>

#include <memory>

class QCheckBox;
class QComboBox;
class QDialog;
class QLabel;
class QSortFilterProxyModel;
class QSpinBox;
class QStackedWidget;
class QTabWidget;
class QTableView;
class QTableWidget;

namespace oomlens {

class CompareOverlay;
class CompareSitesModel;

// Two runs side by side: two open snapshots (before and after a fix), or two step windows of one
// run (the leak check). Shows core's Comparison: the sentence, each side's peak, the category
// deltas at the peak and the OOM, both timelines on one axis, the matched sites (sortable, new
// and vanished marked, double-click for the whole stack) and, for windows, what the first window
// left alive. Computed on the thread pool so a big pair never freezes the window.
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
    AnalyzedCasePtr reportCase() const { return m_computed.reportCase; }
    QString summaryText() const;
    QString peakText(bool sideB) const;

    QComboBox* modeBox() const { return m_mode; }
    QComboBox* pickerA() const { return m_pickA; }
    QComboBox* pickerB() const { return m_pickB; }
    QCheckBox* alignSteps() const { return m_alignSteps; }
    QTableWidget* categoryTable() const { return m_categories; }
    QTableView* sitesView() const { return m_sitesView; }
    QSortFilterProxyModel* sitesProxy() const { return m_proxy; }
    CompareSitesModel* sitesModel() const { return m_sites; }
    CompareOverlay* overlay() const { return m_overlay; }
    QTableWidget* survivingTable() const { return m_surviving; }
    // Shows the whole stack of the site in the sites table's `row` (as sorted on screen).
    QDialog* showStack(int row);

signals:
    void compared();

private:
    void schedule();
    void run();
    void showResult(const ComputedComparison& computed);
    void showOverlay();
    void fillCategories(const Comparison& comparison);
    void fillSurviving(const Comparison& comparison);
    void updateStepRanges();
    CompareRequest request() const;

    QList<CompareCandidate> m_candidates;
    ComputedComparison m_computed;
    bool m_busy = false;
    bool m_scheduled = false;
    int m_generation = 0;
    QFutureWatcher<ComputedComparison>* m_watcher = nullptr;

    QComboBox* m_mode = nullptr;
    QStackedWidget* m_pickers = nullptr;
    QComboBox* m_pickA = nullptr;
    QComboBox* m_pickB = nullptr;
    QComboBox* m_pickRun = nullptr;
    QSpinBox* m_firstFrom = nullptr;
    QSpinBox* m_firstTo = nullptr;
    QSpinBox* m_secondFrom = nullptr;
    QSpinBox* m_secondTo = nullptr;
    QCheckBox* m_alignSteps = nullptr;
    QLabel* m_busyLabel = nullptr;
    QLabel* m_summary = nullptr;
    QLabel* m_peakA = nullptr;
    QLabel* m_peakB = nullptr;
    QTableWidget* m_categories = nullptr;
    CompareOverlay* m_overlay = nullptr;
    QTabWidget* m_lists = nullptr;
    CompareSitesModel* m_sites = nullptr;
    QSortFilterProxyModel* m_proxy = nullptr;
    QTableView* m_sitesView = nullptr;
    QTableWidget* m_surviving = nullptr;
};

} // namespace oomlens
