#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string_view>
#include <utility>

namespace oomlens {

// An enum's spelling in files, JSON and printed output, written once: a typo in a name is a
// compile error everywhere else, and the two directions cannot drift apart.
template <typename Enum, size_t N> using NameTable = std::array<std::pair<Enum, std::string_view>, N>;

template <typename Enum, size_t N> constexpr std::string_view nameIn(const NameTable<Enum, N>& names, Enum wanted)
{
    for (const auto& [value, text] : names) {
        if (value == wanted)
            return text;
    }
    return {};
}

template <typename Enum, size_t N>
constexpr std::optional<Enum> valueNamed(const NameTable<Enum, N>& names, std::string_view name)
{
    for (const auto& [value, text] : names) {
        if (text == name)
            return value;
    }
    return std::nullopt;
}

} // namespace oomlens
