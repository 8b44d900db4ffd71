#pragma once

#include <cstdint>
#include <functional>

namespace oomlens {

// A small index into one of the big shared tables (strings, frames, stacks).
// Distinct tag types keep a FrameId from being passed where a StackId is meant.
template <typename Tag> struct TypedId
{
    static constexpr uint32_t invalidValue = UINT32_MAX;
    uint32_t value = invalidValue;

    constexpr TypedId() = default;
    constexpr explicit TypedId(uint32_t v)
        : value(v)
    { }
    constexpr bool isValid() const { return value != invalidValue; }
    friend constexpr bool operator==(TypedId a, TypedId b) { return a.value == b.value; }
    friend constexpr bool operator!=(TypedId a, TypedId b) { return a.value != b.value; }
    friend constexpr bool operator<(TypedId a, TypedId b) { return a.value < b.value; }
};

using StringId = TypedId<struct StringTag>;
using FrameId = TypedId<struct FrameTag>;
using StackId = TypedId<struct StackTag>;

} // namespace oomlens

template <typename Tag> struct std::hash<oomlens::TypedId<Tag>>
{
    size_t operator()(oomlens::TypedId<Tag> id) const noexcept { return std::hash<uint32_t>()(id.value); }
};
