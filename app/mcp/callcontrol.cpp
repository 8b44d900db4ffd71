#include "app/mcp/callcontrol.h"

#include "opening/opening.h"

namespace oomlens::mcp {

namespace {

// A notification per percent at most: a 180 MB snapshot reports its bytes thousands of times.
constexpr int reportStep = 10;

} // namespace

CallControl::CallControl(const std::atomic_bool* cancel, Report report)
    : m_cancel(cancel)
    , m_report(std::move(report))
{ }

void CallControl::stopIfCancelled() const
{
    if (cancelled())
        throw CallCancelled {};
}

void CallControl::report(int progress, const std::string& message) const
{
    if (!m_report)
        return;
    const std::lock_guard lock(m_state->mutex);
    const bool newStage = message != m_state->lastMessage;
    if (progress <= m_state->last || (progress < total && !newStage && progress < m_state->last + reportStep))
        return;
    m_state->last = progress;
    m_state->lastMessage = message;
    // Under the lock: two threads' reports reach the client in increasing order.
    m_report(progress, total, message);
}

void CallControl::attachTo(OpenOptions& options) const
{
    options.cancel = m_cancel;
    options.analysis.cancel = m_cancel;
    if (!m_report)
        return;
    const CallControl self = *this;
    options.progress = [self](int permille, const std::string& text) {
        bool job = false;
        {
            const std::lock_guard lock(self.m_state->mutex);
            job = self.m_state->job;
        }
        self.report(job ? total / 2 + permille / 2 : permille, text);
    };
    options.rankProgress = [self](size_t done, size_t ranks) {
        {
            const std::lock_guard lock(self.m_state->mutex);
            self.m_state->job = true;
        }
        const int progress
            = ranks == 0 ? 0 : static_cast<int>(static_cast<double>(total / 2) * double(done) / double(ranks));
        self.report(progress, "Summarizing the job's " + std::to_string(ranks) + " ranks…");
    };
}

} // namespace oomlens::mcp
