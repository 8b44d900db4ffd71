#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <string>

namespace oomlens {
struct OpenOptions;
}

namespace oomlens::mcp {

// Thrown where a cancelled call stops; the server sends no answer for it.
struct CallCancelled
{
};

// What a running tool call hears and says besides its arguments: whether the client cancelled
// it (notifications/cancelled), and how far it has come (notifications/progress, when the
// request carried a progress token). The default reports nowhere and is never cancelled: a call
// answered inline (the tests, the fuzz target).
class CallControl
{
public:
    // progress out of total, strictly increasing from one report to the next, and what is being done.
    using Report = std::function<void(int done, int outOf, const std::string& message)>;
    static constexpr int total = 1000;

    CallControl() = default;
    CallControl(const std::atomic_bool* cancel, Report report);

    bool cancelled() const { return m_cancel && m_cancel->load(std::memory_order_relaxed); }
    void stopIfCancelled() const;

    // The opening's cancel flag (the decoder and the analysis check it) and its progress callbacks,
    // fed into this call's progress: a job's ranks fill the first half and the failing rank's case
    // the second; a case alone all of it.
    void attachTo(OpenOptions& options) const;

private:
    void report(int progress, const std::string& message) const;

    const std::atomic_bool* m_cancel = nullptr;
    Report m_report;
    // Shared by the copies the opening keeps in its callbacks, which run on several threads.
    struct State
    {
        std::mutex mutex;
        int last = -1;
        std::string lastMessage;
        bool job = false; // ranks were counted: the case's progress is the second half
    };
    std::shared_ptr<State> m_state = std::make_shared<State>();
};

} // namespace oomlens::mcp
