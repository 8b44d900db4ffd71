#include "core/pagemove.h"

#include <cstdint>
#include <cstdlib>
#include <cstring>

// Sanitizers keep their own allocator and its bookkeeping of the heap: copy there.
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define OOMLENS_COPY_PAGES 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer) || __has_feature(thread_sanitizer)
#define OOMLENS_COPY_PAGES 1
#endif
#endif

#if defined(__linux__)
#include <sys/mman.h>
#include <unistd.h>
#endif

namespace oomlens {

namespace {

// Below this a copy is cheaper than the system calls and the mappings they split.
constexpr size_t moveFrom = size_t(1) << 20;
constexpr std::uintptr_t hugePage = std::uintptr_t(2) << 20;

} // namespace

void movePages(char* to, char* from, size_t bytes, size_t spare)
{
#if defined(__linux__) && !defined(OOMLENS_COPY_PAGES)
    // Lined up modulo a huge page where there is room, the kernel moves huge pages whole (a huge
    // page split into small ones costs the later readers TLB misses); else modulo a small page.
    const auto small = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
    const std::uintptr_t distance = reinterpret_cast<std::uintptr_t>(to) - reinterpret_cast<std::uintptr_t>(from);
    const std::uintptr_t page = (distance & (hugePage - 1)) <= spare && bytes >= 4 * hugePage ? hugePage : small;
    const std::uintptr_t shift = distance & (page - 1);
    if (bytes >= moveFrom && shift <= spare) {
        // Line the data up with `to` modulo the page size: a shift within memory already present.
        char* const source = from + shift;
        std::memmove(source, from, bytes);
        const std::uintptr_t first = (reinterpret_cast<std::uintptr_t>(source) + page - 1) & ~(page - 1);
        const std::uintptr_t last = (reinterpret_cast<std::uintptr_t>(source) + bytes) & ~(page - 1);
        const size_t head = first - reinterpret_cast<std::uintptr_t>(source);
        const size_t length = last - first;
        void* const target = to + head;
        std::memcpy(to, source, head);
        void* moved = mremap(reinterpret_cast<void*>(first), length, length, MREMAP_MAYMOVE | MREMAP_FIXED, target);
        if (moved == target) {
            // The source range is unmapped now; the allocation it belongs to must stay whole.
            void* refill = mmap(reinterpret_cast<void*>(first), length, PROT_READ | PROT_WRITE,
                MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0);
            if (refill == MAP_FAILED)
                std::abort();
        } else {
            std::memcpy(target, reinterpret_cast<void*>(first), length);
        }
        std::memcpy(to + head + length, reinterpret_cast<void*>(last), bytes - head - length);
        return;
    }
#else
    (void)spare;
#endif
    std::memcpy(to, from, bytes);
}

} // namespace oomlens
