// Human-readable numbers; see format.hpp.
#include "wavel/common/format.hpp"

#include <cmath>
#include <iomanip>
#include <sstream>

namespace wavel {

std::string human(double value, const char* unit) {
  if (!std::isfinite(value)) return "-";
  static const char* prefixes[] = {"", "k", "M", "G", "T", "P", "E"};
  static const char* small[] = {"", "m", "\u00b5", "n"};
  std::ostringstream out;
  if (value != 0.0 && std::abs(value) < 1.0) {
    int p = 0;
    while (std::abs(value) < 1.0 && p < 3) {
      value *= 1000.0;
      ++p;
    }
    out << std::setprecision(value < 10 ? 3 : 4) << value << ' ' << small[p] << unit;
    return out.str();
  }
  int p = 0;
  while (std::abs(value) >= 1000.0 && p < 6) {
    value /= 1000.0;
    ++p;
  }
  out << std::setprecision(value < 10 ? 3 : 4) << value;
  if (p > 0 || unit[0] != '\0') out << ' ' << prefixes[p] << unit;
  return out.str();
}

std::string human_duration(double s) {
  std::ostringstream out;
  if (s < 120) {
    out << static_cast<long>(s + 0.5) << " s";
  } else if (s < 7200) {
    out << static_cast<long>(s / 60 + 0.5) << " min";
  } else {
    out << std::fixed << std::setprecision(1) << s / 3600 << " h";
  }
  return out.str();
}

}  // namespace wavel
