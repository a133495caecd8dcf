// Checkpoints: the input is the body after the magic line; the target appends the checksum, so the
// fuzzer explores the decoder rather than FNV-1a. The same bytes also go through the stored-result
// decoder of each task kind, as --resume does with every result a checkpoint holds.
#include <cstdint>
#include <cstring>
#include <string>

#include "fuzz_support.hpp"
#include "wavel/common/error.hpp"
#include "wavel/common/hash.hpp"
#include "wavel/engine/checkpoint.hpp"
#include "wavel/sweep/setting_tasks.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  wavel::fuzz::start_runtime();
  const std::string body(reinterpret_cast<const char*>(data), size);
  std::string text = "WAVEL-DSE CHECKPOINT\n" + body;
  const std::uint64_t sum = wavel::fnv1a64(text);
  text.append(reinterpret_cast<const char*>(&sum), sizeof sum);
  const std::string path =
      wavel::fuzz::scratch_file(reinterpret_cast<const std::uint8_t*>(text.data()), text.size(), ".wckp");
  try {
    // The seeds are written for config hash "fuzz", plan fingerprint 7 and 5 tasks.
    (void)wavel::engine::read_checkpoint(path, "fuzz", {}, 7, 5);
  } catch (const wavel::Error&) {
  }
  for (auto kind : {wavel::driver::TaskResultKind::baselines, wavel::driver::TaskResultKind::piece,
                    wavel::driver::TaskResultKind::finish}) {
    try {
      wavel::driver::check_task_result(kind, body);
    } catch (const wavel::Error&) {
    }
  }
  return 0;
}
