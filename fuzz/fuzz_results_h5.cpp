// results.h5 as show reads it: any file gives a table or a wavel::Error (HDF5 itself parses the
// container; this checks what the tool does with whatever HDF5 hands back).
#include <cstdint>
#include <string>

#include "fuzz_support.hpp"
#include "wavel/common/error.hpp"
#include "wavel/io/results.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  wavel::fuzz::start_runtime();
  const std::string path = wavel::fuzz::scratch_file(data, size, ".h5");
  for (const char* table : {"schedules", "settings"}) {
    try {
      (void)wavel::io::read_table_h5(path, table);
    } catch (const wavel::Error&) {
    }
  }
  return 0;
}
