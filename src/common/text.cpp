// UTF-8 repair and control-character escapes; see text.hpp.
#include "wavel/common/text.hpp"

#include <cstdint>
#include <cstdio>

namespace wavel {

namespace {

/// The length of the well-formed UTF-8 sequence at `i` (RFC 3629: no overlongs, no surrogates,
/// nothing past U+10FFFF), or 0; its code point in `cp`.
std::size_t sequence_at(std::string_view s, std::size_t i, std::uint32_t& cp) {
  const auto b = [&](std::size_t k) { return static_cast<unsigned char>(s[i + k]); };
  const unsigned char c = b(0);
  if (c < 0x80) {
    cp = c;
    return 1;
  }
  std::size_t n = 0;
  std::uint32_t min = 0;
  if ((c & 0xe0) == 0xc0) {
    n = 2, cp = c & 0x1f, min = 0x80;
  } else if ((c & 0xf0) == 0xe0) {
    n = 3, cp = c & 0x0f, min = 0x800;
  } else if ((c & 0xf8) == 0xf0) {
    n = 4, cp = c & 0x07, min = 0x10000;
  } else {
    return 0;
  }
  if (i + n > s.size()) return 0;
  for (std::size_t k = 1; k < n; ++k) {
    if ((b(k) & 0xc0) != 0x80) return 0;
    cp = (cp << 6) | (b(k) & 0x3f);
  }
  if (cp < min || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
  return n;
}

std::string repaired(std::string_view text, bool escape_controls) {
  std::string out;
  out.reserve(text.size());
  for (std::size_t i = 0; i < text.size();) {
    std::uint32_t cp = 0;
    const std::size_t n = sequence_at(text, i, cp);
    if (n == 0) {
      out += "\xef\xbf\xbd";  // U+FFFD
      ++i;
      continue;
    }
    const bool control = (cp < 0x20 && cp != '\t') || cp == 0x7f || (cp >= 0x80 && cp < 0xa0);
    if (escape_controls && control) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", static_cast<unsigned>(cp));
      out += escaped;
    } else {
      out.append(text.substr(i, n));
    }
    i += n;
  }
  return out;
}

}  // namespace

std::string valid_utf8(std::string_view text) { return repaired(text, false); }

std::string printable(std::string_view text) { return repaired(text, true); }

}  // namespace wavel
