// Reference measurement files (validate, calibrate).
#include <cstdint>
#include <string>

#include "fuzz_support.hpp"
#include "wavel/calibrate/reference.hpp"
#include "wavel/common/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  wavel::fuzz::start_runtime();
  try {
    wavel::calibrate::parse_reference(std::string(reinterpret_cast<const char*>(data), size), "fuzz/ref.yaml");
  } catch (const wavel::Error&) {
  }
  return 0;
}
