// Human-readable numbers for terminal output (tables and the progress line).
#pragma once

#include <string>

namespace wavel::driver {

/// `value` with an SI prefix and `unit`, 3 to 5 significant digits: "24.82 ktok/s", "1.65 ms",
/// "62.82 M" (no unit), "512"; "-" when not finite.
std::string human(double value, const char* unit);

}  // namespace wavel::driver
