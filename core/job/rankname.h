#pragma once

#include <optional>
#include <string_view>

namespace oomlens {

// The rank a snapshot file's name gives, the way launchers and users name them: rank3.pickle,
// rank_3, rank-03, snapshot.rank3.pickle.gz, r3.pkl, mem_3.pickle, 3.pickle, or a rank folder
// (logs/rank_3/snapshot.pickle). Nullopt when the name says nothing; long digit runs (dates,
// timestamps, PIDs) are never taken for a rank.
std::optional<int> rankFromFileName(std::string_view path);

} // namespace oomlens
