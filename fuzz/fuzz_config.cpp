// The config YAML reader and validator: any bytes give a Config or a wavel::Error, never a crash.
#include <cstdint>
#include <string>

#include "fuzz_support.hpp"
#include "wavel/common/error.hpp"
#include "wavel/config/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  wavel::fuzz::start_runtime();
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const auto config = wavel::config::parse_config(text, "fuzz/config.yaml", {});
    (void)wavel::config::to_yaml(config);
  } catch (const wavel::Error&) {
  }
  return 0;
}
