#include "tracebuilder.h"

#include "common/tracetext.h"
#include "core/analysis/reconstruction.h"

#include <algorithm>
#include <charconv>
#include <optional>
#include <vector>

namespace oomlens::test {

struct TraceBuilder::State
{
    struct Seg
    {
        std::string name;
        int32_t device = 0;
        uint64_t address = 0;
        uint64_t size = 0;
        int64_t stream = 0;
        bool large = true;
        bool expandable = false;
        bool live = true;
        PoolId pool; // segment_pool_id: (0, 0) default, else a CUDA graph's or a MemPool's
    };
    struct Alloc
    {
        std::string name;
        int32_t device = 0;
        uint64_t address = 0;
        uint64_t requested = 0;
        uint64_t block = 0;
        int64_t stream = 0;
        StackId stack;
        PoolId pool;
        bool live = true;
        bool pendingFree = false;
        int64_t event = -1; // index of its alloc event before any ringbuffer cut
    };
    std::shared_ptr<StringTable> strings = std::make_shared<StringTable>();
    std::shared_ptr<FrameTable> frames = std::make_shared<FrameTable>();
    std::map<int32_t, std::vector<TraceEvent>> events;
    std::map<int32_t, size_t> ringBuffer;
    std::vector<Seg> segments;
    std::vector<Alloc> allocations;
    std::map<std::string, size_t> allocByName;
    std::vector<Annotation> annotations;
    int32_t device = 0;
    int64_t clock = 1'000'000;
    bool contextAlloc = false;
    bool entryPools = false; // `entrypools`: entries record pool_id
    std::vector<PoolId> entryPoolTable; // Snapshot::entryPools
    uint64_t nextSegmentAddress = 0x7f0000000000ULL;

    StackId parseStack(std::string_view spec)
    {
        std::vector<FrameId> ids;
        size_t pos = 0;
        while (pos < spec.size()) {
            auto end = spec.find(';', pos);
            if (end == std::string_view::npos)
                end = spec.size();
            const std::string_view item = spec.substr(pos, end - pos);
            pos = end + 1;
            if (item.empty())
                continue;
            Frame frame;
            const auto first = item.find(':');
            const auto last = item.rfind(':');
            if (first == std::string_view::npos) {
                frame.filename = strings->intern("");
                frame.name = strings->intern(item);
            } else {
                bool ok = false;
                const auto lineText = item.substr(last + 1);
                int line = 0;
                auto [ptr, ec] = std::from_chars(lineText.data(), lineText.data() + lineText.size(), line);
                ok = ec == std::errc() && ptr == lineText.data() + lineText.size() && last > first;
                frame.filename = strings->intern(item.substr(0, first));
                frame.name = strings->intern(ok ? item.substr(first + 1, last - first - 1) : item.substr(first + 1));
                frame.line = ok ? line : 0;
            }
            ids.push_back(frames->intern(frame));
        }
        return frames->internStack(ids.data(), ids.size());
    }

    int64_t tick(const std::map<std::string, std::string>& options)
    {
        auto it = options.find("t");
        if (it != options.end())
            clock = std::stoll(it->second);
        else
            clock += 10;
        return clock;
    }

    void emit(TraceAction action, uint64_t addr, uint64_t size, int64_t stream, StackId stack, int64_t time)
    {
        TraceEvent e;
        e.action = action;
        e.addr = addr;
        e.size = size;
        e.stream = stream;
        e.stack = stack;
        e.timeUs = time;
        events[device].push_back(e);
    }

    // After `entrypools`, the entry just emitted records `pool` (TraceEvent::pool).
    void tagPool(PoolId pool)
    {
        if (!entryPools)
            return;
        auto it = std::find(entryPoolTable.begin(), entryPoolTable.end(), pool);
        if (it == entryPoolTable.end())
            it = entryPoolTable.insert(entryPoolTable.end(), pool);
        events[device].back().pool = static_cast<uint16_t>(it - entryPoolTable.begin() + 1);
    }

    // First fit among live segments of this device, stream and pool kind.
    bool place(Alloc& a, const Seg& s)
    {
        std::vector<std::pair<uint64_t, uint64_t>> used;
        for (const Alloc& other : allocations) {
            if (other.live && other.device == s.device && other.address >= s.address
                && other.address < s.address + s.size)
                used.emplace_back(other.address, other.block);
        }
        std::sort(used.begin(), used.end());
        uint64_t cursor = s.address;
        for (const auto& [address, size] : used) {
            if (address >= cursor + a.block)
                break;
            cursor = std::max(cursor, address + size);
        }
        if (cursor + a.block > s.address + s.size)
            return false;
        a.address = cursor;
        return true;
    }

    Seg& newSegment(const std::string& name, uint64_t size, bool large, int64_t stream, PoolId pool = {})
    {
        Seg s;
        s.pool = pool;
        s.name = name;
        s.device = device;
        s.address = nextSegmentAddress + (static_cast<uint64_t>(device) << 44);
        s.size = size;
        s.large = large;
        s.stream = stream;
        nextSegmentAddress += (size + (uint64_t(4) << 20)) & ~((uint64_t(2) << 20) - 1);
        segments.push_back(s);
        return segments.back();
    }

    Seg* segment(const std::string& name)
    {
        for (auto it = segments.rbegin(); it != segments.rend(); ++it) {
            if (it->name == name && it->device == device)
                return &*it;
        }
        return nullptr;
    }

    Alloc* allocation(const std::string& name)
    {
        auto it = allocByName.find(name);
        return it == allocByName.end() ? nullptr : &allocations[it->second];
    }
};

TraceBuilder::TraceBuilder()
    : m_state(std::make_unique<State>())
{ }

TraceBuilder::~TraceBuilder() = default;

uint64_t TraceBuilder::address(const std::string& name) const
{
    auto it = m_state->allocByName.find(name);
    if (it != m_state->allocByName.end())
        return m_state->allocations[it->second].address;
    for (auto s = m_state->segments.rbegin(); s != m_state->segments.rend(); ++s) {
        if (s->name == name)
            return s->address;
    }
    return 0;
}

int64_t TraceBuilder::allocEvent(const std::string& name) const
{
    auto it = m_state->allocByName.find(name);
    if (it == m_state->allocByName.end())
        return -1;
    const auto& a = m_state->allocations[it->second];
    if (a.event < 0)
        return -1;
    const auto events = m_state->events.find(a.device);
    const auto total = static_cast<int64_t>(events->second.size());
    const auto ring = m_state->ringBuffer.find(a.device);
    const int64_t dropped
        = ring == m_state->ringBuffer.end() ? 0 : std::max<int64_t>(0, total - static_cast<int64_t>(ring->second));
    return a.event >= dropped ? a.event - dropped : -1;
}

bool TraceBuilder::add(std::string_view text)
{
    State& st = *m_state;
    int lineNumber = 0;
    size_t pos = 0;
    while (pos <= text.size()) {
        const auto end = std::min(text.find('\n', pos), text.size());
        const auto line = text.substr(pos, end - pos);
        pos = end + 1;
        ++lineNumber;
        auto tokens = tokenize(line);
        if (tokens.empty() || tokens[0][0] == '#')
            continue;
        const std::string where = "line " + std::to_string(lineNumber) + " '" + std::string(line) + "': ";
        auto fail = [&](const std::string& why) {
            m_error = where + why;
            return false;
        };

        // Split into positional words and key=value options; phase words set the stack.
        std::vector<std::string> words;
        std::map<std::string, std::string> options;
        std::optional<StackId> stack;
        bool expandable = false;
        std::optional<bool> large;
        for (size_t i = 1; i < tokens.size(); ++i) {
            const auto& t = tokens[i];
            const auto eq = t.find('=');
            if (eq != std::string::npos) {
                options[t.substr(0, eq)] = t.substr(eq + 1);
            } else if (auto p = phaseStacks().find(t); p != phaseStacks().end()) {
                stack = st.parseStack(p->second);
            } else if (t == "expandable") {
                expandable = true;
            } else if (t == "large" || t == "small") {
                large = t == "large";
            } else {
                words.push_back(t);
            }
        }
        if (auto s = options.find("stack"); s != options.end())
            stack = st.parseStack(s->second);
        const int64_t stream = options.count("stream") ? std::stoll(options["stream"]) : 0;
        PoolId pool;
        if (auto p = options.find("pool"); p != options.end()) {
            const auto comma = p->second.find(',');
            if (comma == std::string::npos)
                return fail("expected pool=FIRST,SECOND");
            pool = { std::stoll(p->second.substr(0, comma)), std::stoll(p->second.substr(comma + 1)) };
        }
        auto bytesArg = [&](size_t index, uint64_t* out) {
            bool ok = index < words.size();
            if (ok)
                *out = parseBytes(words[index], &ok);
            return ok;
        };

        const std::string& command = tokens[0];
        if (command == "device") {
            if (words.empty())
                return fail("expected a device ordinal");
            st.device = std::stoi(words[0]);
        } else if (command == "entrypools") {
            st.entryPools = true;
        } else if (command == "context") {
            st.contextAlloc = !words.empty() && words[0] == "alloc";
        } else if (command == "ringbuffer") {
            uint64_t n = 0;
            if (!bytesArg(0, &n))
                return fail("expected an event count");
            st.ringBuffer[st.device] = n;
        } else if (command == "segment") {
            bool ok = words.size() >= 3;
            uint64_t address = ok ? parseAddress(words[1], &ok) : 0;
            uint64_t size = 0;
            if (!ok || !bytesArg(2, &size))
                return fail("expected: segment NAME ADDRESS SIZE");
            State::Seg s;
            s.name = words[0];
            s.device = st.device;
            s.address = address;
            s.size = size;
            s.stream = stream;
            s.large = large.value_or(size != (uint64_t(2) << 20));
            s.expandable = expandable;
            s.pool = pool;
            st.segments.push_back(s);
        } else if (command == "segment_alloc") {
            uint64_t size = 0;
            if (words.empty() || !bytesArg(1, &size))
                return fail("expected: segment_alloc NAME SIZE");
            auto& s = st.newSegment(words[0], size, large.value_or(size != (uint64_t(2) << 20)), stream, pool);
            st.emit(TraceAction::SegmentAlloc, s.address, size, stream, stack.value_or(StackId(0)), st.tick(options));
            st.tagPool(pool);
        } else if (command == "segment_free") {
            State::Seg* s = words.empty() ? nullptr : st.segment(words[0]);
            if (!s || !s->live)
                return fail("no live segment of that name");
            s->live = false;
            st.emit(
                TraceAction::SegmentFree, s->address, s->size, s->stream, stack.value_or(StackId(0)), st.tick(options));
            st.tagPool(s->pool);
        } else if (command == "map" || command == "unmap") {
            bool ok = words.size() >= 3;
            uint64_t address = ok ? parseAddress(words[1], &ok) : 0;
            uint64_t size = 0;
            if (!ok || !bytesArg(2, &size))
                return fail("expected: map|unmap NAME ADDRESS SIZE");
            if (command == "map") {
                State::Seg s;
                s.name = words[0];
                s.device = st.device;
                s.address = address;
                s.size = size;
                s.stream = stream;
                s.large = large.value_or(true);
                s.expandable = true;
                st.segments.push_back(s);
                st.emit(TraceAction::SegmentMap, address, size, stream, stack.value_or(StackId(0)), st.tick(options));
            } else {
                // Cut [address, address+size) out of this name's mapped ranges.
                std::vector<State::Seg> pieces;
                for (auto& s : st.segments) {
                    if (s.name != words[0] || s.device != st.device || !s.live)
                        continue;
                    const uint64_t end = s.address + s.size, cutEnd = address + size;
                    if (cutEnd <= s.address || address >= end)
                        continue;
                    if (cutEnd < end) {
                        State::Seg tail = s;
                        tail.address = cutEnd;
                        tail.size = end - cutEnd;
                        pieces.push_back(tail);
                    }
                    if (address > s.address)
                        s.size = address - s.address;
                    else
                        s.live = false;
                }
                st.segments.insert(st.segments.end(), pieces.begin(), pieces.end());
                st.emit(TraceAction::SegmentUnmap, address, size, stream, stack.value_or(StackId(0)), st.tick(options));
            }
        } else if (command == "alloc" || command == "before") {
            uint64_t size = 0;
            if (words.empty() || !bytesArg(1, &size))
                return fail("expected: " + command + " NAME SIZE");
            State::Alloc a;
            a.name = words[0];
            a.device = st.device;
            a.requested = size;
            a.block = estimatedBlockSize(size);
            a.stream = stream;
            a.stack = stack.value_or(StackId(0));
            a.pool = pool;
            bool placed = false;
            if (auto at = options.find("at"); at != options.end()) {
                a.address = parseAddress(at->second, &placed);
                if (!placed)
                    return fail("bad at= address");
            } else if (auto in = options.find("in"); in != options.end()) {
                State::Seg* s = st.segment(in->second);
                if (!s || !st.place(a, *s))
                    return fail("does not fit in segment " + in->second);
                placed = true;
            } else {
                const bool wantLarge = size > (uint64_t(1) << 20);
                for (auto& s : st.segments) {
                    if (s.live && s.device == st.device && s.stream == stream && s.large == wantLarge && s.pool == pool
                        && st.place(a, s)) {
                        placed = true;
                        break;
                    }
                }
            }
            if (!placed) {
                const bool wantLarge = size > (uint64_t(1) << 20);
                const uint64_t segmentSize = !wantLarge ? (uint64_t(2) << 20)
                    : size <= (uint64_t(10) << 20)      ? (uint64_t(20) << 20)
                                                   : (a.block + (uint64_t(2) << 20) - 1) & ~((uint64_t(2) << 20) - 1);
                auto& s = st.newSegment("auto", segmentSize, wantLarge, stream, pool);
                st.place(a, s);
                if (command == "alloc") {
                    st.emit(TraceAction::SegmentAlloc, s.address, s.size, stream, a.stack, st.tick(options));
                    st.tagPool(pool);
                }
            }
            if (command == "alloc")
                a.event = static_cast<int64_t>(st.events[st.device].size());
            st.allocations.push_back(a);
            st.allocByName[a.name] = st.allocations.size() - 1;
            if (command == "alloc") {
                st.emit(TraceAction::Alloc, a.address, size, stream, a.stack, st.tick(options));
                st.tagPool(pool);
                if (auto ctx = options.find("ctx"); ctx != options.end())
                    st.events[st.device].back().compileContext = st.strings->intern(ctx->second);
            }
        } else if (command == "free" || command == "free_requested" || command == "free_completed") {
            State::Alloc* a = words.empty() ? nullptr : st.allocation(words[0]);
            if (!a || !a->live)
                return fail("no live allocation of that name");
            const StackId freeStack = st.contextAlloc ? a->stack : stack.value_or(StackId(0));
            if (command != "free_completed") {
                st.emit(TraceAction::FreeRequested, a->address, a->requested, a->stream, freeStack, st.tick(options));
                st.tagPool(a->pool);
            }
            if (command != "free_requested") {
                st.emit(TraceAction::FreeCompleted, a->address, a->requested, a->stream, freeStack, st.tick(options));
                st.tagPool(a->pool);
                a->live = false;
            } else {
                a->pendingFree = true;
            }
        } else if (command == "oom") {
            uint64_t size = 0;
            if (!bytesArg(0, &size))
                return fail("expected: oom SIZE [free=BYTES]");
            bool ok = true;
            const uint64_t freeBytes = options.count("free") ? parseBytes(options["free"], &ok) : 0;
            if (!ok)
                return fail("bad free= size");
            st.emit(TraceAction::Oom, freeBytes, size, stream, stack.value_or(StackId(0)), st.tick(options));
        } else if (command == "snapshot") {
            st.emit(TraceAction::Snapshot, 0, 0, 0, StackId(0), st.tick(options));
        } else if (command == "annotate") {
            if (words.empty())
                return fail("expected: annotate NAME");
            Annotation a;
            a.device = st.device;
            a.timeUs = st.tick(options);
            a.fields = { { "name", words[0] }, { "stage", options.count("stage") ? options["stage"] : "START" } };
            st.annotations.push_back(a);
        } else {
            return fail("unknown command");
        }
    }
    return true;
}

std::shared_ptr<const Snapshot> TraceBuilder::build()
{
    State& st = *m_state;
    auto snapshot = std::make_shared<Snapshot>();
    snapshot->era = Snapshot::Era::Traces;
    snapshot->container = "tracebuilder";

    std::vector<State::Seg> live;
    for (const auto& s : st.segments) {
        if (s.live)
            live.push_back(s);
    }
    // Adjacent mapped ranges of one expandable segment are reported as one segment.
    std::sort(live.begin(), live.end(), [](const State::Seg& a, const State::Seg& b) {
        return a.device != b.device ? a.device < b.device : a.address < b.address;
    });
    std::vector<State::Seg> merged;
    for (const auto& s : live) {
        if (!merged.empty() && s.expandable && merged.back().expandable && merged.back().device == s.device
            && merged.back().address + merged.back().size == s.address && merged.back().stream == s.stream)
            merged.back().size += s.size;
        else
            merged.push_back(s);
    }

    for (const auto& s : merged) {
        Segment segment;
        segment.device = s.device;
        segment.address = s.address;
        segment.totalSize = s.size;
        segment.stream = s.stream;
        segment.isLargePool = s.large;
        segment.isExpandable = s.expandable;
        segment.pool = s.pool;
        segment.firstBlock = static_cast<uint32_t>(snapshot->blocks.size());
        std::vector<const State::Alloc*> inside;
        for (const auto& a : st.allocations) {
            if (a.live && a.device == s.device && a.address >= s.address && a.address < s.address + s.size)
                inside.push_back(&a);
        }
        std::sort(inside.begin(), inside.end(), [](auto* a, auto* b) { return a->address < b->address; });
        uint64_t cursor = s.address;
        auto addFree = [&](uint64_t until) {
            if (until > cursor) {
                Block b;
                b.address = cursor;
                b.size = until - cursor;
                b.state = BlockState::Inactive;
                snapshot->blocks.push_back(b);
            }
        };
        for (const auto* a : inside) {
            addFree(a->address);
            Block b;
            b.address = a->address;
            b.size = a->block;
            b.requestedSize = a->requested;
            b.state = a->pendingFree ? BlockState::ActivePendingFree : BlockState::ActiveAllocated;
            b.stack = a->stack;
            snapshot->blocks.push_back(b);
            cursor = a->address + a->block;
            if (b.state == BlockState::ActiveAllocated)
                segment.allocatedSize += b.size;
            segment.activeSize += b.size;
            segment.requestedSize += b.requestedSize;
        }
        addFree(s.address + s.size);
        segment.blockCount = static_cast<uint32_t>(snapshot->blocks.size() - segment.firstBlock);
        snapshot->segments.push_back(segment);
    }

    int32_t maxDevice = -1;
    for (const auto& [device, events] : st.events)
        maxDevice = std::max(maxDevice, device);
    for (const auto& s : merged)
        maxDevice = std::max(maxDevice, s.device);
    for (int32_t d = 0; d <= maxDevice; ++d) {
        DeviceTrace trace;
        trace.device = d;
        auto it = st.events.find(d);
        if (it != st.events.end()) {
            trace.events = it->second;
            auto ring = st.ringBuffer.find(d);
            if (ring != st.ringBuffer.end() && trace.events.size() > ring->second)
                trace.events.erase(
                    trace.events.begin(), trace.events.end() - static_cast<std::ptrdiff_t>(ring->second));
        }
        snapshot->traces.push_back(std::move(trace));
    }
    snapshot->annotations = st.annotations;
    snapshot->entryPools = st.entryPoolTable;
    snapshot->strings = st.strings;
    snapshot->frames = st.frames;
    return snapshot;
}

std::shared_ptr<const Snapshot> buildSnapshot(std::string_view text, std::string* error)
{
    TraceBuilder builder;
    if (!builder.add(text)) {
        if (error)
            *error = builder.error();
        return nullptr;
    }
    return builder.build();
}

} // namespace oomlens::test
