#include "app/mcp/casecache.h"

#include "core/job/jobjson.h"
#include "core/jsonexport.h"
#include "opening/inputrequests.h"
#include "opening/jobfiles.h"
#include "opening/opening.h"

#include <cstdio>
#include <stdexcept>

namespace oomlens::mcp {

int CachedCase::snapshotIndexOf(const std::string& path) const
{
    return snapshotReadFrom(input, path);
}

const nlohmann::ordered_json& CachedCase::diagnoseDocument() const
{
    const std::lock_guard lock(m_documentMutex);
    if (!m_diagnoseDocument) {
        m_diagnoseDocument = caseToJson(input, analysis);
        if (job)
            addJobToJson(*m_diagnoseDocument, *job);
    }
    return *m_diagnoseDocument;
}

CaseCache::CaseCache(size_t capacity)
    : m_capacity(capacity == 0 ? 1 : capacity)
{ }

size_t CaseCache::size() const
{
    const std::lock_guard lock(m_mutex);
    return m_entries.size();
}

std::shared_ptr<const CachedCase> CaseCache::read(const CaseRequest& request, const CallControl& control)
{
    ++m_reads;
    // Opened as `diagnose` opens its INPUTs (a job or one case, opening/opening.h), the pasted
    // text last. "-" is refused by the arguments: standard input is the protocol's.
    std::vector<LoadRequest> requests = requestsFor(request.paths);
    if (!request.text.empty())
        requests.push_back(LoadRequest::pasted(request.text));
    OpenOptions options;
    options.analysis.device = request.device;
    control.attachTo(options);
    Opened opened = openInputs(requests, options);
    if (opened.cancelled)
        throw CallCancelled {}; // what was decoded goes with `opened`, here
    if (!opened.loaded)
        throw std::runtime_error("the inputs were not opened");
    auto loaded = std::make_shared<CachedCase>();
    loaded->failures = opened.failedInputs();
    for (const InputFailure& failure : opened.failures) {
        loaded->errorLines.push_back(failureLine(failure, FailureReader::CommandLine));
        std::fprintf(stderr, "%s\n", loaded->errorLines.back().c_str()); // the server's log
    }
    loaded->input = std::move(opened.loaded->input);
    loaded->analysis = std::move(opened.loaded->analysis);
    loaded->job = std::move(opened.job);
    return loaded;
}

void CaseCache::keep(Entry entry)
{
    m_entries.push_front(std::move(entry));
    while (m_entries.size() > m_capacity)
        m_entries.pop_back();
}

std::shared_ptr<const CachedCase> CaseCache::load(const CaseRequest& request, const CallControl& control)
{
    const std::vector<InputStamp> files = stampInputs(expandFolders(request.paths));
    {
        const std::lock_guard lock(m_mutex);
        for (auto it = m_entries.begin(); it != m_entries.end(); ++it) {
            if (it->files != files || it->text != request.text || it->device != request.device)
                continue;
            std::shared_ptr<const CachedCase> found = it->loaded;
            m_entries.splice(m_entries.begin(), m_entries, it); // most recently used first
            return found;
        }
    }
    // Read without the lock: a ping or a cached question is answered meanwhile. Two calls asking
    // for the same new files at once both read them; the second kept replaces nothing it needs.
    std::shared_ptr<const CachedCase> loaded = read(request, control);
    if (loaded->failures == 0) {
        const std::lock_guard lock(m_mutex);
        keep(Entry { files, request.text, request.device, loaded });
    }
    return loaded;
}

CaseCache::SnapshotRef CaseCache::snapshot(
    const std::string& path, std::optional<int32_t> device, const CallControl& control)
{
    {
        const std::lock_guard lock(m_mutex);
        for (auto it = m_entries.begin(); it != m_entries.end(); ++it) {
            if (it->device != device)
                continue;
            const int index = it->loaded->snapshotIndexOf(path);
            if (index < 0 || !unchanged(it->files))
                continue;
            SnapshotRef ref { it->loaded, index };
            m_entries.splice(m_entries.begin(), m_entries, it);
            return ref;
        }
    }
    CaseRequest request;
    request.paths = { path };
    request.device = device;
    std::shared_ptr<const CachedCase> loaded = load(request, control);
    const int index = loaded->input.snapshots.empty() ? -1 : 0;
    return SnapshotRef { loaded, index };
}

} // namespace oomlens::mcp
