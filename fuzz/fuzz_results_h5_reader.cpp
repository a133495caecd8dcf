// The results.h5 reader in this process, with coverage: what the sandboxed child of `show` runs
// (read_table_h5, then the answer's encoding and its checked decoding). libhdf5 1.10 itself
// crashes on some forged files; scripts/fuzz.sh runs this target in fork mode, sorts each crash by
// its top frame (inside libhdf5 or not) and replays every one through the sandboxed reader, which
// must turn it into an error. A crash whose top frame is outside libhdf5 is a finding.
#include <cstdint>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "wavel/common/error.hpp"
#include "wavel/io/results.hpp"
#include "wavel/io/sandboxed_read.hpp"

// No MPI or Kokkos: the reader needs neither, and fork mode starts a new job after every libhdf5
// crash, where MPI's 0.5 s start had become most of the run's time.
extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = wavel::fuzz::scratch_file(data, size, ".h5");
  try {
    const std::vector<wavel::io::Table> tables{wavel::io::read_table_h5(path, "schedules")};
    (void)wavel::io::decode_tables(wavel::io::encode_tables(tables), path);
  } catch (const wavel::Error&) {
  }
  return 0;
}
