// Capped whole-file reads for inputs.
#include "wavel/common/input_file.hpp"

#include <filesystem>
#include <fstream>
#include <vector>

#include "wavel/common/error.hpp"

namespace wavel {

std::string read_input_file(const std::string& path, std::size_t max_bytes, const std::string& what) {
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) {
    throw InputMissingError("cannot read " + what + " '" + path + "': it is a directory, not a file");
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) throw InputMissingError("cannot read " + what + " '" + path + "'");
  std::string text;
  std::vector<char> chunk(1 << 16);
  while (in) {
    in.read(chunk.data(), static_cast<std::streamsize>(chunk.size()));
    text.append(chunk.data(), static_cast<std::size_t>(in.gcount()));
    if (text.size() > max_bytes) {
      throw InputDataError(what + " '" + path + "' is larger than " + std::to_string(max_bytes >> 20) +
                           " MiB, the most this tool reads");
    }
  }
  if (in.bad()) throw InputMissingError("error while reading " + what + " '" + path + "'");
  return text;
}

}  // namespace wavel
