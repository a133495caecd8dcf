// An enum's names as one table of (value, name) pairs, from which to_string and parse are derived.
#pragma once

#include <array>
#include <cstddef>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wavel {

template <class Enum, std::size_t N>
using NameTable = std::array<std::pair<Enum, std::string_view>, N>;

/// The name of `value`, or "?" when the table lacks it.
template <class Enum, std::size_t N>
constexpr std::string_view name_of(const NameTable<Enum, N>& table, Enum value) {
  for (const auto& [v, name] : table) {
    if (v == value) return name;
  }
  return "?";
}

/// The value named `text`, if any.
template <class Enum, std::size_t N>
constexpr std::optional<Enum> value_of(const NameTable<Enum, N>& table, std::string_view text) {
  for (const auto& [v, name] : table) {
    if (name == text) return v;
  }
  return std::nullopt;
}

/// Every name, in table order (the options a reader offers).
template <class Enum, std::size_t N>
std::vector<std::string> names_in(const NameTable<Enum, N>& table) {
  std::vector<std::string> out;
  out.reserve(N);
  for (const auto& [v, name] : table) out.emplace_back(name);
  return out;
}

}  // namespace wavel
