#include "core/presentation/userframe.h"

#include "core/snapshot.h"

namespace oomlens {

bool isPythonFile(std::string_view filename)
{
    return filename.ends_with(".py");
}

bool isPyTorchFile(std::string_view filename)
{
    // co_filename is absolute (site-packages), relative to the working directory, or Windows.
    return filename.starts_with("torch/") || filename.starts_with("torch\\")
        || filename.find("/torch/") != std::string_view::npos || filename.find("\\torch\\") != std::string_view::npos;
}

bool isCompilerGeneratedFile(std::string_view filename)
{
    // Inductor writes its output code to its cache, /tmp/torchinductor_<user>/xx/c<hash>.py by
    // default (TORCHINDUCTOR_CACHE_DIR moves it, the name stays: 'c' and 51 base32 characters).
    if (filename.find("torchinductor_") != std::string_view::npos)
        return true;
    const size_t slash = filename.find_last_of("/\\");
    const std::string_view base = slash == std::string_view::npos ? filename : filename.substr(slash + 1);
    if (base.size() != 55 || base[0] != 'c' || !base.ends_with(".py"))
        return false;
    for (char c : base.substr(1, 51)) {
        if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')))
            return false;
    }
    return true;
}

std::optional<FrameId> userFrame(const FrameTable& frames, const StringTable& strings, StackId stack)
{
    const FrameTable::StackView view = frames.stack(stack);
    if (view.empty())
        return std::nullopt;
    std::optional<FrameId> python;
    for (FrameId id : view) {
        const std::string_view filename = strings.get(frames.frame(id).filename);
        if (!isPythonFile(filename))
            continue;
        if (!isPyTorchFile(filename) && !isCompilerGeneratedFile(filename))
            return id;
        if (!python)
            python = id;
    }
    return python ? python : view[0];
}

} // namespace oomlens
