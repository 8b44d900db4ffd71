#include "core/snapshot.h"

#include "core/hash.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <stdexcept>

namespace oomlens {

// A million-event trace must stay well under 100 bytes per event (see TraceEvent).
static_assert(sizeof(TraceEvent) <= 48, "TraceEvent grew: keep new fields in its padding or in a side table");

namespace {

uint64_t hashFrame(const Frame& f)
{
    const uint64_t names = (uint64_t(f.name.value) << 32) | f.filename.value;
    return hashMix((names ^ static_cast<uint32_t>(f.line)) * 0x9E3779B97F4A7C15ULL + static_cast<uint32_t>(f.line));
}

constexpr std::array<std::string_view, 13> actionNames = { "alloc", "free_requested", "free_completed", "segment_alloc",
    "segment_free", "segment_map", "segment_unmap", "oom", "snapshot", "user_defined", "annotate", "free", "unknown" };

} // namespace

StringId StringTable::intern(std::string_view text)
{
    if ((m_offsets.size() + 1) * 2 > m_buckets.size())
        grow();
    const size_t mask = m_buckets.size() - 1;
    for (size_t i = hashBytes(text.data(), text.size()) & mask;; i = (i + 1) & mask) {
        const uint32_t slot = m_buckets[i];
        if (slot == 0) {
            if (m_storage.size() + text.size() > UINT32_MAX)
                throw std::length_error("string table exceeds 4 GiB");
            const auto id = static_cast<uint32_t>(m_offsets.size());
            m_offsets.push_back(static_cast<uint32_t>(m_storage.size()));
            m_lengths.push_back(static_cast<uint32_t>(text.size()));
            m_storage.append(text);
            m_buckets[i] = id + 1;
            return StringId(id);
        }
        if (get(StringId(slot - 1)) == text)
            return StringId(slot - 1);
    }
}

std::string_view StringTable::get(StringId id) const
{
    if (!id.isValid() || id.value >= m_offsets.size())
        return {};
    return std::string_view(m_storage.data() + m_offsets[id.value], m_lengths[id.value]);
}

void StringTable::grow()
{
    std::vector<uint32_t> buckets(std::max<size_t>(64, m_buckets.size() * 2), 0);
    const size_t mask = buckets.size() - 1;
    for (uint32_t id = 0; id < m_offsets.size(); ++id) {
        const auto text = get(StringId(id));
        size_t i = hashBytes(text.data(), text.size()) & mask;
        while (buckets[i] != 0)
            i = (i + 1) & mask;
        buckets[i] = id + 1;
    }
    m_buckets.swap(buckets);
}

FrameTable::FrameTable()
{
    m_stackOffsets.push_back(0);
    m_stackOffsets.push_back(0); // stack 0: the empty stack
    growStacks();
}

FrameId FrameTable::intern(const Frame& frame)
{
    if ((m_frames.size() + 1) * 2 > m_frameBuckets.size())
        growFrames();
    const size_t mask = m_frameBuckets.size() - 1;
    for (size_t i = hashFrame(frame) & mask;; i = (i + 1) & mask) {
        const uint32_t slot = m_frameBuckets[i];
        if (slot == 0) {
            const auto id = static_cast<uint32_t>(m_frames.size());
            m_frames.push_back(frame);
            m_frameBuckets[i] = id + 1;
            return FrameId(id);
        }
        if (m_frames[slot - 1] == frame)
            return FrameId(slot - 1);
    }
}

void FrameTable::growFrames()
{
    std::vector<uint32_t> buckets(std::max<size_t>(64, m_frameBuckets.size() * 2), 0);
    const size_t mask = buckets.size() - 1;
    for (uint32_t id = 0; id < m_frames.size(); ++id) {
        size_t i = hashFrame(m_frames[id]) & mask;
        while (buckets[i] != 0)
            i = (i + 1) & mask;
        buckets[i] = id + 1;
    }
    m_frameBuckets.swap(buckets);
}

StackId FrameTable::internStack(const FrameId* frames, size_t count)
{
    if (count == 0)
        return emptyStack();
    if ((stackCount() + 1) * 2 > m_stackBuckets.size())
        growStacks();
    const size_t mask = m_stackBuckets.size() - 1;
    for (size_t i = hashBytes(frames, count * sizeof(FrameId)) & mask;; i = (i + 1) & mask) {
        const uint32_t slot = m_stackBuckets[i];
        if (slot == 0) {
            const auto id = static_cast<uint32_t>(stackCount());
            m_stackFrames.insert(m_stackFrames.end(), frames, frames + count);
            m_stackOffsets.push_back(static_cast<uint32_t>(m_stackFrames.size()));
            m_stackBuckets[i] = id + 1;
            return StackId(id);
        }
        const auto existing = stack(StackId(slot - 1));
        if (existing.size() == count && std::memcmp(existing.begin(), frames, count * sizeof(FrameId)) == 0)
            return StackId(slot - 1);
    }
}

FrameTable::StackView FrameTable::stack(StackId id) const
{
    if (!id.isValid() || id.value >= stackCount())
        return { nullptr, nullptr };
    const FrameId* base = m_stackFrames.data();
    return { base + m_stackOffsets[id.value], base + m_stackOffsets[id.value + 1] };
}

void FrameTable::growStacks()
{
    std::vector<uint32_t> buckets(std::max<size_t>(64, m_stackBuckets.size() * 2), 0);
    const size_t mask = buckets.size() - 1;
    for (uint32_t id = 1; id < stackCount(); ++id) {
        const auto s = stack(StackId(id));
        size_t i = hashBytes(s.begin(), s.size() * sizeof(FrameId)) & mask;
        while (buckets[i] != 0)
            i = (i + 1) & mask;
        buckets[i] = id + 1;
    }
    m_stackBuckets.swap(buckets);
}

std::string_view traceActionName(TraceAction action)
{
    return actionNames[static_cast<size_t>(action)];
}

TraceAction traceActionFromName(std::string_view name)
{
    for (size_t i = 0; i + 1 < actionNames.size(); ++i) {
        if (actionNames[i] == name)
            return static_cast<TraceAction>(i);
    }
    return TraceAction::Unknown;
}

std::vector<int32_t> Snapshot::devices() const
{
    std::vector<int32_t> result;
    for (const auto& segment : segments)
        result.push_back(segment.device);
    for (const auto& trace : traces) {
        if (!trace.events.empty())
            result.push_back(trace.device);
    }
    std::sort(result.begin(), result.end());
    result.erase(std::unique(result.begin(), result.end()), result.end());
    return result;
}

const DeviceTrace* Snapshot::trace(int32_t device) const
{
    for (const auto& t : traces) {
        if (t.device == device)
            return &t;
    }
    return nullptr;
}

size_t Snapshot::totalTraceEvents() const
{
    size_t total = 0;
    for (const auto& t : traces)
        total += t.events.size();
    return total;
}

} // namespace oomlens
