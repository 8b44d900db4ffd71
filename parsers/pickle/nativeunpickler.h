#pragma once

#include "parsers/pickle/picklevalue.h"

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace oomlens::pickle {

class SnapshotBuilder;

// Streaming decoder for the data-only subset of the pickle format (protocols 0-5). It keeps a
// small value stack and a compact memo and feeds every value straight into a SnapshotBuilder;
// nothing resembling a Python object tree is built. Opcodes that import or call are refused.
class NativeUnpickler {
public:
    explicit NativeUnpickler(SnapshotBuilder& builder);

    std::function<void(uint64_t done, uint64_t total)> progress;
    const std::atomic_bool* cancel = nullptr;

    // Decodes one pickle and returns its top-level value. Throws DecodeError (with the byte
    // offset in the message) on bad, hostile or unsupported input.
    Value decode(std::string_view data);

    int protocol() const { return m_protocol; }

    static constexpr size_t maxStack = size_t(1) << 24;
    static constexpr size_t maxMarks = 10000;

private:
    void run();
    Value take(const Value& value);
    Value finalize(uint32_t handle);
    void push(const Value& value);
    size_t popMark();
    uint32_t target(size_t below, Kind kind);
    void memoPut(uint64_t index);
    void memoGet(uint64_t index);
    void forget(uint64_t index);
    Value decodeLong(const unsigned char* p, uint64_t n) const;
    Value textLine(std::string_view line);
    Value intLine(std::string_view line, bool isLong) const;

    uint64_t packMemo(const Value& value);
    Value unpackMemo(uint64_t packed) const;

    SnapshotBuilder& m_builder;
    const unsigned char* m_base = nullptr;
    uint64_t m_size = 0;
    uint64_t m_pos = 0;
    uint64_t m_opStart = 0;
    int m_protocol = 0;
    Value m_root;

    std::vector<Value> m_stack;
    std::vector<size_t> m_marks;
    std::vector<uint64_t> m_memo; // packed: kind + 1 in the top byte, 0 = unset
    std::vector<Value> m_memoWide; // memo values whose payload needs 64 bits
    std::vector<uint32_t> m_handleMemo; // builder handle -> memo index of that open container
    std::vector<size_t> m_openPos;      // builder handle -> stack position of that open container
    std::string m_scratch;
};

} // namespace oomlens::pickle
