#include "parsers/pickle/snapshotcontainer.h"

#include "parsers/pickle/base64.h"
#include "parsers/pickle/picklevalue.h"
#include "parsers/text/textlines.h"

#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <memory>
#include <optional>

namespace oomlens::pickle {

namespace {

constexpr size_t sniffWindow = 64 * 1024;

// An entry's name as an error message may show it: the archive's bytes, so a newline or other
// control byte would break the one-line error (the fuzz target `container` found one) and bytes
// that are not UTF-8 would break the JSON. Control bytes become '?', the rest is made valid UTF-8.
std::string printableName(std::string_view name)
{
    std::string shown(name.substr(0, 200));
    for (char& c : shown) {
        if (static_cast<unsigned char>(c) < 0x20 || c == 0x7f)
            c = '?';
    }
    return text::sanitizedUtf8(shown);
}

DecodeError formatError(const std::string& message)
{
    return DecodeError(ErrorKind::Format, message);
}

uint64_t little(std::string_view bytes, size_t at, int width)
{
    uint64_t v = 0;
    for (int b = width - 1; b >= 0; --b)
        v = (v << 8) | static_cast<unsigned char>(bytes[at + static_cast<size_t>(b)]);
    return v;
}

bool isPickle(std::string_view bytes)
{
    return bytes.size() >= 3 && static_cast<unsigned char>(bytes[0]) == 0x80
        && static_cast<unsigned char>(bytes[1]) >= 2 && static_cast<unsigned char>(bytes[1]) <= 5;
}

// Protocols 0 and 1 have no PROTO header. Only an explicit read accepts them (sniffing does not:
// text may start with '(' too): a dict or list opener, and STOP at the end.
bool isLegacyPickle(std::string_view bytes)
{
    if (bytes.size() < 3 || (bytes[0] != '(' && bytes[0] != '}' && bytes[0] != ']'))
        return false;
    const auto last = bytes.find_last_not_of(std::string_view("\0\r\n ", 4));
    return last != std::string_view::npos && bytes[last] == '.';
}

bool isGzip(std::string_view bytes)
{
    return bytes.size() >= 18 && static_cast<unsigned char>(bytes[0]) == 0x1f
        && static_cast<unsigned char>(bytes[1]) == 0x8b && bytes[2] == 8;
}

bool isZip(std::string_view bytes)
{
    return bytes.size() >= 30 && bytes.substr(0, 4) == std::string_view("PK\x03\x04", 4);
}

std::string_view skipSpace(std::string_view text)
{
    if (text.substr(0, 3) == "\xEF\xBB\xBF")
        text.remove_prefix(3);
    const auto first = text.find_first_not_of(" \t\r\n");
    return first == std::string_view::npos ? std::string_view() : text.substr(first);
}

bool isJsonSnapshot(std::string_view bytes)
{
    const auto text = skipSpace(bytes);
    if (text.empty())
        return false;
    const auto head = text.substr(0, sniffWindow);
    if (text[0] == '{')
        return head.find("\"segments\"") != std::string_view::npos
            || head.find("\"device_traces\"") != std::string_view::npos;
    if (text[0] == '[')
        return head.find("\"total_size\"") != std::string_view::npos
            && head.find("\"blocks\"") != std::string_view::npos;
    return false;
}

// The _memory_viz page embeds json.dumps([{"name": ..., "base64": "<pickle>"}]); a base64 pickle
// starts with "gA" (0x80).
std::optional<size_t> findBase64Blob(std::string_view bytes)
{
    for (size_t at = bytes.find("\"base64\""); at != std::string_view::npos; at = bytes.find("\"base64\"", at + 1)) {
        size_t p = at + 8;
        while (p < bytes.size() && (bytes[p] == ' ' || bytes[p] == ':'))
            ++p;
        if (p + 3 <= bytes.size() && bytes.substr(p, 3) == "\"gA")
            return p + 1;
    }
    return std::nullopt;
}

bool isMemoVizHtml(std::string_view bytes)
{
    const auto head = bytes.substr(0, sniffWindow);
    const auto text = skipSpace(head);
    if (text.empty() || text[0] != '<')
        return false;
    return findBase64Blob(head).has_value();
}

std::string inflate(
    std::string_view input, int windowBits, uint64_t limit, const std::atomic_bool* cancel, const char* what)
{
    z_stream zs {};
    if (inflateInit2(&zs, windowBits) != Z_OK)
        throw formatError(std::string("cannot start zlib for ") + what);
    std::string out;
    out.resize(std::min<uint64_t>(limit, std::max<uint64_t>(input.size() * 4, 1 << 16)));
    zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data()));
    size_t produced = 0;
    size_t consumed = 0;
    int status = Z_OK;
    while (status != Z_STREAM_END) {
        if (cancel && cancel->load(std::memory_order_relaxed)) {
            inflateEnd(&zs);
            throw DecodeError(ErrorKind::Cancelled, "cancelled");
        }
        if (produced == out.size()) {
            if (out.size() >= limit) {
                inflateEnd(&zs);
                throw formatError(std::string(what) + " inflates to more than " + std::to_string(limit >> 30) + " GiB");
            }
            out.resize(std::min<uint64_t>(limit, out.size() * 2));
        }
        const size_t chunkIn = std::min<size_t>(input.size() - consumed, 1u << 30);
        const size_t chunkOut = std::min<size_t>(out.size() - produced, 1u << 30);
        zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(input.data() + consumed));
        zs.avail_in = static_cast<uInt>(chunkIn);
        zs.next_out = reinterpret_cast<Bytef*>(out.data() + produced);
        zs.avail_out = static_cast<uInt>(chunkOut);
        status = ::inflate(&zs, Z_NO_FLUSH);
        consumed += chunkIn - zs.avail_in;
        produced += chunkOut - zs.avail_out;
        if (status == Z_BUF_ERROR && consumed == input.size() && zs.avail_out != 0) {
            inflateEnd(&zs);
            throw formatError(
                std::string("truncated ") + what + ": the compressed data ends at byte " + std::to_string(consumed));
        }
        if (status != Z_OK && status != Z_STREAM_END && status != Z_BUF_ERROR) {
            const std::string reason = zs.msg ? zs.msg : "corrupt data";
            inflateEnd(&zs);
            throw formatError(
                std::string("corrupt ") + what + " near compressed byte " + std::to_string(consumed) + ": " + reason);
        }
    }
    inflateEnd(&zs);
    out.resize(produced);
    return out;
}

// Where the central directory starts and how many entries it holds, from the end-of-central-
// directory record (its ZIP64 form when the plain one is saturated).
struct CentralDirectory
{
    uint64_t entries = 0;
    uint64_t offset = 0;
};

CentralDirectory centralDirectory(std::string_view zip)
{
    const size_t minEocd = 22;
    if (zip.size() < minEocd)
        throw formatError("truncated ZIP archive: no end-of-central-directory record");
    size_t eocd = std::string_view::npos;
    const size_t lowest = zip.size() > minEocd + 65535 ? zip.size() - minEocd - 65535 : 0;
    for (size_t p = zip.size() - minEocd + 1; p-- > lowest;) {
        if (zip.substr(p, 4) == std::string_view("PK\x05\x06", 4)) {
            eocd = p;
            break;
        }
    }
    if (eocd == std::string_view::npos)
        throw formatError("truncated ZIP archive: no end-of-central-directory record");
    CentralDirectory directory { little(zip, eocd + 10, 2), little(zip, eocd + 16, 4) };
    if ((directory.offset == 0xffffffffu || directory.entries == 0xffff) && eocd >= 20
        && zip.substr(eocd - 20, 4) == std::string_view("PK\x06\x07", 4)) {
        const uint64_t eocd64 = little(zip, eocd - 20 + 8, 8);
        // A 64-bit offset from the file: compare without adding to it (it may be near 2^64).
        if (eocd64 > zip.size() || zip.size() - eocd64 < 56
            || zip.substr(eocd64, 4) != std::string_view("PK\x06\x06", 4))
            throw formatError("corrupt ZIP64 archive: bad end-of-central-directory record");
        directory.entries = little(zip, eocd64 + 32, 8);
        directory.offset = little(zip, eocd64 + 48, 8);
    }
    return directory;
}

// One central directory entry: what is needed to find its data, and where the next one starts.
struct ZipEntry
{
    std::string_view name;
    uint64_t method = 0;
    uint64_t compressed = 0;
    uint64_t uncompressed = 0;
    uint64_t local = 0; // the local header's offset
    uint64_t extraBegin = 0;
    uint64_t extraEnd = 0;
    uint64_t next = 0;
};

ZipEntry zipEntryAt(std::string_view zip, uint64_t p)
{
    if (p > zip.size() || zip.size() - p < 46 || zip.substr(p, 4) != std::string_view("PK\x01\x02", 4))
        throw formatError("corrupt ZIP archive: bad central directory entry at byte " + std::to_string(p));
    ZipEntry entry;
    entry.method = little(zip, p + 10, 2);
    entry.compressed = little(zip, p + 20, 4);
    entry.uncompressed = little(zip, p + 24, 4);
    const uint64_t nameLength = little(zip, p + 28, 2);
    const uint64_t extraLength = little(zip, p + 30, 2);
    const uint64_t commentLength = little(zip, p + 32, 2);
    entry.local = little(zip, p + 42, 4);
    if (p + 46 + nameLength + extraLength > zip.size())
        throw formatError("corrupt ZIP archive: central directory runs past the end");
    entry.name = zip.substr(p + 46, nameLength);
    entry.extraBegin = p + 46 + nameLength;
    entry.extraEnd = entry.extraBegin + extraLength;
    entry.next = entry.extraEnd + commentLength;
    return entry;
}

// ZIP64 extra field: the 64-bit values appear only for fields saturated at 0xffffffff.
// A field's own size is not trusted to stay inside the extra block (or the file).
void readZip64Extra(std::string_view zip, ZipEntry& entry)
{
    for (uint64_t e = entry.extraBegin; e + 4 <= entry.extraEnd;) {
        const uint64_t id = little(zip, e, 2);
        const uint64_t size = little(zip, e + 2, 2);
        if (id == 1) {
            const uint64_t fieldEnd = std::min(e + 4 + size, entry.extraEnd);
            uint64_t f = e + 4;
            for (uint64_t* field : { &entry.uncompressed, &entry.compressed, &entry.local }) {
                if (*field == 0xffffffffu && f + 8 <= fieldEnd) {
                    *field = little(zip, f, 8);
                    f += 8;
                }
            }
        }
        e += 4 + size;
    }
}

// The entry's bytes as stored, past its local header.
std::string_view storedData(std::string_view zip, const ZipEntry& entry)
{
    // A ZIP64 offset is any 64-bit value: compare without adding to it.
    if (entry.local > zip.size() || zip.size() - entry.local < 30
        || zip.substr(entry.local, 4) != std::string_view("PK\x03\x04", 4))
        throw formatError("corrupt ZIP archive: bad local header for " + printableName(entry.name));
    const uint64_t data = entry.local + 30 + little(zip, entry.local + 26, 2) + little(zip, entry.local + 28, 2);
    if (data > zip.size() || entry.compressed > zip.size() - data)
        throw formatError("truncated ZIP archive: " + printableName(entry.name) + " runs past the end");
    return zip.substr(data, entry.compressed);
}

bool isDataPickle(std::string_view name)
{
    return name == "data.pkl" || (name.size() > 9 && name.substr(name.size() - 9) == "/data.pkl");
}

// A minimal reader of the ZIP central directory: torch.save writes "<name>/data.pkl", usually
// stored (uncompressed) and 64-byte aligned.
std::string_view zipEntry(std::string_view zip, std::string& storage, const std::atomic_bool* cancel, bool inflateData)
{
    const CentralDirectory directory = centralDirectory(zip);
    uint64_t p = directory.offset;
    for (uint64_t i = 0; i < directory.entries; ++i) {
        ZipEntry entry = zipEntryAt(zip, p);
        if (!isDataPickle(entry.name)) {
            p = entry.next;
            continue;
        }
        readZip64Extra(zip, entry);
        const auto raw = storedData(zip, entry);
        if (entry.method == 0 || (entry.method == 8 && !inflateData))
            return raw;
        if (entry.method == 8) {
            storage = inflate(raw, -MAX_WBITS, std::min(entry.uncompressed + 1, maxInflatedBytes), cancel, "ZIP entry");
            return storage;
        }
        throw formatError("ZIP entry " + printableName(entry.name) + " uses compression method "
            + std::to_string(entry.method) + "; only stored and deflated entries are supported");
    }
    throw formatError("ZIP archive without a data.pkl: not a torch.save file");
}

} // namespace

ContainerKind sniffContainer(std::string_view bytes)
{
    if (isPickle(bytes))
        return ContainerKind::Pickle;
    if (isGzip(bytes)) {
        // Look inside: a gzip of anything else is not ours.
        try {
            std::string head;
            z_stream zs {};
            if (inflateInit2(&zs, 16 + MAX_WBITS) != Z_OK)
                return ContainerKind::None;
            head.resize(sniffWindow);
            zs.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(bytes.data()));
            zs.avail_in = static_cast<uInt>(std::min<size_t>(bytes.size(), 1u << 30));
            zs.next_out = reinterpret_cast<Bytef*>(head.data());
            zs.avail_out = static_cast<uInt>(head.size());
            ::inflate(&zs, Z_SYNC_FLUSH);
            head.resize(head.size() - zs.avail_out);
            inflateEnd(&zs);
            const auto inner = sniffContainer(head);
            return inner == ContainerKind::None || inner == ContainerKind::Gzip ? ContainerKind::None
                                                                                : ContainerKind::Gzip;
        } catch (const std::exception&) {
            return ContainerKind::None;
        }
    }
    if (isZip(bytes)) {
        try {
            std::string storage;
            zipEntry(bytes, storage, nullptr, false);
            return ContainerKind::TorchZip;
        } catch (const std::exception&) {
            return ContainerKind::None;
        }
    }
    if (isJsonSnapshot(bytes))
        return ContainerKind::Json;
    if (isMemoVizHtml(bytes))
        return ContainerKind::MemoVizHtml;
    return ContainerKind::None;
}

Unwrapped unwrapSnapshot(std::string_view bytes, const std::atomic_bool* cancel)
{
    Unwrapped result;
    if (bytes.empty())
        throw formatError("empty input: no snapshot data");
    if (isGzip(bytes)) {
        auto inflated
            = std::make_unique<std::string>(inflate(bytes, 16 + MAX_WBITS, maxInflatedBytes, cancel, "gzip data"));
        Unwrapped inner = unwrapSnapshot(*inflated, cancel);
        if (!inner.storage)
            inner.storage = std::move(inflated); // the payload points into it
        inner.container = "gzip";
        return inner;
    }
    if (isPickle(bytes) || isLegacyPickle(bytes)) {
        result.payload = bytes;
        result.container = "pickle";
    } else if (isZip(bytes)) {
        auto inflated = std::make_unique<std::string>();
        result.payload = zipEntry(bytes, *inflated, cancel, true);
        if (!inflated->empty())
            result.storage = std::move(inflated);
        result.container = "torch.save zip";
    } else if (isJsonSnapshot(bytes)) {
        result.payload = bytes;
        result.container = "json";
        result.json = true;
    } else if (const auto blob = isMemoVizHtml(bytes) ? findBase64Blob(bytes) : std::nullopt) {
        const size_t end = bytes.find('"', *blob);
        if (end == std::string_view::npos)
            throw formatError("truncated memory_viz page: the base64 snapshot has no end");
        std::string encoded(bytes.substr(*blob, end - *blob));
        std::erase(encoded, '\\'); // JSON may escape '/' as "\/"
        std::optional<std::string> decoded = decodeBase64(encoded);
        if (!decoded)
            throw formatError("memory_viz page: the embedded snapshot is not valid base64");
        result.storage = std::make_unique<std::string>(std::move(*decoded));
        result.payload = *result.storage; // the NUL padding after STOP is never read
        result.container = "memory_viz html";
    } else {
        throw formatError("not a memory snapshot: no pickle, gzip, torch.save ZIP, JSON or memory_viz HTML signature");
    }
    return result;
}

} // namespace oomlens::pickle
