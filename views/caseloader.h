#pragma once

#include "views/loadedcase.h"

#include <QByteArray>
#include <QHash>
#include <QList>
#include <QObject>
#include <QStringList>

#include <atomic>
#include <functional>
#include <memory>

namespace oomlens {

// A file to read, or text the user pasted or dropped.
struct LoadRequest
{
    QString path; // file path; empty for pasted text
    QByteArray text; // pasted or dropped text when path is empty
    static LoadRequest file(const QString& path) { return { path, {} }; }
    static LoadRequest pasted(const QByteArray& text) { return { {}, text }; }
};

struct LoadOutcome
{
    LoadedCasePtr loaded; // null when cancelled or when nothing could be read
    QStringList errors; // one line per bad input of this load
    bool cancelled = false;
};

// Reads and analyzes inputs off the GUI thread. Each load gets a job id; the caller keeps the
// id of the load it still wants and ignores the rest (a superseded load's result is dropped).
class CaseLoader : public QObject
{
    Q_OBJECT
public:
    explicit CaseLoader(QObject* parent = nullptr);
    ~CaseLoader() override;

    // `base` is the case the inputs are added to (a copy is extended); null starts a new case.
    // With no requests the base case is analyzed again (new settings: device, category rules).
    int start(LoadedCasePtr base, const QList<LoadRequest>& requests, const QString& title,
        const AnalysisOptions& options = {});
    void cancel(int jobId);
    void cancelAll();
    int runningCount() const { return static_cast<int>(m_jobs.size()); }
    // Blocks until every running job has finished; for tests and shutdown.
    void waitForAll();

    // The work itself, synchronous; runs in the worker and in tests.
    static LoadOutcome load(LoadedCasePtr base, const QList<LoadRequest>& requests, const QString& title,
        const std::atomic_bool& cancel, const std::function<void(int, const QString&)>& progress,
        const AnalysisOptions& options = {});

signals:
    void progressChanged(int jobId, int permille, const QString& text);
    void finished(int jobId, const oomlens::LoadOutcome& outcome);

private:
    struct Job;
    QHash<int, std::shared_ptr<Job>> m_jobs;
    int m_nextId = 1;
};

} // namespace oomlens
