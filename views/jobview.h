#pragma once

#include "core/job/jobsummary.h"
#include "opening/opening.h"
#include "views/jobtracker.h"

#include <QStringList>
#include <QWidget>

#include <memory>

class QLabel;
class QListWidget;
class QProgressBar;
class QPushButton;
class QTableWidget;

namespace oomlens {

class JobBars;

// A job of many rank files at once: per-rank peaks stacked by category against the card, the
// failing rank (or the one that came closest, flagged as such), the imbalance, the groups of
// ranks that look alike, the notes and a table of ranks. Summarized by core's worker pool off the
// GUI thread (opening/opening.h's openJob as a JobTracker job), with progress and cancel; a
// double-click on a rank opens its file as a case.
class JobView : public QWidget
{
    Q_OBJECT
public:
    enum Column {
        RankColumn,
        FileColumn,
        PeakColumn,
        ReservedColumn,
        CardColumn,
        OomColumn,
        GroupColumn,
        DiagnosisColumn,
        ColumnCount
    };

    explicit JobView(QWidget* parent = nullptr);

    // `beside`: the inputs given with the ranks (a log, a traceback), read into the failing rank's case.
    void start(const QStringList& rankFiles, const AnalysisOptions& options = {}, const QStringList& beside = {});
    void cancel();
    bool isBusy() const { return m_busy; }
    bool wasCancelled() const { return m_cancelled; }

    const QStringList& files() const { return m_files; }
    const JobSummary& summary() const { return m_summary; }
    // The failing rank read in full with the inputs given beside the ranks, for the report's
    // diagnosis; null when no rank could be read (or while summarizing). When the failing rank came
    // from a summary whose snapshot is not here (summary().failingSnapshotToCopy), no snapshot.
    LoadedCasePtr failingCase() const { return m_failingCase; }
    // The rank files and the inputs beside them that could not be read, unreadable ranks first.
    const std::vector<InputFailure>& failures() const { return m_failures; }
    QString headline() const;
    QTableWidget* ranksTable() const { return m_table; }
    JobBars* bars() const { return m_bars; }
    QListWidget* groups() const { return m_groups; }
    QListWidget* notes() const { return m_notes; }
    // The rank selected in the table or the chart; -1 for none.
    int selectedRank() const;
    void selectRank(int rankIndex);
    // Asks for the rank's file to be opened as an ordinary case (openRankRequested).
    void openRank(int rankIndex);

signals:
    void progressChanged(int done, int total);
    void finished();
    void openRankRequested(const QString& file);

private:
    QWidget* makeBusyRow();
    void makeHeadline(QLayout* layout);
    QWidget* makeRanksPane(QWidget* parent);
    QWidget* makeSidePane(QWidget* parent);
    void connectRanks();
    void showProgress(int done, int total);
    void summarized(const Opened& job, bool cancelled);
    void showJob(const Opened& job);
    void showFigures();
    void showGroupsAndNotes();
    void fillTable();
    void fillRank(int row);

    QStringList m_files;
    JobSummary m_summary;
    LoadedCasePtr m_failingCase;
    // Where the failing rank's snapshot was opened from (for a rank read from a summary, the
    // snapshot found beside it may lie elsewhere than the path in its summary).
    std::string m_failingSnapshot;
    std::vector<InputFailure> m_failures;
    bool m_busy = false;
    bool m_cancelled = false;

    QWidget* m_busyRow = nullptr;
    QProgressBar* m_progress = nullptr;
    QLabel* m_progressText = nullptr;
    QLabel* m_headline = nullptr;
    QLabel* m_figures = nullptr;
    JobBars* m_bars = nullptr;
    QTableWidget* m_table = nullptr;
    QListWidget* m_groups = nullptr;
    QListWidget* m_notes = nullptr;
    QPushButton* m_open = nullptr;
    JobTracker m_jobs; // last: destroyed first, so that nothing reaches the widgets above
};

} // namespace oomlens
