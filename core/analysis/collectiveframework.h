#pragma once

#include <cstdint>

namespace oomlens {

// Whose machinery a stack runs, by the innermost frame of one of them: the framework whose
// settings size its buffers (FSDP2's reshard_after_forward and prefetching, DeepSpeed's stage3_*
// and bucket sizes, DDP's bucket_cap_mb), so a fix can be said in its own words.
enum class CollectiveFramework : uint8_t { Unknown, Fsdp1, Fsdp2, DeepSpeed, Ddp, Megatron };

// "DeepSpeed ZeRO", "FSDP2", ...; empty for Unknown.
const char* collectiveFrameworkText(CollectiveFramework framework);

} // namespace oomlens
