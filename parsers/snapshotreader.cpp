#include "parsers/snapshotreader.h"

namespace oomlens {

bool looksLikeSnapshot(std::string_view)
{
    return false;
}

SnapshotReadResult readSnapshot(std::string_view, const SnapshotReadOptions&)
{
    SnapshotReadResult result;
    result.error = "snapshot reading is not available yet";
    return result;
}

} // namespace oomlens
