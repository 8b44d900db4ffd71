#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace oomlens::test {

// A tiny rank snapshot in PyTorch's JSON form (a few KB, read in a millisecond): `weights` bytes
// of parameters (loaded by module.to), then `activations` bytes allocated in a forward, and an
// oom event at `oomTime` when given. For jobs of many ranks: `clock` starts the events' time_us
// (each rank's own clock), so that two ranks' files differ as real dumps do.
std::string tinyJsonSnapshot(
    uint64_t weights, uint64_t activations, std::optional<int64_t> oomTime = std::nullopt, int64_t clock = 1000);

} // namespace oomlens::test
