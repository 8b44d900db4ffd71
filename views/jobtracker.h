#pragma once

#include <QFuture>
#include <QHash>
#include <QObject>
#include <QString>
#include <QtConcurrent/QtConcurrentRun>

#include <atomic>
#include <exception>
#include <functional>
#include <memory>
#include <type_traits>
#include <utility>

namespace oomlens {

class JobTracker;

namespace jobtracking {
struct Job;
struct Mailbox;
} // namespace jobtracking

// What a job running on the thread pool sees of the tracker that started it. Copies share the job.
class JobContext
{
public:
    int id() const;
    // Set once the job is cancelled or dropped, or its tracker destroyed: long work polls it and
    // stops early; work that cannot stop runs on and its result is then thrown away.
    bool cancelled() const;
    // The same flag, for code that takes one (OpenOptions::cancel).
    const std::atomic_bool& cancelFlag() const;
    // Runs `onGuiThread` later on the tracker's thread, if by then the job is still wanted and the
    // tracker still exists. Posted in order, and before the job's result.
    void post(std::function<void()> onGuiThread) const;
    // The tracker's progressChanged, at most every 40 ms, and always for the last step (done == total).
    void progress(int done, int total, const QString& text = {}) const;

private:
    friend class JobTracker;
    explicit JobContext(std::shared_ptr<jobtracking::Job> job);
    // Hands the end of the job to the tracker: `deliver` runs there if the job is still wanted.
    void finish(std::function<void(bool cancelled)> deliver) const;

    std::shared_ptr<jobtracking::Job> m_job;
};

// What the tracker knows of a job whose result it delivers.
struct JobEnd
{
    int id = 0;
    bool cancelled = false; // cancel() reached the job before its result was delivered
};

// Runs work off the GUI thread and hands its result back on it, in the shape of hotspot's
// JobTracker: each job has an id; a job that was dropped (or replaced by a newer one) never
// delivers, and nothing is delivered once the tracker is gone — a widget holds its tracker as a
// member, so a result never reaches a destroyed widget. The work gets a JobContext (its cancel
// flag, progress, in-between results) and must hold its own data (shared pointers, copies), never
// the widget: it may outlive the widget, which does not wait for it.
class JobTracker : public QObject
{
    Q_OBJECT
public:
    explicit JobTracker(QObject* parent = nullptr);
    // Drops every job (sets their cancel flags) without waiting for them.
    ~JobTracker() override;

    // Starts `work(const JobContext&) -> R` on the thread pool beside any job still running;
    // `deliver(R)` or `deliver(R, JobEnd)` runs on the tracker's thread with the result unless the
    // job was dropped first. Work that throws delivers nothing (a warning says why). `deliver` may
    // start jobs; it must not delete the tracker's owner there and then (deleteLater does).
    template <typename Work, typename Deliver> int start(Work work, Deliver deliver);
    // The newest request wins: drops every earlier job, then starts this one.
    template <typename Work, typename Deliver> int replace(Work work, Deliver deliver)
    {
        dropAll();
        return start(std::move(work), std::move(deliver));
    }

    // Asks the job to stop; its result (saying it stopped, if the work can) is still delivered.
    void cancel(int id);
    void cancelAll();
    // Asks the job to stop and throws its result away.
    void drop(int id);
    void dropAll();

    bool isWanted(int id) const;
    // Jobs still on the thread pool, dropped ones included.
    int runningCount() const { return int(m_jobs.size()); }
    bool isRunning() const { return !m_jobs.isEmpty(); }
    // Blocks until every job's work is done; their results arrive with the next event loop pass.
    void waitForAll();

signals:
    void progressChanged(int id, int done, int total, const QString& text);
    // The last job on the thread pool ended (delivered, or dropped and done).
    void idle();

private:
    friend class JobContext;
    struct Entry
    {
        std::shared_ptr<jobtracking::Job> job;
        QFuture<void> future;
        bool wanted = true;
    };

    std::shared_ptr<jobtracking::Job> newJob();
    void ended(int id, const std::function<void(bool)>& deliver);
    static void warnFailed(int id, const char* what);

    QHash<int, Entry> m_jobs;
    std::shared_ptr<jobtracking::Mailbox> m_mailbox;
    int m_nextId = 1;
};

template <typename Work, typename Deliver> int JobTracker::start(Work work, Deliver deliver)
{
    using Result = std::invoke_result_t<Work&, const JobContext&>;
    const std::shared_ptr<jobtracking::Job> job = newJob();
    const JobContext context(job);
    // `deliver` travels with the job and comes back with its result, to be called on the tracker's
    // thread only (JobTracker::ended).
    auto run = [context, work = std::move(work), deliver = std::move(deliver)]() mutable {
        std::shared_ptr<Result> result;
        try {
            result = std::make_shared<Result>(work(context));
        } catch (const std::exception& error) {
            warnFailed(context.id(), error.what());
            context.finish({});
            return;
        } catch (...) {
            warnFailed(context.id(), "not a std::exception");
            context.finish({});
            return;
        }
        context.finish([deliver = std::move(deliver), result, id = context.id()](bool cancelled) mutable {
            if constexpr (std::is_invocable_v<Deliver&, Result&&, const JobEnd&>)
                deliver(std::move(*result), JobEnd { id, cancelled });
            else
                deliver(std::move(*result));
        });
    };
    m_jobs[context.id()].future = QtConcurrent::run(std::move(run));
    return context.id();
}

} // namespace oomlens
