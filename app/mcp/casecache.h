#pragma once

#include "app/mcp/callcontrol.h"
#include "core/case.h"
#include "core/caseanalysis.h"
#include "core/job/jobsummary.h"
#include "opening/inputstamps.h"

#include <nlohmann/json.hpp>

#include <atomic>
#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

namespace oomlens::mcp {

// What an agent asks about: files (and pasted text) read together as one case, as `oomlens
// diagnose` reads its INPUTs, for one device.
struct CaseRequest
{
    std::vector<std::string> paths; // as given; folders stand for their snapshot files
    std::string text; // pasted traceback, log or memory_summary(); empty for none
    std::optional<int32_t> device;
};

// A case the server keeps for an agent's next question: read and analyzed the way `diagnose`
// and `report` do it (opening/opening.h; several snapshot files are the ranks of one job, the
// failing rank diagnosed in full), with the lines saying which inputs failed and its
// `diagnose --json` document once made.
struct CachedCase
{
    Case input;
    CaseAnalysis analysis;
    std::optional<JobSummary> job;
    // "oomlens: PATH: reason", one per input that failed (opening/inputfailure.h's words: an agent
    // reads what a terminal user would).
    std::vector<std::string> errorLines;
    int failures = 0; // inputs that could not be read (a broken sidecar is only a warning)

    // The snapshot read from `path` (compared as an absolute path), or -1.
    int snapshotIndexOf(const std::string& path) const;

    // The `diagnose --json` document, made on first use and kept with the case: building it walks
    // every allocation's stack (compiled regions), ~0.9 s for a 300k-event trace, which an agent
    // asking again should not pay twice. Two calls asking at once build it once.
    const nlohmann::ordered_json& diagnoseDocument() const;

private:
    mutable std::mutex m_documentMutex;
    mutable std::optional<nlohmann::ordered_json> m_diagnoseDocument;
};

// The last few cases read, so that an agent's next question about the same files (diagnose,
// then live_at at the OOM, then the stacks) does not decode a big snapshot again. Bounded by
// count, oldest use evicted first; an entry whose files changed on disk (size or time) is read
// anew. Shared by the calls running at once (mcpserver.h): every member takes the lock, which is
// never held while a case is read.
class CaseCache
{
public:
    explicit CaseCache(size_t capacity = 3);

    // The case for `request`: from the cache when the same files, text and device were read
    // before and are unchanged, else read now. A case some of whose inputs failed is returned
    // (with its error lines) but not kept.
    // Throws CallCancelled when `control` is cancelled while the case is read; nothing is kept then.
    std::shared_ptr<const CachedCase> load(const CaseRequest& request, const CallControl& control = {});

    // A snapshot file's analysis for `device`: from any cached case that read that file (the
    // snapshot's analysis depends only on it and the device), else the file read alone.
    struct SnapshotRef
    {
        std::shared_ptr<const CachedCase> owner;
        int index = -1; // into owner->input.snapshots / owner->analysis.snapshots; -1: not a snapshot
    };
    SnapshotRef snapshot(const std::string& path, std::optional<int32_t> device, const CallControl& control = {});

    size_t size() const;
    size_t capacity() const { return m_capacity; }
    uint64_t reads() const { return m_reads; } // cases read from disk, for tests and logs

private:
    struct Entry
    {
        std::vector<InputStamp> files;
        std::string text;
        std::optional<int32_t> device;
        std::shared_ptr<const CachedCase> loaded;
    };
    std::shared_ptr<const CachedCase> read(const CaseRequest& request, const CallControl& control);
    void keep(Entry entry); // with the lock held

    const size_t m_capacity;
    mutable std::mutex m_mutex;
    std::list<Entry> m_entries; // most recently used first
    std::atomic<uint64_t> m_reads { 0 };
};

} // namespace oomlens::mcp
