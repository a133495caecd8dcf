// Content hashes for provenance (not for security).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace wavel {

/// 64-bit FNV-1a of the bytes.
std::uint64_t fnv1a64(std::string_view bytes);

/// SplitMix64's finaliser (Steele, Lea and Flood 2014): a counter-based mix for seeded choices.
inline std::uint64_t splitmix64(std::uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

/// 16 lower-case hex digits.
std::string to_hex(std::uint64_t value);

}  // namespace wavel
