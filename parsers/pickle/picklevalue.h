#pragma once

// Plain C++ on purpose: the embedded-Python decoder (parsers/python/) includes this header and
// must never see a Qt header.

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <string_view>

namespace oomlens::pickle {

// What a decoded value is. The scalar kinds carry their payload inline; containers are either
// retained generic nodes (List/Tuple/Dict/Set) or were recognised as part of the snapshot model
// as soon as they completed (Frame, Stack, and the staged records).
enum class Kind : uint8_t {
    None,
    Bool,
    Int,
    BigInt, // an integer outside [-2^63, 2^64); its value is not kept (2^63..2^64-1 stay Int, as bits)
    Float,
    Str,
    Bytes,
    EmptyList,
    Pair, // a 2-tuple of small ints (segment_pool_id): ref = first, i = second
    List,
    Tuple,
    Dict,
    Set,
    Frame,
    Stack,
    Event,
    Block,
    Segment,
    History,
    Annotation,
    Records, // a list of staged records of one kind: ref = range index
    Open, // native decoder only: a container still being filled; ref = builder handle, i = its Kind
    // Native decoder only: a memo slot the other half of a split list stores (nativeunpicklersplit.cpp);
    // ref = memo index, i = how many slots this half had stored when it was read.
    Deferred,
};

inline const char* kindName(Kind kind)
{
    static constexpr const char* names[] = { "None", "bool", "int", "big int", "float", "str", "bytes", "list", "tuple",
        "list", "tuple", "dict", "set", "frame", "frame list", "trace entry", "block", "segment", "history entry",
        "annotation", "list", "unfinished container", "value stored by the other half of a split list" };
    return names[static_cast<size_t>(kind)];
}

inline bool isRecord(Kind kind)
{
    return kind >= Kind::Event && kind <= Kind::Annotation;
}

struct Value
{
    Kind kind = Kind::None;
    uint32_t ref = 0; // StringId, FrameId, StackId, node or record index, by kind
    union {
        int64_t i = 0;
        double f;
    };

    static Value none() { return {}; }
    static Value boolean(bool b)
    {
        Value v;
        v.kind = Kind::Bool;
        v.i = b ? 1 : 0;
        return v;
    }
    static Value integer(int64_t n)
    {
        Value v;
        v.kind = Kind::Int;
        v.i = n;
        return v;
    }
    static Value bigInteger()
    {
        Value v;
        v.kind = Kind::BigInt;
        return v;
    }
    static Value real(double d)
    {
        Value v;
        v.kind = Kind::Float;
        v.f = d;
        return v;
    }
    static Value of(Kind kind, uint32_t ref)
    {
        Value v;
        v.kind = kind;
        v.ref = ref;
        return v;
    }
};

// Why decoding stopped. Only Unsupported lets the reader retry with the other decoder.
enum class ErrorKind : uint8_t { Format, Safety, Unsupported, Cancelled };

class DecodeError : public std::runtime_error
{
public:
    DecodeError(ErrorKind kind, const std::string& message)
        : std::runtime_error(message)
        , m_kind(kind)
    { }
    ErrorKind kind() const { return m_kind; }

private:
    ErrorKind m_kind;
};

// Receives decoded values bottom-up: a container's children are complete before the container
// closes. Both decoders (native and embedded Python) and the JSON reader drive the same
// implementation, so one place decides how dicts become frames, blocks, segments and events.
class ValueBuilder
{
public:
    virtual ~ValueBuilder() = default;

    virtual Value text(std::string_view utf8) = 0;
    virtual Value bytes(std::string_view data) = 0;

    // kind: List, Tuple, Dict or Set. Returns a handle valid until close().
    virtual uint32_t open(Kind kind) = 0;
    virtual void append(uint32_t handle, const Value& item) = 0;
    virtual void setItem(uint32_t handle, const Value& key, const Value& value) = 0;
    virtual Value close(uint32_t handle) = 0;

    // The same object is referenced a second time (pickle memo, Python object identity).
    // Returns the value to use, or throws when the model cannot share it (a trace entry).
    virtual Value again(const Value& value) = 0;
};

} // namespace oomlens::pickle
