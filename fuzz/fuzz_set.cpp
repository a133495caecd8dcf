// --set overrides: each input line is one KEY.PATH=VALUE argument on top of a minimal config.
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "fuzz_support.hpp"
#include "wavel/common/error.hpp"
#include "wavel/config/config.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  wavel::fuzz::start_runtime();
  std::istringstream lines(std::string(reinterpret_cast<const char*>(data), size));
  std::vector<std::string> overrides;
  for (std::string line; std::getline(lines, line) && overrides.size() < 16;) overrides.push_back(line);
  try {
    wavel::config::parse_config("workloads:\n  models: [llama3-8b]\n", "fuzz/set.yaml", overrides);
  } catch (const wavel::Error&) {
  }
  return 0;
}
