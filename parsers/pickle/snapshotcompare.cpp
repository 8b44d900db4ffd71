#include "parsers/pickle/snapshotcompare.h"

#include <sstream>
#include <unordered_map>

namespace oomlens {

namespace {

class Comparer
{
public:
    Comparer(const Snapshot& a, const Snapshot& b)
        : m_a(a)
        , m_b(b)
    { }

    bool run()
    {
        check("era", int(m_a.era), int(m_b.era));
        check("container", m_a.container, m_b.container);
        check("pickleProtocol", m_a.pickleProtocol, m_b.pickleProtocol);
        check("warnings", joined(m_a.warnings), joined(m_b.warnings));
        if (check("segments.size", m_a.segments.size(), m_b.segments.size())) {
            for (size_t i = 0; i < m_a.segments.size() && m_diff.empty(); ++i)
                segment("segments[" + std::to_string(i) + "]", m_a.segments[i], m_b.segments[i]);
        }
        if (check("blocks.size", m_a.blocks.size(), m_b.blocks.size())) {
            for (size_t i = 0; i < m_a.blocks.size() && m_diff.empty(); ++i)
                block("blocks[" + std::to_string(i) + "]", m_a.blocks[i], m_b.blocks[i]);
        }
        if (check("traces.size", m_a.traces.size(), m_b.traces.size())) {
            for (size_t t = 0; t < m_a.traces.size() && m_diff.empty(); ++t) {
                const auto& ta = m_a.traces[t];
                const auto& tb = m_b.traces[t];
                const std::string where = "traces[" + std::to_string(t) + "]";
                check(where + ".device", ta.device, tb.device);
                if (!check(where + ".events.size", ta.events.size(), tb.events.size()))
                    break;
                for (size_t i = 0; i < ta.events.size() && m_diff.empty(); ++i) {
                    if (!sameEvent(ta.events[i], tb.events[i])) // names are built only for a difference
                        event(where + ".events[" + std::to_string(i) + "]", ta.events[i], tb.events[i]);
                }
            }
        }
        settings();
        if (check("annotations.size", m_a.annotations.size(), m_b.annotations.size())) {
            for (size_t i = 0; i < m_a.annotations.size() && m_diff.empty(); ++i) {
                const auto& x = m_a.annotations[i];
                const auto& y = m_b.annotations[i];
                const std::string where = "annotations[" + std::to_string(i) + "]";
                check(where + ".device", x.device, y.device);
                check(where + ".timeUs", x.timeUs, y.timeUs);
                check(where + ".fields", x.fields == y.fields, true);
            }
        }
        return m_diff.empty();
    }

    std::string diff() const { return m_diff; }

private:
    template <typename T> bool check(const std::string& what, const T& x, const T& y)
    {
        if (!m_diff.empty())
            return false;
        if (x == y)
            return true;
        std::ostringstream out;
        out << what << ": " << x << " vs " << y;
        m_diff = out.str();
        return false;
    }

    static std::string joined(const std::vector<std::string>& lines)
    {
        std::string text;
        for (const auto& line : lines)
            text += line + "\n";
        return text;
    }

    static std::string text(const Snapshot& s, StringId id)
    {
        return id.isValid() ? std::string(s.strings->get(id)) : std::string("<none>");
    }

    static std::string poolText(std::optional<PoolId> pool)
    {
        return pool ? "(" + std::to_string(pool->first) + ", " + std::to_string(pool->second) + ")"
                    : std::string("<none>");
    }

    static std::string stack(const Snapshot& s, StackId id)
    {
        std::string out;
        for (const FrameId f : s.frames->stack(id)) {
            const Frame& frame = s.frames->frame(f);
            out += std::string(s.strings->get(frame.name)) + "@" + std::string(s.strings->get(frame.filename)) + ":"
                + std::to_string(frame.line) + ";";
        }
        return out;
    }

    // Events share a handful of stacks: each pair of ids is compared as text once.
    void stackCheck(const std::string& where, StackId x, StackId y)
    {
        const uint64_t key = (uint64_t(x.value) << 32) | y.value;
        auto it = m_sameStacks.find(key);
        if (it == m_sameStacks.end())
            it = m_sameStacks.emplace(key, stack(m_a, x) == stack(m_b, y)).first;
        if (!it->second)
            check(where, stack(m_a, x), stack(m_b, y));
    }

    void segment(const std::string& where, const Segment& x, const Segment& y)
    {
        check(where + ".device", x.device, y.device);
        check(where + ".address", x.address, y.address);
        check(where + ".totalSize", x.totalSize, y.totalSize);
        check(where + ".allocatedSize", x.allocatedSize, y.allocatedSize);
        check(where + ".activeSize", x.activeSize, y.activeSize);
        check(where + ".requestedSize", x.requestedSize, y.requestedSize);
        check(where + ".stream", x.stream, y.stream);
        check(where + ".isLargePool", x.isLargePool, y.isLargePool);
        check(where + ".isExpandable", x.isExpandable, y.isExpandable);
        check(where + ".pool.first", x.pool.first, y.pool.first);
        check(where + ".pool.second", x.pool.second, y.pool.second);
        stackCheck(where + ".stack", x.stack, y.stack);
        check(where + ".firstBlock", x.firstBlock, y.firstBlock);
        check(where + ".blockCount", x.blockCount, y.blockCount);
    }

    void block(const std::string& where, const Block& x, const Block& y)
    {
        check(where + ".address", x.address, y.address);
        check(where + ".size", x.size, y.size);
        check(where + ".requestedSize", x.requestedSize, y.requestedSize);
        check(where + ".state", int(x.state), int(y.state));
        stackCheck(where + ".stack", x.stack, y.stack);
    }

    bool sameEvent(const TraceEvent& x, const TraceEvent& y)
    {
        const auto sameText = [&](StringId a, StringId b) {
            return a.isValid() == b.isValid() && (!a.isValid() || m_a.strings->get(a) == m_b.strings->get(b));
        };
        if (x.action != y.action || x.addr != y.addr || x.size != y.size || x.stream != y.stream || x.timeUs != y.timeUs
            || !sameText(x.compileContext, y.compileContext) || !sameText(x.userMetadata, y.userMetadata)
            || m_a.poolOf(x) != m_b.poolOf(y))
            return false;
        const uint64_t key = (uint64_t(x.stack.value) << 32) | y.stack.value;
        auto it = m_sameStacks.find(key);
        if (it == m_sameStacks.end())
            it = m_sameStacks.emplace(key, stack(m_a, x.stack) == stack(m_b, y.stack)).first;
        return it->second;
    }

    void event(const std::string& where, const TraceEvent& x, const TraceEvent& y)
    {
        check(where + ".action", std::string(traceActionName(x.action)), std::string(traceActionName(y.action)));
        check(where + ".addr", x.addr, y.addr);
        check(where + ".size", x.size, y.size);
        check(where + ".stream", x.stream, y.stream);
        check(where + ".timeUs", x.timeUs, y.timeUs);
        check(where + ".compileContext", text(m_a, x.compileContext), text(m_b, y.compileContext));
        check(where + ".userMetadata", text(m_a, x.userMetadata), text(m_b, y.userMetadata));
        check(where + ".pool", poolText(m_a.poolOf(x)), poolText(m_b.poolOf(y)));
        stackCheck(where + ".stack", x.stack, y.stack);
    }

    void settings()
    {
        if (!check("allocatorSettings.present", m_a.allocatorSettings.has_value(), m_b.allocatorSettings.has_value())
            || !m_a.allocatorSettings)
            return;
        const auto& x = *m_a.allocatorSettings;
        const auto& y = *m_b.allocatorSettings;
        check("allocatorSettings.allocConf", x.allocConf, y.allocConf);
        check("allocatorSettings.maxSplitSize", x.maxSplitSize, y.maxSplitSize);
        check(
            "allocatorSettings.garbageCollectionThreshold", x.garbageCollectionThreshold, y.garbageCollectionThreshold);
        check("allocatorSettings.expandableSegments", x.expandableSegments, y.expandableSegments);
        check("allocatorSettings.releaseLockOnCudaMalloc", x.releaseLockOnCudaMalloc, y.releaseLockOnCudaMalloc);
        check("allocatorSettings.pinnedUseCudaHostRegister", x.pinnedUseCudaHostRegister, y.pinnedUseCudaHostRegister);
        check("allocatorSettings.pinnedNumRegisterThreads", x.pinnedNumRegisterThreads, y.pinnedNumRegisterThreads);
        check("allocatorSettings.roundupPower2Divisions", x.roundupPower2Divisions == y.roundupPower2Divisions, true);
    }

    const Snapshot& m_a;
    const Snapshot& m_b;
    std::string m_diff;
    std::unordered_map<uint64_t, bool> m_sameStacks;
};

} // namespace

bool sameSnapshot(const Snapshot& a, const Snapshot& b, std::string* diff)
{
    Comparer comparer(a, b);
    const bool same = comparer.run();
    if (diff)
        *diff = comparer.diff();
    return same;
}

} // namespace oomlens
