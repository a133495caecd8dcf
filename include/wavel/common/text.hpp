// Text from files and paths made safe for where it goes: UTF-8 columns and terminals.
#pragma once

#include <string>
#include <string_view>

namespace wavel {

/// `text` with each byte that is not part of a well-formed UTF-8 sequence replaced by U+FFFD, so
/// that it can be stored as UTF-8 (HDF5 string columns, read back by h5py's asstr()).
std::string valid_utf8(std::string_view text);

/// valid_utf8(text) with control characters (C0 but tab, DEL, C1) written as \xNN: a name from a
/// file cannot move the cursor, clear the screen or ring the bell where it is printed.
std::string printable(std::string_view text);

}  // namespace wavel
