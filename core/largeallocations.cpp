// Large buffers on transparent huge pages.
//
// Opening a snapshot fills a few very large arrays once (the decoded trace, the decoder's memo,
// the per-event analysis series): a 10M-event file writes about a gigabyte of them. Touched 4 KiB
// at a time, that is a quarter of a million page faults, and on the virtual machines this runs
// on a fault costs microseconds: measured on a 1M-event file, 30,000 faults and a third of the
// open's CPU time went to the kernel. The kernel backs memory with 2 MiB pages where the process
// asks for them (transparent_hugepage=madvise, the common default), so every block of a few MiB
// or more is marked MADV_HUGEPAGE before anything is written to it: 512 times fewer faults and
// fewer TLB misses. glibc does the same with GLIBC_TUNABLES=glibc.malloc.hugetlb=1, which a user
// cannot be asked to set.
//
// The global allocation functions are replaced program-wide (any executable that links
// oomlens_core uses them); small blocks go straight to malloc as before. The memory use does not
// change: a huge page is only backed when first touched, like a small one, so a reserved but
// unused vector tail still costs nothing beyond the 2 MiB page it starts in.
//
// Sanitizer builds keep their own allocator, which reports mismatched new/delete.

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define OOMLENS_KEEP_ALLOCATOR 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(memory_sanitizer) || __has_feature(thread_sanitizer)
#define OOMLENS_KEEP_ALLOCATOR 1
#endif
#endif

#if !defined(OOMLENS_KEEP_ALLOCATOR) && defined(__linux__)

#include <sys/mman.h>

#include <cstdint>
#include <cstdlib>
#include <new>

namespace {

constexpr std::size_t hugePage = std::size_t(2) << 20;
// Below this the faults saved do not pay for the madvise call (and the mapping split it makes).
constexpr std::size_t adviseFrom = std::size_t(4) << 20;

void* allocate(std::size_t size) noexcept
{
    void* block = std::malloc(size ? size : 1);
    if (block && size >= adviseFrom) {
        // Only whole huge pages inside the block: the rest of its first and last page may be
        // another allocation's.
        const auto start = reinterpret_cast<std::uintptr_t>(block);
        const std::uintptr_t first = (start + hugePage - 1) & ~(hugePage - 1);
        const std::uintptr_t last = (start + size) & ~(hugePage - 1);
        if (last > first)
            madvise(reinterpret_cast<void*>(first), last - first, MADV_HUGEPAGE); // advice: failure is harmless
    }
    return block;
}

void* allocateOrThrow(std::size_t size)
{
    for (;;) {
        if (void* block = allocate(size))
            return block;
        // As the standard's operator new does: let the handler free memory, or give up.
        const std::new_handler handler = std::get_new_handler();
        if (!handler)
            throw std::bad_alloc();
        handler();
    }
}

} // namespace

void* operator new(std::size_t size)
{
    return allocateOrThrow(size);
}

void* operator new[](std::size_t size)
{
    return allocateOrThrow(size);
}

void* operator new(std::size_t size, const std::nothrow_t&) noexcept
{
    return allocate(size);
}

void* operator new[](std::size_t size, const std::nothrow_t&) noexcept
{
    return allocate(size);
}

void operator delete(void* block) noexcept
{
    std::free(block);
}

void operator delete[](void* block) noexcept
{
    std::free(block);
}

void operator delete(void* block, std::size_t) noexcept
{
    std::free(block);
}

void operator delete[](void* block, std::size_t) noexcept
{
    std::free(block);
}

void operator delete(void* block, const std::nothrow_t&) noexcept
{
    std::free(block);
}

void operator delete[](void* block, const std::nothrow_t&) noexcept
{
    std::free(block);
}

#endif
