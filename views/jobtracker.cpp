#include "views/jobtracker.h"

#include <QMetaObject>
#include <QPointer>
#include <QtGlobal>

#include <chrono>
#include <limits>
#include <mutex>

namespace oomlens::jobtracking {

// The way from the workers to the tracker: letters are queued calls to the tracker, posted under
// the lock its destructor takes. Once it is gone nothing more is posted, and what was posted
// before goes with it (Qt discards the pending events of a destroyed object).
struct Mailbox
{
    std::mutex mutex;
    JobTracker* tracker = nullptr;

    void send(std::function<void(JobTracker&)> letter)
    {
        const std::lock_guard lock(mutex);
        if (!tracker)
            return;
        JobTracker* to = tracker;
        QMetaObject::invokeMethod(
            to, [to, letter = std::move(letter)] { letter(*to); }, Qt::QueuedConnection);
    }
};

struct Job
{
    int id = 0;
    std::atomic_bool cancel = false;
    std::atomic<int64_t> lastProgressMs = std::numeric_limits<int64_t>::min() / 2;
    std::shared_ptr<Mailbox> mailbox;
};

} // namespace oomlens::jobtracking

namespace oomlens {

using jobtracking::Job;

namespace {

// A progress bar needs no more than 25 updates a second; a job may report thousands.
constexpr int64_t progressIntervalMs = 40;

int64_t nowMs()
{
    using namespace std::chrono;
    return duration_cast<milliseconds>(steady_clock::now().time_since_epoch()).count();
}

} // namespace

JobContext::JobContext(std::shared_ptr<Job> job)
    : m_job(std::move(job))
{ }

int JobContext::id() const
{
    return m_job->id;
}

bool JobContext::cancelled() const
{
    return m_job->cancel.load();
}

const std::atomic_bool& JobContext::cancelFlag() const
{
    return m_job->cancel;
}

void JobContext::post(std::function<void()> onGuiThread) const
{
    m_job->mailbox->send([id = m_job->id, onGuiThread = std::move(onGuiThread)](JobTracker& tracker) {
        if (tracker.isWanted(id))
            onGuiThread();
    });
}

void JobContext::progress(int done, int total, const QString& text) const
{
    const int64_t now = nowMs();
    const bool last = done >= total;
    int64_t previous = m_job->lastProgressMs.load();
    // Several threads may report at once (a job's ranks): one of them wins the interval.
    if (!last && (now - previous < progressIntervalMs || !m_job->lastProgressMs.compare_exchange_strong(previous, now)))
        return;
    m_job->mailbox->send([id = m_job->id, done, total, text](JobTracker& tracker) {
        if (tracker.isWanted(id))
            emit tracker.progressChanged(id, done, total, text);
    });
}

void JobContext::finish(std::function<void(bool cancelled)> deliver) const
{
    m_job->mailbox->send(
        [id = m_job->id, deliver = std::move(deliver)](JobTracker& tracker) { tracker.ended(id, deliver); });
}

JobTracker::JobTracker(QObject* parent)
    : QObject(parent)
    , m_mailbox(std::make_shared<jobtracking::Mailbox>())
{
    m_mailbox->tracker = this;
}

JobTracker::~JobTracker()
{
    {
        const std::lock_guard lock(m_mailbox->mutex);
        m_mailbox->tracker = nullptr;
    }
    for (const Entry& entry : std::as_const(m_jobs))
        entry.job->cancel = true;
}

std::shared_ptr<Job> JobTracker::newJob()
{
    auto job = std::make_shared<Job>();
    job->id = m_nextId++;
    job->mailbox = m_mailbox;
    m_jobs.insert(job->id, Entry { job, {}, true });
    return job;
}

void JobTracker::cancel(int id)
{
    if (const auto it = m_jobs.constFind(id); it != m_jobs.cend())
        it->job->cancel = true;
}

void JobTracker::cancelAll()
{
    for (const Entry& entry : std::as_const(m_jobs))
        entry.job->cancel = true;
}

void JobTracker::drop(int id)
{
    if (const auto it = m_jobs.find(id); it != m_jobs.end()) {
        it->wanted = false;
        it->job->cancel = true;
    }
}

void JobTracker::dropAll()
{
    for (Entry& entry : m_jobs) {
        entry.wanted = false;
        entry.job->cancel = true;
    }
}

bool JobTracker::isWanted(int id) const
{
    const auto it = m_jobs.constFind(id);
    return it != m_jobs.cend() && it->wanted;
}

void JobTracker::waitForAll()
{
    const QList<Entry> running = m_jobs.values();
    for (Entry entry : running)
        entry.future.waitForFinished();
}

void JobTracker::ended(int id, const std::function<void(bool)>& deliver)
{
    const auto it = m_jobs.find(id);
    if (it == m_jobs.end())
        return;
    const Entry entry = it.value();
    m_jobs.erase(it);
    // Delivering may start the next job, or end the tracker's owner.
    const QPointer<JobTracker> alive(this);
    if (entry.wanted && deliver)
        deliver(entry.job->cancel.load());
    if (alive && m_jobs.isEmpty())
        emit idle();
}

void JobTracker::warnFailed(int id, const char* what)
{
    qWarning("oomlens: background job %d failed, nothing delivered: %s", id, what);
}

} // namespace oomlens
