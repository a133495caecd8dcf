// The lock file of an output directory: a busy directory is reported with exit 69 and the holder's
// note, whatever bytes the note holds (the fuzzed input), and only as printable ASCII.
#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>

#include "fuzz_support.hpp"
#include "wavel/common/error.hpp"
#include "wavel/engine/runtime.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  wavel::fuzz::start_runtime();
  static const std::string dir = [] {
    const std::string d = std::filesystem::temp_directory_path().string() + "/wavel-fuzz-lock-" + std::to_string(getpid());
    std::filesystem::create_directories(d);
    return d;
  }();
  const std::string path = dir + "/.wavel-dse.lock";
  const int holder = ::open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0666);
  if (holder < 0) std::abort();
  if (size > 0 && ::write(holder, data, size) != static_cast<ssize_t>(size)) std::abort();
  if (::flock(holder, LOCK_EX | LOCK_NB) != 0) std::abort();
  try {
    (void)wavel::engine::make_output_dir(dir, MPI_COMM_SELF);
    std::abort();  // the directory is held: taking it is a bug
  } catch (const wavel::Error& e) {
    if (e.code() != wavel::ExitCode::busy) std::abort();
    for (const char* c = e.what(); *c != '\0'; ++c) {
      if (static_cast<unsigned char>(*c) < 0x20 || static_cast<unsigned char>(*c) > 0x7e) std::abort();
    }
  }
  ::close(holder);
  return 0;
}
