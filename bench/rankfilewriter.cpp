#include "bench/rankfilewriter.h"

#include <cstdint>
#include <fstream>
#include <unordered_map>

namespace oomlens::bench {

namespace {

// The pickle opcodes a snapshot needs (protocol 2), with the memo PyTorch's pickler would make:
// each key string, frame dict and frame list written once and fetched by BINGET afterwards.
class PickleWriter
{
public:
    explicit PickleWriter(std::ofstream& out)
        : m_out(out)
    { }

    void begin() { m_out.write("\x80\x02", 2); }
    void end() { put('.'); }
    void emptyDict() { put('}'); }
    void emptyList() { put(']'); }
    void mark() { put('('); }
    void setItems() { put('u'); }
    void appends() { put('e'); }

    void integer(int64_t value)
    {
        if (value >= 0 && value < 256) {
            put('K');
            put(static_cast<char>(value));
        } else if (value >= INT32_MIN && value <= INT32_MAX) {
            put('J');
            le(static_cast<uint64_t>(value), 4);
        } else {
            put('\x8a'); // LONG1, 8 bytes two's complement
            put(8);
            le(static_cast<uint64_t>(value), 8);
        }
    }

    // A string fetched from the memo when it was written before.
    void string(const std::string& text)
    {
        if (const auto found = m_strings.find(text); found != m_strings.end())
            return get(found->second);
        put('X');
        le(text.size(), 4);
        m_out.write(text.data(), static_cast<std::streamsize>(text.size()));
        m_strings.emplace(text, memoize());
    }

    // The frame list of a stack: written once, then fetched (PyTorch shares these between entries).
    void stack(const Snapshot& snapshot, StackId id)
    {
        if (const auto found = m_stacks.find(id.value); found != m_stacks.end())
            return get(found->second);
        emptyList();
        m_stacks.emplace(id.value, memoize());
        const auto frames = snapshot.frames->stack(id);
        if (frames.empty())
            return;
        mark();
        for (FrameId frameId : frames) {
            const Frame& frame = snapshot.frames->frame(frameId);
            emptyDict();
            mark();
            string("filename");
            string(std::string(snapshot.strings->get(frame.filename)));
            string("name");
            string(std::string(snapshot.strings->get(frame.name)));
            string("line");
            integer(frame.line);
            setItems();
        }
        appends();
    }

private:
    void put(char c) { m_out.put(c); }
    void le(uint64_t value, int bytes)
    {
        for (int i = 0; i < bytes; ++i)
            put(static_cast<char>((value >> (8 * i)) & 0xff));
    }
    uint32_t memoize()
    {
        put('r'); // LONG_BINPUT
        le(m_next, 4);
        return m_next++;
    }
    void get(uint32_t index)
    {
        put('j'); // LONG_BINGET
        le(index, 4);
    }

    std::ofstream& m_out;
    uint32_t m_next = 0;
    std::unordered_map<std::string, uint32_t> m_strings;
    std::unordered_map<uint32_t, uint32_t> m_stacks;
};

std::string_view actionName(TraceAction action)
{
    return traceActionName(action);
}

} // namespace

void writeRankFile(const std::string& path, const Snapshot& snapshot, bool withOom)
{
    std::ofstream out(path, std::ios::binary);
    PickleWriter pickle(out);
    pickle.begin();
    pickle.emptyDict();
    pickle.mark();
    pickle.string("segments");
    pickle.emptyList();
    pickle.string("device_traces");
    pickle.emptyList();
    pickle.mark();
    pickle.emptyList();
    const std::vector<TraceEvent>& events = snapshot.traces.front().events;
    const auto entry = [&](TraceAction action, uint64_t address, uint64_t size, int64_t time, StackId stack) {
        pickle.emptyDict();
        pickle.mark();
        pickle.string("action");
        pickle.string(std::string(actionName(action)));
        pickle.string(action == TraceAction::Oom ? "device_free" : "addr");
        pickle.integer(static_cast<int64_t>(address));
        pickle.string("size");
        pickle.integer(static_cast<int64_t>(size));
        pickle.string("stream");
        pickle.integer(0);
        pickle.string("time_us");
        pickle.integer(time);
        pickle.string("frames");
        pickle.stack(snapshot, stack);
        pickle.setItems();
    };
    constexpr size_t batch = 1000; // the pickler's APPENDS batch
    for (size_t i = 0; i < events.size(); ++i) {
        if (i % batch == 0) {
            if (i > 0)
                pickle.appends();
            pickle.mark();
        }
        const TraceEvent& event = events[i];
        entry(event.action, event.addr, event.size, event.timeUs, event.stack);
    }
    if (withOom) {
        const TraceEvent& last = events.back();
        entry(TraceAction::Oom, 0, 1ULL << 30, last.timeUs + 10, last.stack);
    }
    if (!events.empty() || withOom)
        pickle.appends();
    pickle.appends(); // the one device's trace into device_traces
    pickle.setItems();
    pickle.end();
}

} // namespace oomlens::bench
