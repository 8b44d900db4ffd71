#pragma once

// Numbers typed on the command line (`--device 1`, `--params 1.3e9`, `--cache 8`), read as the
// command line has always read them (Qt's QString::toInt, toUInt and toDouble in the C locale):
// white space around the number is ignored (ASCII white space around an integer, any around a
// double), a sign may lead, nothing else may follow, and a value out of the type's range is no
// number.

#include <optional>
#include <string_view>

namespace oomlens {

std::optional<int> intFromText(std::string_view text);
std::optional<unsigned> unsignedFromText(std::string_view text);
// Decimal digits with an optional fraction and exponent ("1.3e9", ".5", "7."), "inf" and "nan"
// (letters in any case); no hexadecimal, no digit grouping. A value too large for a double, or
// one that rounds to zero though a digit before its exponent is not 0, is no number.
std::optional<double> doubleFromText(std::string_view text);

} // namespace oomlens
