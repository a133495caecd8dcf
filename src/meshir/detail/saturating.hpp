// Saturating 64-bit arithmetic for sizes read from files: a figure too large saturates at the
// largest value (a later range check refuses it), never overflows; rectangles' ends likewise.
#pragma once

#include <algorithm>
#include <cstdint>
#include <limits>

#include "wavel/meshir/schedule.hpp"

namespace wavel::meshir::detail {

inline constexpr std::int64_t int64_max = std::numeric_limits<std::int64_t>::max();

inline std::int64_t saturating_add(std::int64_t a, std::int64_t b) { return a > int64_max - b ? int64_max : a + b; }

inline std::int64_t saturating_mul(std::int64_t a, std::int64_t b) {
  if (a == 0 || b == 0) return 0;
  return a > int64_max / b ? int64_max : a * b;
}

/// ceil(a / b) for a >= 0, b > 0.
inline std::int64_t ceil_div(std::int64_t a, std::int64_t b) { return a / b + (a % b != 0 ? 1 : 0); }

inline std::int64_t non_negative(std::int64_t v) { return std::max<std::int64_t>(v, 0); }
inline std::int64_t at_least_one(std::int64_t v) { return std::max<std::int64_t>(v, 1); }

// Rectangles come from files, so their ends are computed without overflow: x + w saturates.
inline std::int64_t end_of(std::int64_t start, std::int64_t length) {
  std::int64_t end = 0;
  if (!__builtin_add_overflow(start, length, &end)) return end;
  return length > 0 ? int64_max : std::numeric_limits<std::int64_t>::min();
}

inline bool overlap(const Rect& a, const Rect& b) {
  return a.x < end_of(b.x, b.w) && b.x < end_of(a.x, a.w) && a.y < end_of(b.y, b.h) && b.y < end_of(a.y, a.h);
}

}  // namespace wavel::meshir::detail
