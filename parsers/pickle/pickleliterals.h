#pragma once

#include "parsers/pickle/picklevalue.h"

#include <cstdint>
#include <string>
#include <string_view>

// The values the pickle format writes as literals: the integers of LONG1/LONG4 and of the text
// opcodes INT and LONG, the floats of BINFLOAT and FLOAT, the memo indices of PUT and GET, and the
// text of Python 2 strings and of UNICODE. No decoder state: the native unpickler's opcode loop
// calls these and pushes the result. Errors name `offset`, the opcode's byte.

namespace oomlens::pickle::literals {

// LONG1/LONG4: little-endian two's complement; one past 64 bits is Value::bigInteger().
Value longFromBytes(const unsigned char* p, uint64_t n);
// INT/LONG (protocol 0): decimal text, INT's 00 and 01 being False and True.
Value intFromText(std::string_view text, bool isLong, uint64_t offset);
// BINFLOAT: an IEEE 754 double, big-endian.
Value floatFromBigEndian(const unsigned char* p);
// FLOAT (protocol 0): the repr of a float.
Value floatFromText(std::string_view text, uint64_t offset);
// PUT/GET (protocol 0): a decimal memo index; `opcode` names which one in the error.
uint64_t memoIndexFromText(std::string_view text, const char* opcode, uint64_t offset);
// A Python 2 str, read as latin-1 as the embedded decoder is told to; UTF-8 in `out`.
std::string_view latin1ToUtf8(std::string_view raw, std::string& out);
// UNICODE's raw-unicode-escape (latin-1 bytes, except \uXXXX and \UXXXXXXXX); UTF-8 in `out`.
std::string_view rawUnicodeToUtf8(std::string_view line, std::string& out, uint64_t offset);

} // namespace oomlens::pickle::literals
