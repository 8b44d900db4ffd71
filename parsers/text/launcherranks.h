#pragma once

#include <string_view>
#include <vector>

namespace oomlens::text {

// Ranks named by torchrun's per-line prefixes ("[rank3]:", "[default3]:") and vLLM / Ray worker
// prefixes ("(VllmWorker rank=1 pid=254)"): distinct, ascending. A log showing ranks 0-7 comes
// from an 8-GPU run, which is what sharding projections need to know.
std::vector<int> findLauncherRanks(std::string_view input);

// The rank one line's launcher prefix names; -1 for none.
int prefixRank(std::string_view line);

} // namespace oomlens::text
