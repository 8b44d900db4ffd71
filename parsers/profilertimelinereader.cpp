#include "parsers/profilertimelinereader.h"

#include "parsers/text/textlines.h"

#include <nlohmann/json.hpp>

#include <zlib.h>

#include <algorithm>
#include <cmath>
#include <map>

namespace oomlens {

namespace {

constexpr size_t sniffWindow = 64 * 1024;
// A profiler timeline is a few MB, a long chrome trace a few hundred; beyond this a gzip is not one.
constexpr size_t maxInflatedBytes = size_t(2) << 30;

bool isGzip(std::string_view bytes)
{
    return bytes.size() >= 18 && static_cast<unsigned char>(bytes[0]) == 0x1f
        && static_cast<unsigned char>(bytes[1]) == 0x8b && bytes[2] == 8;
}

// Inflates a gzip stream, at most `limit` bytes of it (the head is enough to sniff). Empty on error.
std::optional<std::string> gunzip(std::string_view input, size_t limit, bool* complete)
{
    z_stream zs {};
    if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
        return std::nullopt;
    std::string out;
    size_t consumed = 0;
    int status = Z_OK;
    while (status != Z_STREAM_END && out.size() < limit) {
        const size_t produced = out.size();
        out.resize(std::min(limit, std::max<size_t>(produced * 2, 1 << 16)));
        const size_t chunkIn = std::min<size_t>(input.size() - consumed, 1u << 30);
        zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data() + consumed));
        zs.avail_in = static_cast<uInt>(chunkIn);
        zs.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
        zs.avail_out = static_cast<uInt>(out.size() - produced);
        status = ::inflate(&zs, Z_NO_FLUSH);
        consumed += chunkIn - zs.avail_in;
        out.resize(out.size() - zs.avail_out);
        if (status != Z_OK && status != Z_STREAM_END && !(status == Z_BUF_ERROR && out.size() == limit)) {
            inflateEnd(&zs);
            return std::nullopt;
        }
        if (status == Z_OK && zs.avail_in == 0 && consumed == input.size() && zs.avail_out != 0)
            break; // the data ends before the stream does
    }
    inflateEnd(&zs);
    if (complete)
        *complete = status == Z_STREAM_END;
    return out;
}

class Cursor
{
public:
    explicit Cursor(std::string_view text)
        : m_text(text)
    { }
    void skipSpace()
    {
        while (m_at < m_text.size()
            && (m_text[m_at] == ' ' || m_text[m_at] == '\n' || m_text[m_at] == '\r' || m_text[m_at] == '\t'))
            ++m_at;
    }
    bool take(char c)
    {
        skipSpace();
        if (m_at < m_text.size() && m_text[m_at] == c) {
            ++m_at;
            return true;
        }
        return false;
    }
    bool number()
    {
        skipSpace();
        const size_t start = m_at;
        if (m_at < m_text.size() && m_text[m_at] == '-')
            ++m_at;
        while (m_at < m_text.size()
            && ((m_text[m_at] >= '0' && m_text[m_at] <= '9') || m_text[m_at] == '.' || m_text[m_at] == 'e'
                || m_text[m_at] == 'E' || m_text[m_at] == '+'))
            ++m_at;
        return m_at > start && !(m_at == start + 1 && m_text[start] == '-');
    }
    bool atEnd() const { return m_at >= m_text.size(); }

private:
    std::string_view m_text;
    size_t m_at = 0;
};

ProfilerFileKind sniffPlain(std::string_view head)
{
    if (head.substr(0, 3) == "\xEF\xBB\xBF")
        head.remove_prefix(3);
    if (head.find("GPU Memory Timeline HTML") != std::string_view::npos && head.find('<') != std::string_view::npos)
        return ProfilerFileKind::Html;
    const size_t first = head.find_first_not_of(" \t\r\n");
    if (first == std::string_view::npos)
        return ProfilerFileKind::None;
    if (head[first] == '{')
        return head.find("\"traceEvents\"") != std::string_view::npos ? ProfilerFileKind::ChromeTrace
                                                                      : ProfilerFileKind::None;
    if (head[first] != '[')
        return ProfilerFileKind::None;
    // [[n, n, n, n], [n, ...  -> raw;  [[n, n, ...], [[  -> coalesced
    Cursor cursor(head.substr(first + 1));
    if (!cursor.take('['))
        return ProfilerFileKind::None;
    int numbers = 0;
    while (true) {
        if (!cursor.number())
            return ProfilerFileKind::None;
        ++numbers;
        if (cursor.take(','))
            continue;
        if (cursor.take(']'))
            break;
        return ProfilerFileKind::None;
    }
    if (cursor.take(']'))
        return numbers == 4 ? ProfilerFileKind::Raw : ProfilerFileKind::None; // one raw event, or nothing
    if (!cursor.take(',') || !cursor.take('['))
        return ProfilerFileKind::None;
    if (cursor.take('['))
        return ProfilerFileKind::Coalesced;
    return numbers == 4 && cursor.number() ? ProfilerFileKind::Raw : ProfilerFileKind::None;
}

int64_t asInteger(const nlohmann::json& value)
{
    if (value.is_number_integer())
        return value.get<int64_t>();
    if (value.is_number_float()) {
        const double number = value.get<double>();
        if (std::isfinite(number) && std::fabs(number) < 9.0e18)
            return static_cast<int64_t>(std::llround(number));
    }
    throw std::runtime_error("a number was expected");
}

// The profiler's own clock is in nanoseconds since the epoch; its exports divide by 1000, but
// files written by other versions (HolisticTraceAnalysis's test data, for one) kept nanoseconds.
// Microseconds since the epoch stay below 1e17 until the year 5138, so larger times are
// nanoseconds.
void inMicroseconds(ProfilerTimeline& timeline)
{
    constexpr int64_t nanosecondsFrom = 100'000'000'000'000'000;
    const bool nanoseconds = std::any_of(timeline.points.begin(), timeline.points.end(),
        [](const ProfilerTimeline::Point& point) { return point.timeUs >= nanosecondsFrom; });
    if (!nanoseconds)
        return;
    for (auto& point : timeline.points)
        point.timeUs /= 1000;
}

// export_memory_timeline_raw: pre-existing allocations carry time -1 and count from the start;
// an INCREMENT_VERSION is written as a pair (minus under the old category, plus under the new).
ProfilerTimeline readRaw(const nlohmann::json& document)
{
    ProfilerTimeline timeline;
    timeline.format = ProfilerTimelineFormat::Raw;
    if (!document.is_array())
        throw std::runtime_error("the raw memory timeline is not a JSON list");
    ProfilerCategoryBytes live {};
    std::optional<int64_t> currentTime;
    int64_t firstTime = -1;
    for (const auto& event : document) {
        if (!event.is_array() || event.size() != 4)
            throw std::runtime_error("an event of the raw memory timeline is not [time, action, bytes, category]");
        const int64_t time = asInteger(event[0]);
        const int64_t action = asInteger(event[1]);
        const int64_t bytes = asInteger(event[2]);
        const int64_t category = asInteger(event[3]);
        if (category < 0 || category >= profilerCategoryCount)
            throw std::runtime_error("category index " + std::to_string(category)
                + " is not one of torch.profiler's 0-7 (parameter ... autograd detail, none)");
        if (action < 1 || action > 4)
            throw std::runtime_error(
                "action " + std::to_string(action) + " is not one of torch.profiler's 1-4 (pre-existing ... destroy)");
        ++timeline.events;
        live[static_cast<size_t>(category)] += bytes;
        if (time < 0)
            timeline.preexistingBytes += bytes;
        if (time >= 0 && firstTime < 0)
            firstTime = time;
        if (!timeline.points.empty() && currentTime == time) {
            timeline.points.back().bytes = live;
            continue;
        }
        currentTime = time;
        timeline.points.push_back({ time, live });
    }
    // Like the profiler's own plot, allocations from before it started sit at its first moment.
    for (auto& point : timeline.points) {
        if (point.timeUs < 0)
            point.timeUs = std::max<int64_t>(firstTime, 0);
    }
    if (timeline.points.size() >= 2 && timeline.points[0].timeUs == timeline.points[1].timeUs)
        timeline.points.erase(timeline.points.begin());
    inMicroseconds(timeline);
    return timeline;
}

// export_memory_timeline(".json"): [times, sizes], each size row [0, bytes by category...] (the
// profiler keeps a leading slot); the times are already distinct.
ProfilerTimeline readCoalesced(const nlohmann::json& document)
{
    ProfilerTimeline timeline;
    timeline.format = ProfilerTimelineFormat::Coalesced;
    if (!document.is_array() || document.size() != 2 || !document[0].is_array() || !document[1].is_array()
        || document[0].size() != document[1].size())
        throw std::runtime_error("the memory timeline is not [times, sizes] with one size row per time");
    const auto& times = document[0];
    const auto& sizes = document[1];
    for (size_t i = 0; i < times.size(); ++i) {
        const auto& row = sizes[i];
        if (!row.is_array() || (row.size() != profilerCategoryCount + 1 && row.size() != profilerCategoryCount))
            throw std::runtime_error("a size row of the memory timeline does not hold the profiler's 8 categories");
        const size_t offset = row.size() - profilerCategoryCount;
        ProfilerTimeline::Point point;
        point.timeUs = asInteger(times[i]);
        for (size_t c = 0; c < profilerCategoryCount; ++c)
            point.bytes[c] = asInteger(row[offset + c]);
        timeline.points.push_back(point);
    }
    timeline.events = timeline.points.size();
    inMicroseconds(timeline);
    return timeline;
}

// c10::DeviceType as Kineto writes it in "Device Type".
std::string deviceTypeName(int64_t type)
{
    switch (type) {
    case 0:
        return "cpu";
    case 1:
        return "cuda";
    case 6:
        return "hip";
    case 9:
        return "xla";
    case 12:
        return "xpu";
    case 13:
        return "mps";
    case 15:
        return "hpu";
    case 19:
        return "mtia";
    case 20:
        return "privateuseone";
    default:
        return "device" + std::to_string(type);
    }
}

// Kineto's "[memory]" instant events: per device the allocator's running total after each
// allocation or free. No categories: the bytes go to None.
std::vector<ProfilerTimeline> readChromeTrace(const nlohmann::json& document)
{
    if (!document.is_object() || !document.contains("traceEvents") || !document["traceEvents"].is_array())
        throw std::runtime_error("a chrome trace without a traceEvents list");
    std::map<std::pair<int64_t, int64_t>, ProfilerTimeline> byDevice;
    bool hostOnly = false;
    for (const auto& event : document["traceEvents"]) {
        if (!event.is_object() || event.value("name", std::string()) != "[memory]" || !event.contains("args"))
            continue;
        const auto& args = event["args"];
        if (!args.is_object() || !args.contains("Total Allocated") || !args.contains("Device Type"))
            continue;
        const int64_t type = asInteger(args["Device Type"]);
        const int64_t id = args.contains("Device Id") ? asInteger(args["Device Id"]) : 0;
        if (type == 0) {
            hostOnly = true; // host memory: not the GPU's
            continue;
        }
        ProfilerTimeline& timeline = byDevice[{ type, id }];
        timeline.format = ProfilerTimelineFormat::ChromeTrace;
        timeline.device = deviceTypeName(type) + ":" + std::to_string(std::max<int64_t>(id, 0));
        ++timeline.events;
        ProfilerTimeline::Point point;
        point.timeUs = event.contains("ts") ? asInteger(event["ts"]) : 0;
        point.bytes[static_cast<size_t>(ProfilerCategory::None)] = asInteger(args["Total Allocated"]);
        if (!timeline.points.empty() && timeline.points.back().timeUs == point.timeUs)
            timeline.points.back() = point;
        else
            timeline.points.push_back(point);
    }
    std::vector<ProfilerTimeline> timelines;
    for (auto& [device, timeline] : byDevice) {
        // Kineto writes events per thread; the totals are the allocator's, so order them by time.
        std::stable_sort(timeline.points.begin(), timeline.points.end(),
            [](const ProfilerTimeline::Point& a, const ProfilerTimeline::Point& b) { return a.timeUs < b.timeUs; });
        timeline.warnings.push_back("a chrome trace records the allocator's totals only, not what the memory was "
                                    "for: every byte shows as None (unknown)");
        timelines.push_back(std::move(timeline));
    }
    if (timelines.empty())
        throw std::runtime_error(hostOnly ? "the chrome trace's memory events are all host (CPU) memory"
                                          : "the chrome trace has no [memory] events: profile with "
                                            "torch.profiler.profile(profile_memory=True)");
    return timelines;
}

} // namespace

ProfilerFileKind sniffProfilerFile(std::string_view bytes)
{
    if (isGzip(bytes)) {
        bool complete = false;
        const auto head = gunzip(bytes, sniffWindow, &complete);
        if (!head)
            return ProfilerFileKind::None;
        return sniffPlain(*head);
    }
    return sniffPlain(bytes.substr(0, sniffWindow));
}

ProfilerReadResult readProfilerFile(std::string_view bytes, const std::string& path)
{
    ProfilerReadResult result;
    std::string inflated;
    if (isGzip(bytes)) {
        bool complete = false;
        auto all = gunzip(bytes, maxInflatedBytes, &complete);
        if (!all) {
            result.error = "corrupt gzip data around a torch.profiler memory timeline";
            return result;
        }
        if (!complete) {
            result.error = all->size() >= maxInflatedBytes
                ? "the gzip inflates to more than 2 GiB; not a torch.profiler memory timeline"
                : "the gzip data ends early: the file was cut";
            return result;
        }
        inflated = std::move(*all);
        bytes = inflated;
    }
    const ProfilerFileKind kind = sniffPlain(bytes.substr(0, sniffWindow));
    if (kind == ProfilerFileKind::Html) {
        result.error = "a torch.profiler memory timeline exported as HTML holds only a picture of the plot; "
                       "export it as JSON instead: prof.export_memory_timeline(\"memory.raw.json\")";
        return result;
    }
    try {
        const nlohmann::json document = nlohmann::json::parse(bytes.begin(), bytes.end());
        switch (kind) {
        case ProfilerFileKind::Raw:
            result.timelines.push_back(readRaw(document));
            break;
        case ProfilerFileKind::Coalesced:
            result.timelines.push_back(readCoalesced(document));
            break;
        case ProfilerFileKind::ChromeTrace:
            result.timelines = readChromeTrace(document);
            break;
        default:
            result.error = "not a torch.profiler memory timeline";
            return result;
        }
    } catch (const nlohmann::json::exception& error) {
        // nlohmann quotes the last bytes it read, which may not be UTF-8: the error goes into JSON.
        result.error = "the torch.profiler memory timeline is not valid JSON: " + text::sanitizedUtf8(error.what());
        return result;
    } catch (const std::exception& error) {
        result.error = text::sanitizedUtf8(error.what());
        return result;
    }
    for (auto& timeline : result.timelines) {
        timeline.path = path;
        if (timeline.points.empty()) {
            result.timelines.clear();
            result.error = "the torch.profiler memory timeline has no events";
            break;
        }
    }
    return result;
}

} // namespace oomlens
