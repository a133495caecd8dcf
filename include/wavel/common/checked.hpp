// Checked 64-bit arithmetic for quantities derived from input sizes (FLOPs, bytes, rows): an
// overflow is bad input that is too large to model, never undefined behaviour.
#pragma once

#include <cstdint>
#include <string>

#include "wavel/common/error.hpp"

namespace wavel::checked {

/// Thrown when a product or sum of input-derived sizes does not fit in 64 bits (exit 65).
[[noreturn]] inline void overflow(const char* what) {
  throw InputDataError(std::string("the setting is too large to model: ") + what +
                       " exceeds what 64-bit integers hold with headroom (2^60); use smaller model or workload sizes");
}

inline std::int64_t mul(std::int64_t a, std::int64_t b, const char* what = "a size") {
  std::int64_t r = 0;
  if (__builtin_mul_overflow(a, b, &r)) overflow(what);
  return r;
}

template <class... Rest>
std::int64_t mul(std::int64_t a, std::int64_t b, std::int64_t c, Rest... rest) {
  return mul(mul(a, b), c, rest...);
}

inline std::int64_t add(std::int64_t a, std::int64_t b, const char* what = "a total") {
  std::int64_t r = 0;
  if (__builtin_add_overflow(a, b, &r)) overflow(what);
  return r;
}

}  // namespace wavel::checked
