#include "parsers/sidecarinput.h"

#include "parsers/filepaths.h"
#include "parsers/inputfile.h"
#include "parsers/inputloader.h"
#include "parsers/sidecarreader.h"
#include "parsers/text/allocconfparser.h"
#include "parsers/text/textparser.h"

#include <algorithm>

namespace oomlens {

namespace {

constexpr uint64_t maxSidecarFileBytes = uint64_t(16) << 20;

std::string canonical(const std::string& path)
{
    std::string resolved = canonicalFilePath(path);
    return resolved.empty() ? path : resolved;
}

// A sidecar beside a snapshot and the same object embedded in it describe one failure; its
// texts go into the case once.
bool alreadyFed(const Case& target, const CaptureSidecar& sidecar, std::optional<std::string> CaptureSidecar::*field)
{
    return std::any_of(target.sidecars.begin(), target.sidecars.end(), [&](const CaptureSidecar& other) {
        return other.snapshotIndex == sidecar.snapshotIndex && other.*field == sidecar.*field;
    });
}

void feedTexts(Case& target, const CaptureSidecar& sidecar)
{
    if (sidecar.nvidiaSmi && !alreadyFed(target, sidecar, &CaptureSidecar::nvidiaSmi))
        appendFindings(target.text, parseText(*sidecar.nvidiaSmi));
    if (sidecar.exception && !alreadyFed(target, sidecar, &CaptureSidecar::exception))
        appendFindings(target.text, parseText(*sidecar.exception));
    if (sidecar.allocConf && !alreadyFed(target, sidecar, &CaptureSidecar::allocConf)) {
        AllocConfSetting setting;
        setting.raw = *sidecar.allocConf;
        setting.source = fileNameOf(sidecar.sourcePath) + ": alloc_conf";
        text::parseAllocConfOptions(setting.raw, setting);
        target.text.allocConfs.push_back(std::move(setting));
    }
}

// The same sidecar file read twice (opened by itself, then found beside its snapshot, or the other
// way round): link it to the snapshot, never feed its texts twice. True when it was known.
bool linkKnown(Case& target, const std::string& path, int snapshotIndex)
{
    const std::string resolved = canonical(path);
    for (CaptureSidecar& known : target.sidecars) {
        if (canonical(known.sourcePath) != resolved)
            continue;
        if (known.snapshotIndex < 0)
            known.snapshotIndex = snapshotIndex;
        if (snapshotIndex < 0) // opened explicitly again: listed as an input, nothing more
            target.inputs.push_back({ path, InputKind::Sidecar, std::nullopt, -1 });
        return true;
    }
    return false;
}

} // namespace

void addSidecar(Case& target, const std::string& path, std::string_view bytes, int snapshotIndex)
{
    if (linkKnown(target, path, snapshotIndex))
        return;
    CaseInput input;
    input.path = path;
    input.kind = InputKind::Sidecar;
    SidecarParseResult result = parseCaptureSidecar(bytes, path);
    if (!result.sidecar) {
        // Worded as a warning: the snapshot it belongs to has been read regardless.
        input.error = "capture sidecar ignored: " + result.error;
        target.inputs.push_back(std::move(input));
        return;
    }
    CaptureSidecar& sidecar = *result.sidecar;
    sidecar.snapshotIndex = snapshotIndex;
    feedTexts(target, sidecar);
    target.sidecars.push_back(std::move(sidecar));
    target.inputs.push_back(std::move(input));
}

void addSidecarBeside(Case& target, const std::string& snapshotPath, int snapshotIndex)
{
    for (const std::string& candidate : sidecarPathsFor(snapshotPath)) {
        if (!isRegularFile(candidate))
            continue;
        if (linkKnown(target, candidate, snapshotIndex))
            return;
        std::string error;
        const std::optional<std::string> bytes = readSmallFile(candidate, maxSidecarFileBytes, &error);
        if (!bytes) {
            CaseInput input;
            input.path = candidate;
            input.kind = InputKind::Sidecar;
            input.error = "capture sidecar ignored: " + error;
            target.inputs.push_back(std::move(input));
            return;
        }
        addSidecar(target, candidate, *bytes, snapshotIndex);
        return;
    }
}

void addEmbeddedSidecar(Case& target, const std::string& snapshotPath, int snapshotIndex)
{
    if (snapshotIndex < 0 || snapshotIndex >= static_cast<int>(target.snapshots.size()))
        return;
    const std::optional<std::string> text = embeddedSidecarText(*target.snapshots[size_t(snapshotIndex)]);
    if (text)
        addSidecar(target, snapshotPath + " (user_metadata)", *text, snapshotIndex);
}

} // namespace oomlens
