// Reading a whole input file with a size cap, so that a mistaken path (a huge log, /proc/kcore)
// is refused instead of filling memory.
#pragma once

#include <cstddef>
#include <string>

namespace wavel {

/// The bytes of `path`: wavel::InputMissingError (66) if it cannot be opened or read,
/// wavel::InputDataError (65) if it holds more than `max_bytes`. `what` names it in messages.
std::string read_input_file(const std::string& path, std::size_t max_bytes, const std::string& what);

}  // namespace wavel
