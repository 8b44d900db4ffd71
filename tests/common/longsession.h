#pragma once

#include <QString>

#include <vector>

namespace oomlens::test {

// A snapshot written by bench/gen_snapshot.py for a long-session test, and what product.md
// section 6 allows a case of its size to hold: the file + 100 bytes per trace event.
struct GeneratedSnapshot
{
    QString path; // empty when the generator failed (its stderr was logged)
    qint64 bytes = 0;
    qint64 events = 0;
    double budgetMiB() const { return (static_cast<double>(bytes) + 100.0 * static_cast<double>(events)) / 1048576.0; }
};

// Runs gen_snapshot.py --out DIR/NAME OPTIONS... and reads the event count it prints.
GeneratedSnapshot generateSnapshot(const QString& dir, const QString& name, const QStringList& options);

// Resident memory of a process (VmRSS from /proc/PID/status; 0 for this process), in MiB.
double residentMiB(qint64 pid = 0);

// The resident memory of another process once it has stopped changing (the same figure over
// 100 ms, at most 5 s): what a server holds at rest between calls, after what it releases on
// a thread of its own (core/backgroundrelease.h: the file's mapping, the decoder's tables).
double settledResidentMiB(qint64 pid);

// A memory bound for a long session. After the warm-up (fonts, styles, Qt's and glibc's own caches
// filled, every input read once) a session that holds nothing per round stays level; the rounds
// after it may add at most one case's budget in all. A session that kept every closed case fails
// at the first round past the warm-up, and one that keeps a part of each fails once the parts add
// up to a case: more than budget / (rounds after the warm-up) per round.
struct MemoryBound
{
    double warmMiB = 0;
    double endMiB = 0;
    double toleranceMiB = 0;
    double growthMiB() const { return endMiB - warmMiB; }
    bool holds() const { return growthMiB() <= toleranceMiB; }
    QString describe(int warmRound, int endRound) const;
};

// AddressSanitizer keeps freed memory in its quarantine (256 MiB by default) and never returns it,
// so resident memory says nothing about leaks there; LeakSanitizer at exit is that build's check.
constexpr bool residentMemoryIsMeaningful()
{
#if defined(__SANITIZE_ADDRESS__)
    return false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
    return false;
#else
    return true;
#endif
#else
    return true;
#endif
}

// How long a long-session test runs: `ciDefault` unless the environment variable `variable`
// (OOMLENS_LONG_SESSION_ROUNDS, OOMLENS_LONG_SESSION_CALLS) names another count; bench/README.md
// gives the full counts' figures.
int longSessionCount(const char* variable, int ciDefault);

} // namespace oomlens::test
