// One declaration per record field: a record lists its fields once, in a static
//   template <class Self, class Visit> static void fields(Self& r, Visit&& visit)
// calling visit(name, unit, r.field, column) for each, and packing, unpacking and table columns are
// derived from that list. A field is a number, a string, a bool, a record with fields(), a vector
// of those, or any other trivially copyable struct (packed as its bytes).
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "wavel/common/error.hpp"
#include "wavel/common/pack.hpp"

namespace wavel::fields {

/// Where a field appears besides the packed record: nowhere, or as a column of the record's own
/// table (e.g. the `settings` table for a SettingResult).
enum class Column { none, own };

namespace detail {
struct Ignore {
  template <class... A>
  void operator()(A&&...) const {}
};
template <class T, class = void>
struct HasFields : std::false_type {};
template <class T>
struct HasFields<T, std::void_t<decltype(T::fields(std::declval<const T&>(), Ignore{}))>> : std::true_type {};
template <class T>
struct IsVector : std::false_type {};
template <class T, class A>
struct IsVector<std::vector<T, A>> : std::true_type {};
}  // namespace detail

template <class T>
inline constexpr bool has_fields_v = detail::HasFields<T>::value;

template <class T>
void pack(Packer& p, const T& value) {
  if constexpr (has_fields_v<T>) {
    T::fields(value, [&](const char*, const char*, const auto& field, Column = Column::none) { pack(p, field); });
  } else if constexpr (detail::IsVector<T>::value) {
    p.put(static_cast<std::uint64_t>(value.size()));
    for (const auto& item : value) pack(p, item);
  } else if constexpr (std::is_same_v<T, bool>) {
    p.put(static_cast<std::uint8_t>(value ? 1 : 0));
  } else {
    p.put(value);  // strings, numbers, plain structs
  }
}

template <class T>
void unpack(Unpacker& u, T& value) {
  if constexpr (has_fields_v<T>) {
    T::fields(value, [&](const char*, const char*, auto& field, Column = Column::none) { unpack(u, field); });
  } else if constexpr (detail::IsVector<T>::value) {
    value.resize(u.count(sizeof(std::uint64_t)));  // each item is at least a length's worth of bytes
    for (auto& item : value) unpack(u, item);
  } else if constexpr (std::is_same_v<T, bool>) {
    value = u.get<std::uint8_t>() != 0;
  } else {
    u.get(value);
  }
}

/// For each field of `to`, `op(name, to_field, from_field)` with the field of `from` of the same name
/// (both numbers, or both of one type); InternalError if `from` has no such field.
template <class From, class To, class Op>
void combine_by_name(const From& from, To& to, Op&& op) {
  To::fields(to, [&](const char* name, const char*, auto& field, Column = Column::none) {
    using T = std::remove_reference_t<decltype(field)>;
    bool found = false;
    From::fields(from, [&](const char* n, const char*, const auto& source, Column = Column::none) {
      using S = std::decay_t<decltype(source)>;
      if constexpr ((std::is_arithmetic_v<T> && std::is_arithmetic_v<S>) || std::is_same_v<T, S>) {
        if (!found && std::strcmp(n, name) == 0) {
          op(name, field, source);
          found = true;
        }
      }
    });
    if (!found) throw InternalError(std::string("fields::combine_by_name: no field '") + name + "' to take");
  });
}

/// Every field of `to` set from the field of `from` of the same name (a bool as 0 or 1).
template <class From, class To>
void copy_by_name(const From& from, To& to) {
  combine_by_name(from, to, [](const char*, auto& field, const auto& source) {
    field = static_cast<std::remove_reference_t<decltype(field)>>(source);
  });
}

}  // namespace wavel::fields
