#pragma once

#include "views/appsettings.h"
#include "views/caseloader.h"
#include "views/comparecomputation.h"

#include <QHash>
#include <QMainWindow>
#include <QPointer>

class QLabel;
class QProgressBar;
class QPushButton;
class QStackedWidget;
class QTabWidget;

namespace oomlens {

class CaseWidget;
class CompareView;
class EmptyStateWidget;
class ErrorBanner;
class JobView;
class MainMenus;
class RecentFiles;

// The application window: an empty state that says what to do, then one tab per case.
// Files, dropped text and pastes go to the current case (so an OOM message joins its
// snapshot); File ▸ Open, Ctrl+Shift+V and Ctrl+drop start a new case. Several snapshot files
// opened or dropped together are the ranks of one job and get a Job tab; View ▸ Compare puts two
// open snapshots (or two step windows of one) side by side in a Compare tab.
class MainWindow : public QMainWindow
{
    Q_OBJECT
public:
    explicit MainWindow(QWidget* parent = nullptr);
    ~MainWindow() override;

    // Opens the files as one new case (command line, File ▸ Open); a folder stands for its
    // snapshots and rank summaries. When they make a job (opening/jobfiles.h: two or more
    // snapshot files, or a rank summary) they open as a Job tab instead, the other files joining
    // the failing rank's case.
    void openFiles(const QStringList& paths);
    // Summarizes the rank files in a new Job tab (off the GUI thread), `beside` (a log, a
    // traceback) read with the failing rank; returns the tab.
    JobView* openJob(const QStringList& rankFiles, const QStringList& beside = {});
    // The Compare tab, made and filled with the open snapshots when there is none yet.
    CompareView* openCompare();
    // The open snapshots the Compare view can pick from, in tab order.
    QList<CompareCandidate> compareCandidates() const;
    // Adds files or text to `target`, or to a new case when target is null. No requests with a
    // target analyzes that case again under the current settings.
    void load(CaseWidget* target, const QList<LoadRequest>& requests, const QString& title);
    // Reads the clipboard as text; into the current case unless `newCase`.
    void pasteFromClipboard(bool newCase = false);

    // Case tabs only (not the Compare or Job tabs).
    int caseCount() const;
    int tabCount() const;
    QWidget* currentTab() const;
    CaseWidget* currentCase() const;
    CompareView* compareView() const;
    JobView* currentJob() const;
    CaseWidget* caseAt(int index) const;
    // A load is running, or a case it opened is still adding the text below its overview's
    // picture (OverviewPage::ensureFilled): what a caller waiting for a load to show waits for.
    bool isLoading() const;
    QString bannerText() const;
    CaseLoader* loader() const { return m_loader; }

    const AppSettings& settings() const { return m_settings; }
    // Stores the settings, recolours the views and re-analyzes every open case when the device
    // or the category rules changed.
    void applySettings(const AppSettings& settings);
    // Writes the current case as one self-contained HTML file; false with the banner set on error.
    // On a Compare tab the report is B's case (or the run's) with the comparison section; on a Job
    // tab it is the failing rank's case with the job section first.
    bool exportReport(const QString& path);

    // Writes PNGs of every view of the current case once loading is done, then emits
    // screenshotsWritten. Used by `oomlens --screenshot DIR FILE...` for the README.
    void setScreenshotDirectory(const QString& directory);
    QStringList writeScreenshots(const QString& directory);

signals:
    void loadFinished();
    void screenshotsWritten(bool ok);

protected:
    void dragEnterEvent(QDragEnterEvent* event) override;
    void dropEvent(QDropEvent* event) override;
    // Notes the window's first paint (views/startuptrace.h), then stops watching.
    bool eventFilter(QObject* watched, QEvent* event) override;
    void closeEvent(QCloseEvent* event) override;

private:
    struct Pending
    {
        QPointer<CaseWidget> target; // null: the load makes a new case
        bool newCase = true;
    };

    // Title of a new case: the first file's name, "+N" for the others.
    static QString titleFor(const QList<LoadRequest>& requests);
    // The example case ships as a Qt resource, which a build may leave out.
    static bool exampleAvailable();
    void connectMenus(MainMenus* menus);
    void onProgress(int jobId, int permille, const QString& text);
    void onTimelineReady(int jobId, const TimelineFirst& first);
    void onFinished(int jobId, const LoadOutcome& outcome);
    void showBanner(const QStringList& lines);
    void updateState();
    void openDialog(bool newCase);
    void openJobDialog();
    void openJobFolderDialog();
    void refreshCompareCandidates();
    // A word in the status bar when exactly two snapshot cases are open: they can be compared.
    void hintCompare();
    void openExample();
    void showSettings();
    void exportChartDialog();
    void exportReportDialog();
    void cancelLoads();
    void closeCase(int index);
    QString nextPasteTitle();
    // A new case's widget: the one built ahead while the window was idle, else a new one.
    CaseWidget* takeCaseWidget();

    CaseLoader* m_loader = nullptr;
    QHash<int, Pending> m_pending;
    int m_latestJob = 0;
    QStackedWidget* m_stack = nullptr;
    EmptyStateWidget* m_empty = nullptr;
    QTabWidget* m_cases = nullptr;
    ErrorBanner* m_banner = nullptr;
    QProgressBar* m_progress = nullptr;
    QLabel* m_progressText = nullptr;
    QPushButton* m_cancel = nullptr;
    RecentFiles* m_recent = nullptr;
    QString m_screenshotDirectory;
    int m_pasteCount = 0;
    AppSettings m_settings;
    // Built (and styled) right after the window's first paint, while a file given on the command
    // line is still being read: the first case then only fills it in.
    QPointer<CaseWidget> m_spareCase;
};

} // namespace oomlens
