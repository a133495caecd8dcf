// results.h5 as show reads it, through the same sandboxed reader: any file gives a table or a
// wavel::Error. libhdf5's own crashes, hangs and runaway allocations on forged files stay in the
// reading child and come back as errors; a crash of this process is a finding.
// The child's coverage does not reach libFuzzer, so this explores the files blindly from the seeds.
#include <sanitizer/common_interface_defs.h>
#include <fcntl.h>
#include <unistd.h>
#include <hdf5.h>

#include <cstdint>
#include <cstdlib>
#include <string>

#include "fuzz_support.hpp"
#include "wavel/common/error.hpp"
#include "wavel/io/sandboxed_read.hpp"

namespace {

/// In the child: a sanitizer report ends it without libFuzzer's crash file (the parent reports it
/// as an error), quietly unless WAVEL_FUZZ_CHILD_STDERR is set (to see what libhdf5 did).
void as_production_child() {
  __sanitizer_set_death_callback(nullptr);
  if (std::getenv("WAVEL_FUZZ_CHILD_STDERR") == nullptr) {
    const int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, STDERR_FILENO);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  wavel::fuzz::start_runtime();
  // The library set up once here rather than in every child (no file is opened in this process).
  static const herr_t hdf5_ready = H5open();
  (void)hdf5_ready;
  const std::string path = wavel::fuzz::scratch_file(data, size, ".h5");
  wavel::io::SandboxLimits limits;
  limits.memory_bytes = std::uint64_t{512} << 20;
  limits.cpu_seconds = 2;
  limits.wall_seconds = 5;
  limits.child_setup = as_production_child;
  try {
    (void)wavel::io::read_tables_h5_sandboxed(path, {"schedules"}, limits);
  } catch (const wavel::Error&) {
  }
  return 0;
}
