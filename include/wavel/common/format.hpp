// Human-readable numbers for terminal output (tables and the progress line).
#pragma once

#include <string>

namespace wavel {

/// `value` with an SI prefix (µ for micro) and `unit`, 3 or 4 significant digits: "24.82 ktok/s", "1.65 ms",
/// "62.82 M" (no unit), "512"; "-" when not finite.
std::string human(double value, const char* unit);

/// A duration for the progress line: "42 s", "17 min", "3.5 h".
std::string human_duration(double s);

}  // namespace wavel
