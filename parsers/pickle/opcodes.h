#pragma once

// Header-only and Qt-free: the embedded-Python decoder runs the same safety scan before it hands
// bytes to CPython, so both decoders refuse code with the same message and byte offset.

#include "parsers/pickle/picklevalue.h"

#include <charconv>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>

namespace oomlens::pickle {

namespace op {
constexpr uint8_t Mark = '(';
constexpr uint8_t Stop = '.';
constexpr uint8_t Pop = '0';
constexpr uint8_t PopMark = '1';
constexpr uint8_t Dup = '2';
constexpr uint8_t Float = 'F';
constexpr uint8_t Int = 'I';
constexpr uint8_t BinInt = 'J';
constexpr uint8_t BinInt1 = 'K';
constexpr uint8_t Long = 'L';
constexpr uint8_t BinInt2 = 'M';
constexpr uint8_t None = 'N';
constexpr uint8_t Persid = 'P';
constexpr uint8_t BinPersid = 'Q';
constexpr uint8_t Reduce = 'R';
constexpr uint8_t String = 'S';
constexpr uint8_t BinString = 'T';
constexpr uint8_t ShortBinString = 'U';
constexpr uint8_t Unicode = 'V';
constexpr uint8_t BinUnicode = 'X';
constexpr uint8_t Append = 'a';
constexpr uint8_t Build = 'b';
constexpr uint8_t Global = 'c';
constexpr uint8_t Dict = 'd';
constexpr uint8_t EmptyDict = '}';
constexpr uint8_t Appends = 'e';
constexpr uint8_t Get = 'g';
constexpr uint8_t BinGet = 'h';
constexpr uint8_t Inst = 'i';
constexpr uint8_t LongBinGet = 'j';
constexpr uint8_t List = 'l';
constexpr uint8_t EmptyList = ']';
constexpr uint8_t Obj = 'o';
constexpr uint8_t Put = 'p';
constexpr uint8_t BinPut = 'q';
constexpr uint8_t LongBinPut = 'r';
constexpr uint8_t SetItem = 's';
constexpr uint8_t Tuple = 't';
constexpr uint8_t EmptyTuple = ')';
constexpr uint8_t SetItems = 'u';
constexpr uint8_t BinFloat = 'G';
constexpr uint8_t BinBytes = 'B';
constexpr uint8_t ShortBinBytes = 'C';
constexpr uint8_t Proto = 0x80;
constexpr uint8_t NewObj = 0x81;
constexpr uint8_t Ext1 = 0x82;
constexpr uint8_t Ext2 = 0x83;
constexpr uint8_t Ext4 = 0x84;
constexpr uint8_t Tuple1 = 0x85;
constexpr uint8_t Tuple2 = 0x86;
constexpr uint8_t Tuple3 = 0x87;
constexpr uint8_t NewTrue = 0x88;
constexpr uint8_t NewFalse = 0x89;
constexpr uint8_t Long1 = 0x8a;
constexpr uint8_t Long4 = 0x8b;
constexpr uint8_t ShortBinUnicode = 0x8c;
constexpr uint8_t BinUnicode8 = 0x8d;
constexpr uint8_t BinBytes8 = 0x8e;
constexpr uint8_t EmptySet = 0x8f;
constexpr uint8_t AddItems = 0x90;
constexpr uint8_t FrozenSet = 0x91;
constexpr uint8_t NewObjEx = 0x92;
constexpr uint8_t StackGlobal = 0x93;
constexpr uint8_t Memoize = 0x94;
constexpr uint8_t Frame = 0x95;
constexpr uint8_t ByteArray8 = 0x96;
constexpr uint8_t NextBuffer = 0x97;
constexpr uint8_t ReadOnlyBuffer = 0x98;
} // namespace op

// Long on purpose: a table, one case per opcode, of the names pickletools prints.
inline const char* opcodeName(uint8_t code)
{
    switch (code) {
    case op::Mark:
        return "MARK";
    case op::Stop:
        return "STOP";
    case op::Pop:
        return "POP";
    case op::PopMark:
        return "POP_MARK";
    case op::Dup:
        return "DUP";
    case op::Float:
        return "FLOAT";
    case op::Int:
        return "INT";
    case op::BinInt:
        return "BININT";
    case op::BinInt1:
        return "BININT1";
    case op::Long:
        return "LONG";
    case op::BinInt2:
        return "BININT2";
    case op::None:
        return "NONE";
    case op::Persid:
        return "PERSID";
    case op::BinPersid:
        return "BINPERSID";
    case op::Reduce:
        return "REDUCE";
    case op::String:
        return "STRING";
    case op::BinString:
        return "BINSTRING";
    case op::ShortBinString:
        return "SHORT_BINSTRING";
    case op::Unicode:
        return "UNICODE";
    case op::BinUnicode:
        return "BINUNICODE";
    case op::Append:
        return "APPEND";
    case op::Build:
        return "BUILD";
    case op::Global:
        return "GLOBAL";
    case op::Dict:
        return "DICT";
    case op::EmptyDict:
        return "EMPTY_DICT";
    case op::Appends:
        return "APPENDS";
    case op::Get:
        return "GET";
    case op::BinGet:
        return "BINGET";
    case op::Inst:
        return "INST";
    case op::LongBinGet:
        return "LONG_BINGET";
    case op::List:
        return "LIST";
    case op::EmptyList:
        return "EMPTY_LIST";
    case op::Obj:
        return "OBJ";
    case op::Put:
        return "PUT";
    case op::BinPut:
        return "BINPUT";
    case op::LongBinPut:
        return "LONG_BINPUT";
    case op::SetItem:
        return "SETITEM";
    case op::Tuple:
        return "TUPLE";
    case op::EmptyTuple:
        return "EMPTY_TUPLE";
    case op::SetItems:
        return "SETITEMS";
    case op::BinFloat:
        return "BINFLOAT";
    case op::BinBytes:
        return "BINBYTES";
    case op::ShortBinBytes:
        return "SHORT_BINBYTES";
    case op::Proto:
        return "PROTO";
    case op::NewObj:
        return "NEWOBJ";
    case op::Ext1:
        return "EXT1";
    case op::Ext2:
        return "EXT2";
    case op::Ext4:
        return "EXT4";
    case op::Tuple1:
        return "TUPLE1";
    case op::Tuple2:
        return "TUPLE2";
    case op::Tuple3:
        return "TUPLE3";
    case op::NewTrue:
        return "NEWTRUE";
    case op::NewFalse:
        return "NEWFALSE";
    case op::Long1:
        return "LONG1";
    case op::Long4:
        return "LONG4";
    case op::ShortBinUnicode:
        return "SHORT_BINUNICODE";
    case op::BinUnicode8:
        return "BINUNICODE8";
    case op::BinBytes8:
        return "BINBYTES8";
    case op::EmptySet:
        return "EMPTY_SET";
    case op::AddItems:
        return "ADDITEMS";
    case op::FrozenSet:
        return "FROZENSET";
    case op::NewObjEx:
        return "NEWOBJ_EX";
    case op::StackGlobal:
        return "STACK_GLOBAL";
    case op::Memoize:
        return "MEMOIZE";
    case op::Frame:
        return "FRAME";
    case op::ByteArray8:
        return "BYTEARRAY8";
    case op::NextBuffer:
        return "NEXT_BUFFER";
    case op::ReadOnlyBuffer:
        return "READONLY_BUFFER";
    default:
        return nullptr;
    }
}

// Opcodes that import a name or call something: a snapshot never needs them.
inline bool runsCode(uint8_t code)
{
    switch (code) {
    case op::Global:
    case op::StackGlobal:
    case op::Reduce:
    case op::Build:
    case op::Inst:
    case op::Obj:
    case op::NewObj:
    case op::NewObjEx:
    case op::Ext1:
    case op::Ext2:
    case op::Ext4:
    case op::Persid:
    case op::BinPersid:
        return true;
    default:
        return false;
    }
}

inline DecodeError codeRefusal(uint8_t code, uint64_t offset)
{
    return DecodeError(ErrorKind::Safety,
        std::string("refusing to run code from the snapshot: opcode ") + opcodeName(code) + " at byte "
            + std::to_string(offset));
}

inline DecodeError truncation(uint8_t code, uint64_t offset)
{
    return DecodeError(ErrorKind::Format,
        std::string("truncated pickle: opcode ") + opcodeName(code) + " at byte " + std::to_string(offset)
            + " runs past the end of the data");
}

inline DecodeError unknownOpcode(uint8_t code, uint64_t offset)
{
    static const char hex[] = "0123456789abcdef";
    const char text[] = { '0', 'x', hex[code >> 4], hex[code & 15], 0 };
    return DecodeError(ErrorKind::Format,
        std::string("not a valid pickle: unknown opcode ") + text + " at byte " + std::to_string(offset));
}

inline DecodeError missingStop(uint64_t size)
{
    return DecodeError(ErrorKind::Format,
        "truncated pickle: the data ends at byte " + std::to_string(size) + " before the STOP opcode");
}

// Real memos are dense (MEMOIZE numbers them 0, 1, 2...); an index far past the end is an attack.
inline constexpr uint64_t memoSlack = 1u << 16;

// Long on purpose: the switch is a table of each opcode's operand, one short case per opcode.
// Walks the opcode stream without building anything. Throws the same DecodeError the native
// decoder would for code opcodes, truncation and unknown opcodes; returns the offset after STOP.
inline uint64_t scanOpcodes(std::string_view data)
{
    const auto* base = reinterpret_cast<const unsigned char*>(data.data());
    const uint64_t size = data.size();
    uint64_t pos = 0;
    auto little = [&](uint64_t at, int width) {
        uint64_t v = 0;
        for (int b = width - 1; b >= 0; --b)
            v = (v << 8) | base[at + static_cast<uint64_t>(b)];
        return v;
    };
    // CPython grows its memo to twice the largest index stored and zero-fills it: one LONG_BINPUT
    // of 2^32 - 16 asks for 64 GiB. Refuse what the native decoder refuses.
    uint64_t memoSize = 0;
    while (pos < size) {
        const uint64_t start = pos;
        const uint8_t code = base[pos++];
        const auto need = [&](uint64_t n) {
            if (n > size - pos)
                throw truncation(code, start);
        };
        const auto memoPut = [&](uint64_t index) {
            if (index < memoSize)
                return;
            if (index > memoSize + memoSlack)
                throw DecodeError(ErrorKind::Format,
                    "memo index " + std::to_string(index) + " is out of range at byte " + std::to_string(start));
            memoSize = index + 1;
        };
        const auto skipLine = [&] {
            const void* nl = std::memchr(base + pos, '\n', size - pos);
            if (!nl)
                throw truncation(code, start);
            pos = static_cast<uint64_t>(static_cast<const unsigned char*>(nl) - base) + 1;
        };
        if (runsCode(code))
            throw codeRefusal(code, start);
        switch (code) {
        case op::Stop:
            return pos;
        case op::Mark:
        case op::Pop:
        case op::PopMark:
        case op::Dup:
        case op::None:
        case op::Append:
        case op::Dict:
        case op::EmptyDict:
        case op::Appends:
        case op::List:
        case op::EmptyList:
        case op::SetItem:
        case op::Tuple:
        case op::EmptyTuple:
        case op::SetItems:
        case op::Tuple1:
        case op::Tuple2:
        case op::Tuple3:
        case op::NewTrue:
        case op::NewFalse:
        case op::EmptySet:
        case op::AddItems:
        case op::FrozenSet:
        case op::NextBuffer:
        case op::ReadOnlyBuffer:
            break;
        case op::Memoize:
            memoPut(memoSize);
            break;
        case op::BinPut:
            need(1);
            memoPut(base[pos]);
            pos += 1;
            break;
        case op::LongBinPut:
            need(4);
            memoPut(little(pos, 4));
            pos += 4;
            break;
        case op::Put: {
            const auto* line = reinterpret_cast<const char*>(base + pos);
            skipLine();
            uint64_t index = 0;
            const auto [end, ec] = std::from_chars(line, reinterpret_cast<const char*>(base + pos) - 1, index);
            if (ec == std::errc::result_out_of_range)
                index = ~uint64_t(0);
            if (end != line)
                memoPut(index);
            break;
        }
        case op::Proto:
        case op::BinInt1:
        case op::BinGet:
            need(1);
            pos += 1;
            break;
        case op::BinInt2:
            need(2);
            pos += 2;
            break;
        case op::BinInt:
        case op::LongBinGet:
            need(4);
            pos += 4;
            break;
        case op::BinFloat:
            need(8);
            pos += 8;
            break;
        case op::Frame: {
            // CPython's file reader allocates the whole announced frame before reading it.
            need(8);
            const uint64_t n = little(pos, 8);
            pos += 8;
            need(n);
            break;
        }
        case op::Float:
        case op::Int:
        case op::Long:
        case op::String:
        case op::Unicode:
        case op::Get:
            skipLine();
            break;
        case op::Long1:
        case op::ShortBinString:
        case op::ShortBinUnicode:
        case op::ShortBinBytes:
            need(1);
            pos += 1;
            need(base[pos - 1]);
            pos += base[pos - 1];
            break;
        case op::Long4:
        case op::BinString:
        case op::BinUnicode:
        case op::BinBytes: {
            need(4);
            const uint64_t n = little(pos, 4);
            pos += 4;
            need(n);
            pos += n;
            break;
        }
        case op::BinUnicode8:
        case op::BinBytes8:
        case op::ByteArray8: {
            need(8);
            const uint64_t n = little(pos, 8);
            pos += 8;
            need(n);
            pos += n;
            break;
        }
        default:
            throw unknownOpcode(code, start);
        }
    }
    throw missingStop(size);
}

} // namespace oomlens::pickle
