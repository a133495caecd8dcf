// Content hashes for provenance (not for security).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace wavel {

/// 64-bit FNV-1a of the bytes.
std::uint64_t fnv1a64(std::string_view bytes);

/// 16 lower-case hex digits.
std::string to_hex(std::uint64_t value);

}  // namespace wavel
