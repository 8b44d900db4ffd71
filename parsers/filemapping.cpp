#include "parsers/filemapping.h"

#if defined(__unix__) || defined(__APPLE__)
#define OOMLENS_POSIX_MMAP 1
#include <sys/mman.h>
#endif
#if defined(__linux__) && !defined(MADV_POPULATE_READ)
#define MADV_POPULATE_READ 22 // Linux 5.14; older headers lack the name
#endif

namespace oomlens {

namespace {

// A big snapshot is decoded from end to end, by two threads at once: its mapping's page-table
// entries are filled in one call first (what MAP_POPULATE does, from the page cache, reading the
// file where it is not cached yet) instead of by a fault every few pages while the decoders run.
[[maybe_unused]] void populate(void* mapped, size_t size)
{
#if defined(__linux__)
    if (size >= (size_t(64) << 20))
        madvise(mapped, size, MADV_POPULATE_READ); // advice: failure is harmless
#endif
}

} // namespace

std::optional<FileMapping> mapFileHandle(int handle, uint64_t size, bool wholeRead)
{
#if defined(OOMLENS_POSIX_MMAP)
    if (size == 0 || handle < 0)
        return std::nullopt;
    const auto bytes = static_cast<size_t>(size);
    void* mapped = mmap(nullptr, bytes, PROT_READ, MAP_SHARED, handle, 0);
    if (mapped == MAP_FAILED)
        return std::nullopt;
    if (wholeRead)
        populate(mapped, bytes);
    FileMapping mapping;
    mapping.bytes = std::string_view(static_cast<const char*>(mapped), bytes);
    mapping.owner = std::shared_ptr<void>(mapped, [bytes](void* start) { munmap(start, bytes); });
    return mapping;
#else
    (void)handle;
    (void)size;
    (void)wholeRead;
    return std::nullopt;
#endif
}

} // namespace oomlens
