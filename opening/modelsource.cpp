#include "opening/modelsource.h"

#include "core/planner/hfconfig.h"
#include "parsers/inputfile.h"

namespace oomlens {

ModelRead readModelSource(const std::string& source)
{
    ModelRead read;
    if (const auto named = planner::modelPreset(source)) {
        read.model = *named;
        return read;
    }
    // A config.json is a few KB; the bound keeps a device or an endless pipe from hanging.
    std::string error;
    const std::optional<std::string> bytes = readSmallFile(source, uint64_t(16) << 20, &error);
    if (!bytes) {
        read.failure = InputFailure { source, error + " (nor a preset name)", false, {} };
        return read;
    }
    const planner::HfConfigResult parsed = planner::modelFromHfConfig(*bytes);
    if (!parsed.model)
        read.failure = InputFailure { source, "not a model config.json: " + parsed.error, false, {} };
    else
        read.model = *parsed.model;
    return read;
}

} // namespace oomlens
