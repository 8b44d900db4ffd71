#include "app/mcp/casecache.h"

#include "app/cli/errorlines.h"
#include "app/cli/inputs.h"
#include "app/cli/qtlists.h"
#include "core/job/jobjson.h"
#include "core/jsonexport.h"
#include "opening/jobfiles.h"
#include "opening/opening.h"

#include <QDateTime>
#include <QFileInfo>

#include <algorithm>
#include <stdexcept>

namespace oomlens::mcp {

namespace {

std::string absolutePath(const std::string& path)
{
    return QFileInfo(QString::fromStdString(path)).absoluteFilePath().toStdString();
}

} // namespace

int LoadedCase::snapshotIndexOf(const std::string& path) const
{
    const std::string wanted = absolutePath(path);
    for (const CaseInput& in : input.inputs) {
        if (in.kind == InputKind::Snapshot && in.snapshotIndex >= 0 && absolutePath(in.path) == wanted)
            return in.snapshotIndex;
    }
    return -1;
}

const nlohmann::ordered_json& LoadedCase::diagnoseDocument() const
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

std::vector<CaseCache::FileStamp> CaseCache::stamps(const QStringList& paths)
{
    std::vector<FileStamp> files;
    for (const QString& path : paths) {
        const QFileInfo info(path);
        FileStamp stamp;
        stamp.path = info.absoluteFilePath().toStdString();
        if (info.exists()) {
            stamp.size = info.size();
            stamp.modifiedMs = info.lastModified().toMSecsSinceEpoch();
        }
        files.push_back(std::move(stamp));
    }
    return files;
}

bool CaseCache::unchanged(const Entry& entry)
{
    QStringList paths;
    for (const FileStamp& file : entry.files)
        paths.append(QString::fromStdString(file.path));
    return stamps(paths) == entry.files;
}

size_t CaseCache::size() const
{
    const std::lock_guard lock(m_mutex);
    return m_entries.size();
}

std::shared_ptr<const LoadedCase> CaseCache::read(
    const QStringList& paths, const CaseRequest& request, const CallControl& control)
{
    ++m_reads;
    // Opened as `diagnose` opens its INPUTs (a job or one case, opening/opening.h), the pasted
    // text last; the CLI's own lines are printed on stderr and kept by the capture.
    cli::ErrorLineCapture errors;
    std::vector<LoadRequest> requests;
    for (const QString& path : paths) { // "-" is refused by the arguments: stdin is the protocol's
        // A file found in a folder given is listed, not an error, when it is no input (a README).
        const bool inFolder
            = std::find(request.paths.begin(), request.paths.end(), path.toStdString()) == request.paths.end();
        requests.push_back(LoadRequest::file(path.toStdString(), inFolder));
    }
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
    auto loaded = std::make_shared<LoadedCase>();
    loaded->failures = cli::printFailures(opened.failures);
    loaded->errorLines = errors.lines();
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

std::shared_ptr<const LoadedCase> CaseCache::load(const CaseRequest& request, const CallControl& control)
{
    QStringList given;
    for (const std::string& path : request.paths)
        given.append(QString::fromStdString(path));
    const QStringList paths = cli::toQStringList(expandFolders(cli::toStdStrings(given)));
    const std::vector<FileStamp> files = stamps(paths);
    {
        const std::lock_guard lock(m_mutex);
        for (auto it = m_entries.begin(); it != m_entries.end(); ++it) {
            if (it->files != files || it->text != request.text || it->device != request.device)
                continue;
            std::shared_ptr<const LoadedCase> found = it->loaded;
            m_entries.splice(m_entries.begin(), m_entries, it); // most recently used first
            return found;
        }
    }
    // Read without the lock: a ping or a cached question is answered meanwhile. Two calls asking
    // for the same new files at once both read them; the second kept replaces nothing it needs.
    std::shared_ptr<const LoadedCase> loaded = read(paths, request, control);
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
            if (index < 0 || !unchanged(*it))
                continue;
            SnapshotRef ref { it->loaded, index };
            m_entries.splice(m_entries.begin(), m_entries, it);
            return ref;
        }
    }
    CaseRequest request;
    request.paths = { path };
    request.device = device;
    std::shared_ptr<const LoadedCase> loaded = load(request, control);
    const int index = loaded->input.snapshots.empty() ? -1 : 0;
    return SnapshotRef { loaded, index };
}

} // namespace oomlens::mcp
